// Internal: the nearest-even narrowing kernel, the common case, in one branch-free path (the
// exhaustive test checks it against convert_one() on all 2^32 fp32 inputs). Included only by
// the ISA translation units, inside an anonymous namespace (see narrow_kernel.hpp).
//
// With e = the exponent field of |x| clamped to [emin, cap], the fp32 addition |x| + M,
// M = 2^(e + 23 - m), rounds |x| to a multiple of 2^(e - m) (the ulp of M's binade),
// nearest-even, in hardware: this is the target's quantum q = max(E, emin) - m. So
// n = bits(|x| + M) - bits(M) is the rounded count of quanta, and code = ((e - emin) << m) + n
// is the generic formula of convert.cpp. The clamp at cap (biased 200, far above any target's
// range) keeps M finite; values that large, and +/-Inf, still give a code above max_code. The
// bulk driver pins MXCSR to the IEEE default, so neither the caller's rounding mode nor
// FTZ/DAZ can enter.
#pragma once

#include <cstddef>
#include <cstdint>

#include "isa/narrow.hpp"
#include "isa/narrow_common.hpp"
#include "isa/narrow_flavor.hpp"

// That code before overflow, NaN and sign are applied (never negative).
template <class Ops>
typename Ops::V rne_magnitude(typename Ops::V u, const NarrowConsts<Ops>& k) {
  using V = typename Ops::V;
  const V a = Ops::band(u, k.c7fffffff);
  const V e = Ops::min(Ops::max(Ops::band(u, k.c7f800000), k.min_normal), k.cap);
  const V m_bits = Ops::add(e, k.quantum_shift);
  const V n = Ops::sub(Ops::bits(Ops::add_f(Ops::as_float(a), Ops::as_float(m_bits))), m_bits);
  return Ops::add(n, Ops::srl(Ops::sub(e, k.min_normal), 23 - k.man_bits));
}

// rne_magnitude under saturation: |x| is first clamped to the largest finite value (as
// bits: NaN patterns too, they are replaced afterwards), so that every code stays in
// range without a clamp of the result or of e: a value above the maximum gives max_code
// either way, and max_bits is exact. Two operations fewer than rne_magnitude + min.
template <class Ops>
typename Ops::V rne_magnitude_saturated(typename Ops::V u, const NarrowConsts<Ops>& k) {
  using V = typename Ops::V;
  const V a = Ops::min(Ops::band(u, k.c7fffffff), k.max_bits);
  const V e = Ops::max(Ops::band(a, k.c7f800000), k.min_normal);
  const V m_bits = Ops::add(e, k.quantum_shift);
  const V n = Ops::sub(Ops::bits(Ops::add_f(Ops::as_float(a), Ops::as_float(m_bits))), m_bits);
  return Ops::add(n, Ops::srl(Ops::sub(e, k.min_normal), 23 - k.man_bits));
}

// rne_magnitude_saturated without its last four operations: the sum S = |x| + M holds the
// rounded count n in its low 16 bits (n <= 2^(m+1)) and the biased exponent of M, B =
// E + 150 - m, in bits 23..30, so the high 16 bits of S are B << 7. One vpmaddwd with weights
// (2^(7-m), 1) gives t = 2^(7-m) n + 2^7 B = 2^(7-m) (n + (B << m)) = (code << (7-m)) + c,
// c = 2^7 (emin + 150 - m) (narrow_shifted_bias): code = (t - c) >> (7 - m), which the store
// takes on 16-bit lanes after the first pack (t <= 2^8 + 2^7 * 163 < 2^15 for every target).
// A NaN lane gets the NaN code in the same form.
template <class Ops>
typename Ops::V rne_shifted(typename Ops::V u, const NarrowConsts<Ops>& k, typename Ops::V& nan_seen, bool has_nan) {
  using V = typename Ops::V;
  const V a = Ops::min(Ops::band(u, k.c7fffffff), k.max_bits);
  const V e = Ops::max(Ops::band(a, k.c7f800000), k.min_normal);
  const V t = Ops::madd16(Ops::bits(Ops::add_f(Ops::as_float(a), Ops::as_float(Ops::add(e, k.quantum_shift)))), k.madd_weights);
  const auto is_nan = Ops::gt(Ops::band(u, k.c7fffffff), k.c7f800000);  // Ops::Mask where it has one
  if (!has_nan) nan_seen = Ops::bor(nan_seen, is_nan);
  return Ops::select(is_nan, k.nan_shifted, t);
}

// Nearest-even magnitude codes with the target's choices fixed at compile time (the sign is
// applied by the store).
template <class Fl, class Ops>
[[gnu::always_inline]] inline typename Ops::V rne_mag(typename Ops::V u, const NarrowConsts<Ops>& k,
                                                      typename Ops::V& nan_seen) {
  using V = typename Ops::V;
  V mag;
  if constexpr (Fl::kInfResult) {
    mag = rne_magnitude(u, k);
    mag = Ops::select(Ops::gt(mag, k.max_code), k.inf_or_nan, mag);
  } else {
    mag = rne_magnitude_saturated(u, k);
  }
  const auto is_nan = Ops::gt(Ops::band(u, k.c7fffffff), k.c7f800000);  // Ops::Mask where it has one
  if constexpr (!Fl::kHasNan) nan_seen = Ops::bor(nan_seen, is_nan);
  return Ops::select(is_nan, k.nan_code, mag);
}

// The nearest-even driver.
template <class Ops>
struct NarrowNearest {
  using V = typename Ops::V;

  // Saturating 8-bit targets keep their codes in rne_shifted's form up to the store.
  template <class Fl>
  static constexpr bool kShifted = Ops::kShiftedCodes && Fl::kSign7 && !Fl::kInfResult;

  // One loop per flavor; an 8-bit target takes its sign bits 32 at a time in the store
  // (Ops::store_bytes4_signed), others per vector. bf16 may load interleaved.
  template <fp8q::detail::Source S, NarrowScale kScale>
  static bool run(const void* in, std::uint8_t* out, std::size_t n, std::uint64_t index0,
                  const fp8q::detail::NarrowParams& p) {
    constexpr bool kInter = kNarrowInterleaved<Ops, S, fp8q::Rounding::kNearestEven>;
    const NarrowConsts<Ops> k(p, false);
    constexpr std::size_t L = Ops::kLanes;
    constexpr std::size_t kBytes = S == fp8q::detail::Source::kF32 ? 4 : 2;
    const auto* src = static_cast<const unsigned char*>(in);
    std::size_t i = 0;
    const bool nan_unrepresentable = narrow_flavor(p, [&](auto flavor) {
      using Fl = decltype(flavor);
      V nan_seen = k.zero;
      for (; i + 4 * L <= n; i += 4 * L) {
        const unsigned char* block = src + i * kBytes;
        for (std::size_t line = 0; line < 4 * L * kBytes; line += 64) Ops::prefetch(block + fp8q::detail::kPrefetchBytes + line);
        V u[4];
        if constexpr (kInter) Ops::load4_bf16_interleaved(block, u);
        for (std::size_t j = 0; j < 4; ++j) {
          if constexpr (!kInter) u[j] = Ops::bits(Ops::template load<S>(block + j * L * kBytes));
          if constexpr (kScale != NarrowScale::kNone) u[j] = Ops::bits(narrow_scaled<kScale>(Ops::as_float(u[j]), k));
        }
        convert4<Fl, kInter>(u, out + i, k, nan_seen);
      }
      return Ops::any(nan_seen);
    });
    return narrow_tail<S>(src, out, i, n, index0, p) || nan_unrepresentable;  // the tail: scalar reference
  }

  // Four vectors of fp32 bit patterns (already scaled) -> their 4L codes at out, in the
  // flavor's form; the MX driver calls it too.
  template <class Fl, bool kInter>
  [[gnu::always_inline]] static void convert4(const V (&u)[4], std::uint8_t* out, const NarrowConsts<Ops>& k,
                                              V& nan_seen) {
    V c[4];
    for (std::size_t j = 0; j < 4; ++j) {
      if constexpr (kShifted<Fl>) {
        c[j] = rne_shifted(u[j], k, nan_seen, Fl::kHasNan);
      } else {
        c[j] = rne_mag<Fl>(u[j], k, nan_seen);
      }
    }
    if constexpr (kShifted<Fl>) {
      Ops::template store_bytes4_signed_shifted<Fl::kNegativeZero, kInter>(out, c, u, k.c16, k.code_shift);
    } else if constexpr (Fl::kSign7) {
      Ops::template store_bytes4_signed<Fl::kNegativeZero, kInter>(out, c, u);
    } else {
      for (std::size_t j = 0; j < 4; ++j) {
        V sign = Ops::srl(Ops::band(u[j], k.c80000000), 31 - k.sign_shift);
        if constexpr (!Fl::kNegativeZero) sign = Ops::andnot(Ops::eq(c[j], k.zero), sign);
        c[j] = Ops::bor(c[j], sign);
      }
      if constexpr (kInter) {
        Ops::store_bytes4_interleaved(out, c[0], c[1], c[2], c[3]);
      } else {
        Ops::store_bytes4(out, c[0], c[1], c[2], c[3]);
      }
    }
  }
};
