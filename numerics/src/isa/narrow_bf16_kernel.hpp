// Internal: bf16 -> a narrow format under nearest-even, in 16-bit integer lanes (twice the
// lanes of the fp32 kernel, no widening), for inputs multiplied by an exact power of two
// 2^d first: d = 0 for a plain conversion, a power-of-two scale, or an MX block's 2^(127 - code).
// Included only by ISA translation units, inside an anonymous namespace (see narrow_kernel.hpp).
//
// The formula is the generic one of convert.cpp, specialised to a 7-bit source fraction. With
// a = |x| as bits, E = a >> 7 (biased 127), f = a & 0x7F, t = 128 + f (the low byte of x | 0x80), m the target's fraction
// bits and Eb = 127 + emin - d (the biased bf16 exponent whose values, times 2^d, are the
// target's smallest normal binade):
//   code = (max(E - Eb, 0) << m) + rne(t * 2^L / 256),   L = m + 1 - max(Eb - E, 0)
// rne(t * 2^L / 256) is t rounded to the target's quantum in its binade: m bits below the
// leading one for a normal, fewer for a subnormal (L < m + 1), 0 when L < 0 (the value is
// below half the smallest subnormal). The carry of a rounding that reaches the next binade
// lands in the exponent field by itself, as in the fp32 kernel. 2^L comes from a 16-entry
// byte table indexed by idx = min(max(E - (Eb - m - 2), 0), m + 2): table[0] = 0 (L < 0),
// table[j] = 2^(j - 1). t * 2^L <= 255 * 32 fits 16 bits for every m <= 4.
//
// Where this equals the reference (the exhaustive bulk and MX tests check every bf16 pattern):
//  - fp32(x * 2^d) is exact unless it falls below 2^-126 (then it is far below half the
//    target's smallest subnormal, so code 0 either way, sign kept) or overflows to Inf
//    (then the integer code is above max_code too: the same overflow rule applies);
//  - bf16 zeros and subnormals (E = 0) have no hidden bit, but t assumes one. With
//    d <= kMaxOffset they land at idx 0 and max(E - Eb, 0) = 0, so they give 0, which is
//    right: a bf16 subnormal times 2^d is then below half the smallest subnormal. Larger d
//    (an MX block whose amax is below ~2^-100) is left to the fp32 kernel;
//  - Inf with d < 0 could fall back into range; only MX uses d < 0, and a block holding Inf
//    has scale code 0xFF and is overwritten with NaN.
#pragma once

#include <cstddef>
#include <cstdint>

#include "isa/narrow.hpp"
#include "isa/narrow_flavor.hpp"

// Ops16 gives kLanes 16-bit lanes (16 or 32) and a mask type M, which its comparisons return
// (a vector of all-ones lanes on AVX2, a mask register on AVX-512).
template <class Ops16>
struct NarrowBf16Kernel {
  using V = typename Ops16::V;
  using M = typename Ops16::M;
  // One group: two vectors, 32 elements on 16 lanes (one MX block) or 64 on 32.
  static constexpr std::size_t kGroup = 2 * Ops16::kLanes;

  struct Consts {
    V c7fff, c80, c7f80, c127, one, idx_max, table, max_code, nan_code, inf_or_nan, sign_bit;
    typename Ops16::Count r;  // 7 - m: the source fraction bits below the target's quantum
    std::int16_t e_min;       // Eb for d = 0: 127 + emin
    int man_bits, sign_shift;
    explicit Consts(const fp8q::detail::NarrowParams& p)
        : c7fff(Ops16::set1(0x7FFF)), c80(Ops16::set1(0x80)), c7f80(Ops16::set1(0x7F80)),
          c127(Ops16::set1(127)), one(Ops16::set1(1)), idx_max(Ops16::set1(static_cast<std::int16_t>(p.man_bits + 2))),
          max_code(Ops16::set1(static_cast<std::int16_t>(p.max_code))),
          nan_code(Ops16::set1(static_cast<std::int16_t>(p.nan_code))),
          inf_or_nan(Ops16::set1(static_cast<std::int16_t>(p.inf_or_nan))),
          sign_bit(Ops16::set1_8(static_cast<std::uint8_t>(1u << p.sign_shift))), r(Ops16::count(7 - p.man_bits)),
          e_min(static_cast<std::int16_t>(127 + p.emin)), man_bits(p.man_bits), sign_shift(p.sign_shift) {
      std::uint8_t t[16] = {};  // t[0] = 0, t[j] = 2^(j - 1) for j = 1 .. m + 2
      for (int j = 1; j <= p.man_bits + 2; ++j) t[j] = static_cast<std::uint8_t>(1u << (j - 1));
      table = Ops16::set_bytes(t);
    }
  };

  // Targets this kernel takes: t * 2^L fits 16 bits for m <= 4 (every named format; a custom
  // descriptor with more fraction bits goes to the fp32 kernel).
  static bool takes(const fp8q::detail::NarrowParams& p) { return p.man_bits <= 4; }

  // The largest d this kernel takes: E = 0 lanes then stay at idx 0 (see above).
  static int max_offset(const fp8q::detail::NarrowParams& p) { return 127 + p.emin - p.man_bits - 3; }

  // A code above max_code is an overflow: Inf/NaN or max_code by the flavor.
  template <class Fl>
  [[gnu::always_inline]] static V saturate(V code, const Consts& k) {
    if constexpr (Fl::kInfResult) {
      return Ops16::select(Ops16::gt(code, k.max_code), k.inf_or_nan, code);
    } else {
      return Ops16::min_u(code, k.max_code);
    }
  }

  // Magnitude codes (before the sign) of 16 bf16 patterns times 2^d; eb = Eb for this d,
  // eb_idx = Eb - m - 2.
  // Forced inline: GCC otherwise calls it, reloading every constant per vector.
  template <class Fl>
  [[gnu::always_inline]] static V magnitude(V x, V eb, V eb_idx, const Consts& k, M& nan_seen) {
    const V a = Ops16::band(x, k.c7fff);
    const V e = Ops16::template srl<7>(a);
    const V idx = Ops16::min_u(Ops16::subs_u(e, eb_idx), k.idx_max);
    V w = Ops16::mul_low_byte(Ops16::bor(x, k.c80), Ops16::lookup(k.table, idx));  // t * 2^L
    w = Ops16::add(Ops16::add(w, k.c127), Ops16::band(Ops16::template srl<8>(w), k.one));  // + 127 + odd
    const V code = saturate<Fl>(Ops16::add(Ops16::sll(Ops16::subs_u(e, eb), k.man_bits), Ops16::template srl<8>(w)), k);
    const M is_nan = Ops16::gt(a, k.c7f80);
    if constexpr (!Fl::kHasNan) nan_seen = Ops16::bor(nan_seen, is_nan);
    return Ops16::select(is_nan, k.nan_code, code);
  }

  // One group (kGroup elements) from src to out, times 2^d with eb = e_min - d.
  template <class Fl>
  [[gnu::always_inline]] static void group(const unsigned char* src, std::uint8_t* out, V eb, V eb_idx, const Consts& k, M& nan_seen) {
    const V x0 = Ops16::load(src), x1 = Ops16::load(src + 2 * Ops16::kLanes);
    const V c0 = magnitude<Fl>(x0, eb, eb_idx, k, nan_seen), c1 = magnitude<Fl>(x1, eb, eb_idx, k, nan_seen);
    Ops16::template store_signed<Fl::kSign7, Fl::kNegativeZero>(out, c0, c1, x0, x1, k.sign_shift, k.sign_bit);
  }

  // The normal form, for a group of lanes none of which is a subnormal of the target: every
  // lane has E >= Eb or is zero. With r = 7 - m, bit r of a is the last fraction bit the target
  // keeps, and nearest-even is the classic integer rounding
  //   code = (a + 2^(r-1) - 1 + bit_r(a)) >> r  -  ((Eb - 1) << m)
  //        = ((E - Eb + 1) << m) + (f >> r) + (1 if the dropped bits are above half, or
  //          exactly half with an odd kept bit)
  // which is the general formula at L = m + 1 (2^m, the hidden bit, is even, so it does not
  // change the tie), the carry of a rounding into the next binade again landing in the
  // exponent. Both constants fold into one saturating subtraction of
  //   kb = ((Eb - 1) << 7) - (2^(r-1) - 1)   (normal_bias)
  // which leaves 0 for a zero lane (and for any lane below Eb - 1, which the caller excludes).
  // Seven operations a vector instead of sixteen; no NaN lane may reach it (MX blocks holding
  // NaN or Inf are overwritten).
  template <class Fl>
  [[gnu::always_inline]] static V magnitude_normal(V x, V kb, const Consts& k) {
    const V a = Ops16::band(x, k.c7fff);
    const V odd = Ops16::band(Ops16::srl(a, k.r), k.one);
    return saturate<Fl>(Ops16::srl(Ops16::subs_u(Ops16::add(a, odd), kb), k.r), k);
  }
  static std::int16_t normal_bias_offset(const fp8q::detail::NarrowParams& p) {  // kb = (Eb << 7) - this
    return static_cast<std::int16_t>(128 + (1 << (6 - p.man_bits)) - 1);
  }

  // One group under the normal form (kb = normal_bias for the group's Eb).
  template <class Fl>
  [[gnu::always_inline]] static void group_normal(const unsigned char* src, std::uint8_t* out, V kb, const Consts& k) {
    const V x0 = Ops16::load(src), x1 = Ops16::load(src + 2 * Ops16::kLanes);
    const V c0 = magnitude_normal<Fl>(x0, kb, k), c1 = magnitude_normal<Fl>(x1, kb, k);
    Ops16::template store_signed<Fl::kSign7, Fl::kNegativeZero>(out, c0, c1, x0, x1, k.sign_shift, k.sign_bit);
  }

  static V eb_vec(const Consts& k, int d) { return Ops16::set1(static_cast<std::int16_t>(k.e_min - d)); }
  static V eb_idx_vec(const Consts& k, V eb) { return Ops16::sub(eb, k.idx_max); }

  // Elements [0, n) (n a multiple of kGroup) times 2^d (0 <= d <= max_offset); returns whether a
  // NaN met a target without NaN. Each chunk of kChunk elements first runs the normal form
  // (10 operations a vector with its range check, against 18 for the general one), keeping the
  // smallest nonzero |x| - 1 and the largest |x| of its lanes; a chunk holding a lane below the
  // target's normals (other than 0) or a NaN is run again under the general form, and so are
  // the kRetry chunks after it, where such lanes are likely to be common. Both forms are exact
  // on the lanes they take, so the bits never depend on which ran.
  static constexpr std::size_t kChunk = 256;
  static_assert(kChunk % kGroup == 0);
  static constexpr int kRetry = 15;
  static bool run(const void* in, std::uint8_t* out, std::size_t n, int d, const fp8q::detail::NarrowParams& p) {
    const Consts k(p);
    const V eb = eb_vec(k, d), eb_idx = eb_idx_vec(k, eb);
    const int e_normal = k.e_min - d;  // >= m + 3 (max_offset)
    const V kb = Ops16::set1(static_cast<std::int16_t>((e_normal << 7) - normal_bias_offset(p)));
    const V lowest_normal = Ops16::set1(static_cast<std::int16_t>((e_normal << 7) - 1));  // as |x| - 1
    const auto* src = static_cast<const unsigned char*>(in);
    return narrow_flavor(p, [&](auto flavor) {
      using Fl = decltype(flavor);
      M nan_seen = Ops16::none();
      int general = 0;  // chunks left to run under the general form directly
      for (std::size_t c = 0; c < n; c += kChunk) {
        const std::size_t end = c + kChunk < n ? c + kChunk : n;
        if (general == 0) {
          V lowest = Ops16::set1(-1), highest = Ops16::set1(0);
          for (std::size_t i = c; i < end; i += kGroup) {
            prefetch_group(src + 2 * i);
            group_normal_ranged<Fl>(src + 2 * i, out + i, kb, k, lowest, highest);
          }
          // below the normals: lowest <u |x|min - 1; NaN: highest >u the Inf pattern
          if (!Ops16::any(Ops16::bor(Ops16::subs_u(lowest_normal, lowest), Ops16::subs_u(highest, k.c7f80)))) continue;
          general = kRetry + 1;
        }
        --general;
        for (std::size_t i = c; i < end; i += kGroup) {
          prefetch_group(src + 2 * i);
          group<Fl>(src + 2 * i, out + i, eb, eb_idx, k, nan_seen);
        }
      }
      return Ops16::any(nan_seen);
    });
  }

 private:
  // The group kPrefetchBytes ahead: one 64-byte line per 32 elements.
  static void prefetch_group(const unsigned char* p) {
    for (std::size_t b = 0; b < 2 * kGroup; b += 64) Ops16::prefetch(p + b + fp8q::detail::kPrefetchBytes);
  }

  // group_normal, keeping the range of its lanes: lowest = min(|x| - 1) (a zero wraps to
  // 0xFFFF), highest = max(|x|).
  template <class Fl>
  [[gnu::always_inline]] static void group_normal_ranged(const unsigned char* src, std::uint8_t* out, V kb,
                                                           const Consts& k, V& lowest, V& highest) {
    const V x0 = Ops16::load(src), x1 = Ops16::load(src + 2 * Ops16::kLanes);
    const V a0 = Ops16::band(x0, k.c7fff), a1 = Ops16::band(x1, k.c7fff);
    lowest = Ops16::min_u(lowest, Ops16::min_u(Ops16::sub(a0, k.one), Ops16::sub(a1, k.one)));
    highest = Ops16::max_u(highest, Ops16::max_u(a0, a1));
    const V c0 = magnitude_normal<Fl>(x0, kb, k), c1 = magnitude_normal<Fl>(x1, kb, k);
    Ops16::template store_signed<Fl::kSign7, Fl::kNegativeZero>(out, c0, c1, x0, x1, k.sign_shift, k.sign_bit);
  }
};
