// Internal: the SIMD narrowing kernel, written once over an `Ops` type (one per ISA, in
// ops_avx2.hpp / ops_avx512.hpp). Included only by the ISA translation units, inside an
// anonymous namespace there, so that no inline function compiled with one ISA's flags can be
// picked by the linker for another.
//
// It computes exactly round_into() of convert.cpp, on the fp32 bit pattern u of
// fp32(x * scale). Nearest-even has its own branch-free form (narrow_rne, one fp32
// addition does the rounding); every other mode uses 32-bit integer lanes:
//   a = |u|, e32 = a >> 23, mant = fraction | hidden bit (hidden bit only if e32 > 0)
//   Eeff = max(e32, 1) - 127                 exponent of mant's bit 23 (fp32 subnormals: -126)
//   sh   = (23 - m) + max(emin - Eeff, 0)    bits of mant below the target's quantum
//   n0   = mant >> sh, rem = mant mod 2^sh   (sh clamped to 31: mant < 2^24, so n0 = 0 and
//                                            rem < half either way)
//   code = (max(Eeff - emin, 0) << m) + n0 + up
// `up` is the rounding decision of each mode; a code above max_code is overflow. Shift counts
// above 31 give 0 on x86 (vpsllvd / vpsrlvd), which the stochastic fraction relies on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "fp8q/numerics/convert.hpp"
#include "fp8q/numerics/philox.hpp"
#include "isa/narrow.hpp"
#include "isa/narrow_bf16_kernel.hpp"
#include "isa/narrow_flavor.hpp"

// Ops16: the ISA's 16-bit-lane operations for the bf16 nearest-even kernel
// (narrow_bf16_kernel.hpp), or void where the ISA has none.
template <class Ops, class Ops16 = void>
struct NarrowKernel {
  using V = typename Ops::V;

  // bf16 under nearest-even with a power-of-two factor takes the 16-bit kernel.
  template <fp8q::detail::Source S, fp8q::Rounding R>
  static constexpr bool kBf16Fast =
      !std::is_void_v<Ops16> && S == fp8q::detail::Source::kBF16 && R == fp8q::Rounding::kNearestEven;
  using Bf16 = NarrowBf16Kernel<std::conditional_t<std::is_void_v<Ops16>, struct NoOps16, Ops16>>;
  // MX as well where the fp32 kernel's group of four vectors is one 32-element block.
  template <fp8q::detail::Source S, fp8q::Rounding R>
  static constexpr bool kBf16MxFast = kBf16Fast<S, R> && Ops::kInterleavedBf16 && 4 * Ops::kLanes == 32;

  // d where fp32(x * scale) (or fp32(x / scale)) is fp32(x * 2^d) with 0 <= d, else -1.
  static int pow2_offset(const fp8q::detail::NarrowParams& p) {
    std::uint32_t b;
    std::memcpy(&b, &p.scale, 4);
    const int e = static_cast<int>(b >> 23);  // the sign bit makes e > 255: not taken
    if ((b & 0x7FFFFFu) != 0 || e == 0 || e >= 255) return -1;
    const int d = p.divide ? 127 - e : e - 127;
    return d >= 0 ? d : -1;
  }

  // Elements [i, n) by the scalar reference; returns whether a NaN met a target without NaN.
  template <fp8q::detail::Source S>
  static bool tail(const unsigned char* src, std::uint8_t* out, std::size_t i, std::size_t n, std::uint64_t index0,
                   const fp8q::detail::NarrowParams& p) {
    constexpr std::size_t kBytes = S == fp8q::detail::Source::kF32 ? 4 : 2;
    bool nan_unrepresentable = false;
    for (; i < n; ++i) {
      std::uint64_t code = 0;
      std::memcpy(&code, src + i * kBytes, kBytes);
      const fp8q::Converted r = fp8q::convert_one(code, *p.from, *p.to, *p.options, index0 + i);
      out[i] = static_cast<std::uint8_t>(r.code);
      nan_unrepresentable = nan_unrepresentable || r.nan_unrepresentable;
    }
    return nan_unrepresentable;
  }

  struct Consts {
    V c7fffffff, c7fffff, c800000, c7f800000, c80000000, one, zero, m1_127, emin, sh_base,
        max_code, nan_code, inf_or_nan, c31, c32, min_normal, cap, quantum_shift, max_bits,
        madd_weights, c16, nan_shifted;
    int code_shift;  // 7 - m: the shift of store_bytes4_signed_shifted
    typename Ops::F scale;
    int man_bits, sign_shift;
    V key0[10], key1[10];  // Philox key schedule for this seed: (k0 + r W0, k1 + r W1)
    // philox: also the key schedule, which only stochastic rounding reads (the block-scaled
    // drivers call a kernel per block, so the other modes skip its 20 broadcasts)
    explicit Consts(const fp8q::detail::NarrowParams& p, bool philox = true)
        : c7fffffff(Ops::set1(0x7FFFFFFF)), c7fffff(Ops::set1(0x7FFFFF)), c800000(Ops::set1(0x800000)),
          c7f800000(Ops::set1(0x7F800000)), c80000000(Ops::set1(static_cast<std::int32_t>(0x80000000u))),
          one(Ops::set1(1)), zero(Ops::set1(0)), m1_127(Ops::set1(127)), emin(Ops::set1(p.emin)),
          sh_base(Ops::set1(23 - p.man_bits)), max_code(Ops::set1(p.max_code)),
          nan_code(Ops::set1(p.has_nan ? p.nan_code : 0)), inf_or_nan(Ops::set1(p.inf_or_nan)),
          c31(Ops::set1(31)), c32(Ops::set1(32)),
          min_normal(Ops::set1((127 + p.emin) << 23)), cap(Ops::set1(200 << 23)),
          quantum_shift(Ops::set1((23 - p.man_bits) << 23)),
          max_bits(Ops::set1(p.max_bits)),
          madd_weights(Ops::set1((1 << 16) | (1 << (7 - p.man_bits)))),
          c16(Ops::set1(static_cast<std::int32_t>(0x10001u * static_cast<std::uint32_t>(shifted_bias(p))))),
          nan_shifted(Ops::set1((p.nan_code << (7 - p.man_bits)) + shifted_bias(p))),
          code_shift(7 - p.man_bits),
          scale(Ops::set1f(p.scale)), man_bits(p.man_bits),
          sign_shift(p.sign_shift) {
      if (!philox) return;
      auto k0 = static_cast<std::uint32_t>(p.options->seed), k1 = static_cast<std::uint32_t>(p.options->seed >> 32);
      for (int r = 0; r < 10; ++r, k0 += fp8q::kPhiloxW0, k1 += fp8q::kPhiloxW1) {
        key0[r] = Ops::set1(static_cast<std::int32_t>(k0));
        key1[r] = Ops::set1(static_cast<std::int32_t>(k1));
      }
    }
  };

  // The constant of rne_shifted: 2^7 * (biased exponent of M for E = emin).
  static std::int32_t shifted_bias(const fp8q::detail::NarrowParams& p) { return 128 * (p.emin + 23 - p.man_bits + 127); }

  // First word of Philox4x32-10 for counters n .. n + lanes - 1 (see numerics/philox.hpp).
  static V philox_word0(std::uint64_t n, const Consts& k) {
    const V lo_base = Ops::set1(static_cast<std::int32_t>(static_cast<std::uint32_t>(n)));
    V c0 = Ops::add(lo_base, Ops::iota());
    // carry into the high word where the low word wrapped: c0 <u lo_base
    const V wrapped = Ops::gt(Ops::bxor(lo_base, k.c80000000), Ops::bxor(c0, k.c80000000));
    V c1 = Ops::sub(Ops::set1(static_cast<std::int32_t>(n >> 32)), wrapped);  // mask is -1
    V c2 = k.zero, c3 = k.zero;
    const V m0 = Ops::set1(static_cast<std::int32_t>(fp8q::kPhiloxM0));
    const V m1 = Ops::set1(static_cast<std::int32_t>(fp8q::kPhiloxM1));
    for (int round = 0; round < 10; ++round) {
      V hi0, lo0, hi1, lo1;
      Ops::mulhilo(m0, c0, hi0, lo0);
      Ops::mulhilo(m1, c2, hi1, lo1);
      c0 = Ops::bxor(Ops::bxor(hi1, c1), k.key0[round]);
      c1 = lo1;
      c2 = Ops::bxor(Ops::bxor(hi0, c3), k.key1[round]);
      c3 = lo0;
    }
    return c0;
  }

  // How fp32(x * scale) or fp32(x / scale) is formed, chosen once per call.
  enum class Scale { kNone, kNumber, kNaN, kDivide };

  // fp32(x * scale) with the NaN rule of convert.cpp: a NaN x keeps its own sign, even when
  // the scale is NaN too. x86 returns the first operand's NaN and the compiler may swap the
  // operands of a product, so with a NaN scale the rule is enforced; with any other scale
  // x is the only possible NaN operand (0 * Inf gives the default NaN either way).
  // Division keeps its operand order, and divps returns the dividend's NaN first, as the
  // reference does, so it needs no select.
  template <Scale kScale>
  static typename Ops::F scaled(typename Ops::F x, typename Ops::F scale) {
    if constexpr (kScale == Scale::kDivide) return Ops::div(x, scale);
    if constexpr (kScale == Scale::kNaN) return Ops::select_f(Ops::is_nan(x), x, Ops::mul(x, scale));
    return Ops::mul(x, scale);
  }

  // Nearest-even, the common case, in one branch-free path (the exhaustive test checks it
  // against convert_one() on all 2^32 fp32 inputs). With e = the exponent field of |x| clamped to
  // [emin, cap], the fp32 addition |x| + M, M = 2^(e + 23 - m), rounds |x| to a multiple of
  // 2^(e - m) (the ulp of M's binade), nearest-even, in hardware: this is the target's
  // quantum q = max(E, emin) - m. So n = bits(|x| + M) - bits(M) is the rounded count of
  // quanta, and code = ((e - emin) << m) + n is the generic formula of convert.cpp. The clamp
  // at cap (biased 200, far above any target's range) keeps M finite; values that large,
  // and +/-Inf, still give a code above max_code. The bulk driver pins MXCSR to the IEEE
  // default, so neither the caller's rounding mode nor FTZ/DAZ can enter.
  // rne_magnitude: that code before overflow, NaN and sign are applied (never negative).
  static V rne_magnitude(V u, const Consts& k) {
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
  static V rne_magnitude_saturated(V u, const Consts& k) {
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
  // c = 2^7 (emin + 150 - m) (shifted_bias): code = (t - c) >> (7 - m), which the store takes
  // on 16-bit lanes after the first pack (t <= 2^8 + 2^7 * 163 < 2^15 for every target).
  // A NaN lane gets the NaN code in the same form.
  static V rne_shifted(V u, const Consts& k, V& nan_seen, bool has_nan) {
    const V a = Ops::min(Ops::band(u, k.c7fffffff), k.max_bits);
    const V e = Ops::max(Ops::band(a, k.c7f800000), k.min_normal);
    const V t = Ops::madd16(Ops::bits(Ops::add_f(Ops::as_float(a), Ops::as_float(Ops::add(e, k.quantum_shift)))), k.madd_weights);
    const V is_nan = Ops::gt(Ops::band(u, k.c7fffffff), k.c7f800000);
    if (!has_nan) nan_seen = Ops::bor(nan_seen, is_nan);
    return Ops::select(is_nan, k.nan_shifted, t);
  }

  static V narrow_rne(V u, const Consts& k, const fp8q::detail::NarrowParams& p, V& nan_seen) {
    V mag = rne_magnitude(u, k);
    mag = p.inf_result ? Ops::select(Ops::gt(mag, k.max_code), k.inf_or_nan, mag) : Ops::min(mag, k.max_code);
    const V is_nan = Ops::gt(Ops::band(u, k.c7fffffff), k.c7f800000);
    mag = Ops::select(is_nan, k.nan_code, mag);
    if (!p.has_nan) nan_seen = Ops::bor(nan_seen, is_nan);
    V sign = Ops::srl(Ops::band(u, k.c80000000), 31 - k.sign_shift);
    if (!p.negative_zero) sign = Ops::andnot(Ops::eq(mag, k.zero), sign);  // fnuz: no -0
    return Ops::bor(mag, sign);
  }

  // Every other rounding: one vector of fp32 bit patterns -> one vector of codes.
  template <fp8q::Rounding R>
  static V narrow(V u, std::uint64_t counter, const Consts& k, const fp8q::detail::NarrowParams& p,
                  V& nan_seen) {
    using fp8q::Rounding;
    const V a = Ops::band(u, k.c7fffffff);
    const V sgn = Ops::srl(u, 31);
    const V e32 = Ops::srl(a, 23);
    const V mant = Ops::bor(Ops::band(a, k.c7fffff), Ops::band(Ops::gt(e32, k.zero), k.c800000));
    const V eeff = Ops::sub(Ops::max(e32, k.one), k.m1_127);
    const V below = Ops::sub(k.emin, eeff);  // > 0: subnormal in the target
    const V sh = Ops::add(k.sh_base, Ops::max(below, k.zero));
    const V qq = Ops::max(Ops::sub(eeff, k.emin), k.zero);
    const V sh_c = Ops::min(sh, k.c31);
    const V n0 = Ops::srlv(mant, sh_c);
    const V unit = Ops::sllv(k.one, sh_c);
    const V rem = Ops::band(mant, Ops::sub(unit, k.one));
    const V half = Ops::srl(unit, 1);

    V n;
    if constexpr (R == Rounding::kNearestAway) {
      n = Ops::sub(n0, Ops::gt(Ops::add(rem, k.one), half));  // rem >= half
    } else if constexpr (R == Rounding::kTowardZero) {
      n = n0;
    } else if constexpr (R == Rounding::kUp || R == Rounding::kDown) {
      const V inexact = Ops::gt(rem, k.zero);
      const V want = Ops::eq(sgn, R == Rounding::kUp ? k.zero : k.one);
      n = Ops::sub(n0, Ops::band(inexact, want));
    } else if constexpr (R == Rounding::kOdd) {
      n = Ops::bor(n0, Ops::band(Ops::gt(rem, k.zero), k.one));
    } else {  // kStochastic: up iff frac32 + r >= 2^32, frac32 = floor(rem / 2^sh * 2^32)
      const V frac = Ops::bor(Ops::sllv(mant, Ops::sub(k.c32, sh)), Ops::srlv(mant, Ops::sub(sh, k.c32)));
      const V sum = Ops::add(frac, philox_word0(counter, k));
      const V carry = Ops::gt(Ops::bxor(frac, k.c80000000), Ops::bxor(sum, k.c80000000));
      n = Ops::sub(n0, carry);
    }
    const V code = Ops::add(Ops::sll(qq, k.man_bits), n);

    const V is_nan = Ops::gt(a, k.c7f800000);
    const V is_inf = Ops::eq(a, k.c7f800000);
    const V ovf = Ops::bor(Ops::gt(code, k.max_code), is_inf);
    V to_inf = k.zero;
    if (p.inf_result) {
      if constexpr (R == Rounding::kTowardZero || R == Rounding::kOdd) {
        to_inf = is_inf;
      } else if constexpr (R == Rounding::kUp) {
        to_inf = Ops::bor(is_inf, Ops::eq(sgn, k.zero));
      } else if constexpr (R == Rounding::kDown) {
        to_inf = Ops::bor(is_inf, Ops::eq(sgn, k.one));
      } else {
        to_inf = Ops::eq(k.zero, k.zero);
      }
    }
    V mag = Ops::select(ovf, Ops::select(to_inf, k.inf_or_nan, k.max_code), code);
    mag = Ops::select(is_nan, k.nan_code, mag);
    if (!p.has_nan) nan_seen = Ops::bor(nan_seen, is_nan);
    V sign = Ops::sll(sgn, k.sign_shift);
    if (!p.negative_zero) sign = Ops::andnot(Ops::eq(mag, k.zero), sign);  // fnuz: no -0
    return Ops::bor(mag, sign);
  }

  // bf16 under nearest-even may use the ISA's cheaper, lane-interleaving widening
  // (Ops::load4_bf16_interleaved); stochastic rounding keys each lane by its element index,
  // so the other modes keep natural order.
  template <fp8q::detail::Source S, fp8q::Rounding R>
  static constexpr bool kInterleaved =
      Ops::kInterleavedBf16 && S == fp8q::detail::Source::kBF16 && R == fp8q::Rounding::kNearestEven;

  // Nearest-even magnitude codes with the target's choices fixed at compile time (the sign is
  // applied by the store).
  template <class Fl>
  [[gnu::always_inline]] static V rne_mag(V u, const Consts& k, V& nan_seen) {
    V mag;
    if constexpr (Fl::kInfResult) {
      mag = rne_magnitude(u, k);
      mag = Ops::select(Ops::gt(mag, k.max_code), k.inf_or_nan, mag);
    } else {
      mag = rne_magnitude_saturated(u, k);
    }
    const V is_nan = Ops::gt(Ops::band(u, k.c7fffffff), k.c7f800000);
    if constexpr (!Fl::kHasNan) nan_seen = Ops::bor(nan_seen, is_nan);
    return Ops::select(is_nan, k.nan_code, mag);
  }

  // Saturating 8-bit targets keep their codes in rne_shifted's form up to the store.
  template <class Fl>
  static constexpr bool kShifted = Ops::kShiftedCodes && Fl::kSign7 && !Fl::kInfResult;

  // Nearest-even, one loop per flavor; an 8-bit target takes its sign bits 32 at a time in
  // the store (Ops::store_bytes4_signed), others per vector. bf16 may load interleaved.
  template <fp8q::detail::Source S, Scale kScale>
  static bool run_rne(const void* in, std::uint8_t* out, std::size_t n, std::uint64_t index0,
                      const fp8q::detail::NarrowParams& p) {
    constexpr bool kInter = kInterleaved<S, fp8q::Rounding::kNearestEven>;
    const Consts k(p, false);
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
        V u[4], c[4];
        if constexpr (kInter) Ops::load4_bf16_interleaved(block, u);
        for (std::size_t j = 0; j < 4; ++j) {
          if constexpr (!kInter) u[j] = Ops::bits(Ops::template load<S>(block + j * L * kBytes));
          if constexpr (kScale != Scale::kNone) u[j] = Ops::bits(scaled<kScale>(Ops::as_float(u[j]), k.scale));
          if constexpr (kShifted<Fl>) {
            c[j] = rne_shifted(u[j], k, nan_seen, Fl::kHasNan);
          } else {
            c[j] = rne_mag<Fl>(u[j], k, nan_seen);
          }
        }
        if constexpr (kShifted<Fl>) {
          Ops::template store_bytes4_signed_shifted<Fl::kNegativeZero, kInter>(out + i, c, u, k.c16, k.code_shift);
        } else if constexpr (Fl::kSign7) {
          Ops::template store_bytes4_signed<Fl::kNegativeZero, kInter>(out + i, c, u);
        } else if constexpr (kInter) {
          for (std::size_t j = 0; j < 4; ++j) {
            V sign = Ops::srl(Ops::band(u[j], k.c80000000), 31 - k.sign_shift);
            if constexpr (!Fl::kNegativeZero) sign = Ops::andnot(Ops::eq(c[j], k.zero), sign);
            c[j] = Ops::bor(c[j], sign);
          }
          Ops::store_bytes4_interleaved(out + i, c[0], c[1], c[2], c[3]);
        } else {
          for (std::size_t j = 0; j < 4; ++j) {
            V sign = Ops::srl(Ops::band(u[j], k.c80000000), 31 - k.sign_shift);
            if constexpr (!Fl::kNegativeZero) sign = Ops::andnot(Ops::eq(c[j], k.zero), sign);
            c[j] = Ops::bor(c[j], sign);
          }
          Ops::store_bytes4(out + i, c[0], c[1], c[2], c[3]);
        }
      }
      return Ops::any(nan_seen);
    });
    return tail<S>(src, out, i, n, index0, p) || nan_unrepresentable;  // the tail: scalar reference
  }

  template <fp8q::detail::Source S, fp8q::Rounding R, Scale kScale>
  static bool run_impl(const void* in, std::uint8_t* out, std::size_t n, std::uint64_t index0,
                       const fp8q::detail::NarrowParams& p) {
    if constexpr (R == fp8q::Rounding::kNearestEven) return run_rne<S, kScale>(in, out, n, index0, p);
    const Consts k(p);
    constexpr std::size_t L = Ops::kLanes;
    constexpr std::size_t kBytes = S == fp8q::detail::Source::kF32 ? 4 : 2;
    const auto* src = static_cast<const unsigned char*>(in);
    V nan_seen = k.zero;
    const std::uint64_t base = p.options->offset + index0;
    std::size_t i = 0;
    for (; i + 4 * L <= n; i += 4 * L) {
      const unsigned char* block = src + i * kBytes;
      V u[4];
      if constexpr (kInterleaved<S, R>) {
        Ops::load4_bf16_interleaved(block, u);
      } else {
        for (std::size_t j = 0; j < 4; ++j) u[j] = Ops::bits(Ops::template load<S>(block + j * L * kBytes));
      }
      if constexpr (kScale != Scale::kNone) {  // without a scale x is used as it is (x * 1 == x)
        for (std::size_t j = 0; j < 4; ++j) u[j] = Ops::bits(scaled<kScale>(Ops::as_float(u[j]), k.scale));
      }
      V c[4];
      for (std::size_t j = 0; j < 4; ++j) {
        if constexpr (R == fp8q::Rounding::kNearestEven) {
          c[j] = narrow_rne(u[j], k, p, nan_seen);
        } else {
          c[j] = narrow<R>(u[j], base + i + j * L, k, p, nan_seen);
        }
      }
      if constexpr (kInterleaved<S, R>) {
        Ops::store_bytes4_interleaved(out + i, c[0], c[1], c[2], c[3]);
      } else {
        Ops::store_bytes4(out + i, c[0], c[1], c[2], c[3]);
      }
    }
    const bool nan_unrepresentable = Ops::any(nan_seen);
    return tail<S>(src, out, i, n, index0, p) || nan_unrepresentable;  // the tail: scalar reference
  }

  // MX: per 32-element block, amax = the largest |x| as bits (NaN patterns sort above Inf),
  // the block's E8M0 code from the rule table, then the block's elements multiplied by the
  // exact power of two 2^(127 - code) and converted like any scaled input. A block whose
  // code is 0xFF (NaN or Inf inside) is overwritten with the NaN fill afterwards.
  // Two passes per stretch of kStretch elements (in L1 between them): first every block's
  // code, then the conversion; so the scalar table lookups of one block do not sit on the
  // critical path of its conversion, and the blocks' lookups overlap one another.
  template <fp8q::detail::Source S>
  static std::uint8_t mx_code(const unsigned char* block, const Consts& k, const fp8q::detail::MxParams& m) {
    constexpr std::size_t L = Ops::kLanes, kBytes = S == fp8q::detail::Source::kF32 ? 4 : 2;
    V a = Ops::band(Ops::bits(Ops::template load<S>(block)), k.c7fffffff);
    for (std::size_t j = 1; j < 32 / L; ++j)
      a = Ops::max(a, Ops::band(Ops::bits(Ops::template load<S>(block + j * L * kBytes)), k.c7fffffff));
    return table_code(static_cast<std::uint32_t>(Ops::hmax(a)), m);
  }

  static std::uint8_t table_code(std::uint32_t amax, const fp8q::detail::MxParams& m) {
    // Pow2ScaleTable::code(), spelled out here: an inline function of a shared header
    // compiled with this ISA's flags could be picked by the linker for the other paths
    const std::uint32_t e = amax >> 23;
    if (e == 255) return 0xFF;
    if (e == 0) return 0x00;
    return static_cast<std::uint8_t>(m.table->base[e] + ((amax & 0x7FFFFFu) >= m.table->threshold[e] ? 1 : 0));
  }

  // MX on bf16 under nearest-even. Pass 1 takes eight blocks' amaxes (and smallest nonzero
  // |x|) at a time, and their scale codes in one vector where the rule is affine in the
  // exponent (MxParams::affine_*), else from the rule's table, branch-free
  // (MxParams::bf16_base/bf16_step). Pass 2 converts a block whose 2^(127 - code) the 16-bit
  // kernel takes (code >= 127 - max_offset) there: by its normal form when no nonzero |x| of
  // the block falls below the target's smallest normal (the usual case: that is 2^-14 of the
  // amax for e4m3fn), else by the general form; any other finite scale by the fp32 kernel;
  // a NaN-scale block is filled with the NaN element.
  template <class Fl>
  static std::size_t run_mx_bf16(const void* in, std::uint8_t* out, std::uint8_t* scales, std::size_t n,
                                 const fp8q::detail::NarrowParams& p, const fp8q::detail::MxParams& m) {
    static_assert(Ops::kInterleavedBf16 && 4 * Ops::kLanes == 32, "one fp32-kernel group is one block");
    const Consts k(p, false);
    const typename Bf16::Consts k16(p);
    const unsigned lo = static_cast<unsigned>(127 - Bf16::max_offset(p));  // codes lo .. 254: 16-bit kernel
    const auto h7f = Ops16::h_set1(0x7F), alo = Ops16::h_set1(m.affine_lo), ahi = Ops16::h_set1(m.affine_hi);
    const auto ac = Ops16::h_set1(m.affine_c), astep1 = Ops16::h_set1(static_cast<std::int16_t>(m.affine_step - 1));
    const auto heb0 = Ops16::h_set1(static_cast<std::int16_t>(k16.e_min - 127));
    const auto hlo = Ops16::h_set1(static_cast<std::int16_t>(lo));
    const std::int16_t kb_offset = Bf16::normal_bias_offset(p);
    const auto hkb = Ops16::h_set1(kb_offset);
    const auto* src = static_cast<const unsigned char*>(in);
    V nan_seen = k.zero;
    auto nan16 = Ops16::set1(0);  // NaN only reaches blocks that are overwritten
    const std::size_t whole = n / 32 * 32;
    constexpr std::size_t kStretch = 2048;
    for (std::size_t s0 = 0; s0 < whole; s0 += kStretch) {
      const std::size_t s1 = s0 + kStretch < whole ? s0 + kStretch : whole;
      // pass 1, per block: its code; eb = Eb - d for d = 127 - code, where the 16-bit kernel
      // takes it (code in lo .. 254); kb = normal_bias(eb); lowest = its smallest nonzero
      // |x| pattern - 1 (0 where not computed: the general form then). `odd`: some block of
      // the stretch the 16-bit kernel does not take.
      std::int16_t eb[kStretch / 32], kb[kStretch / 32];
      std::uint16_t lowest[kStretch / 32];
      bool odd = false;
      const int eb0 = k16.e_min - 127;
      auto keep = [&](std::size_t i, unsigned code) {
        scales[i / 32] = static_cast<std::uint8_t>(code);
        const std::size_t b = (i - s0) / 32;
        eb[b] = static_cast<std::int16_t>(eb0 + static_cast<int>(code));
        kb[b] = static_cast<std::int16_t>(eb[b] * 128 - kb_offset);
        odd |= code - lo > 254 - lo;
      };
      std::size_t i = s0;
      for (; i + 256 <= s1; i += 256) {
        typename Ops16::H low;
        const auto amax = Ops16::block_range8(src + 2 * i, low);
        Ops16::h_store(reinterpret_cast<std::int16_t*>(lowest + (i - s0) / 32), low);
        const auto e = Ops16::h_srl7(amax), f = Ops16::h_and(amax, h7f);
        if (!Ops16::h_any(Ops16::h_or(Ops16::h_gt(e, ahi), Ops16::h_gt(alo, e)))) {  // all affine
          const auto code = Ops16::h_sub(Ops16::h_add(e, ac), Ops16::h_gt(f, astep1));  // mask -1: + 1
          const auto ebh = Ops16::h_add(code, heb0);
          Ops16::h_store_bytes(scales + i / 32, code);
          Ops16::h_store(eb + (i - s0) / 32, ebh);
          Ops16::h_store(kb + (i - s0) / 32, Ops16::h_sub(Ops16::h_sll7(ebh), hkb));
          odd |= Ops16::h_any(Ops16::h_gt(hlo, code));  // codes here are <= 254
          continue;
        }
        std::uint16_t a[8];
        Ops16::h_store(reinterpret_cast<std::int16_t*>(a), amax);
        for (std::size_t b = 0; b < 8; ++b) {
          const unsigned eb_exp = a[b] >> 7, eb_frac = a[b] & 0x7Fu;
          keep(i + 32 * b, m.bf16_base[eb_exp] + (eb_frac >= m.bf16_step[eb_exp] ? 1u : 0u));
        }
      }
      for (; i < s1; i += 32) {
        keep(i, mx_code<fp8q::detail::Source::kBF16>(src + 2 * i, k, m));
        lowest[(i - s0) / 32] = 0;
      }
      // pass 2; each block also prefetches the line the next stretch's pass 1 reads (past
      // the row's end too: rows usually follow one another, and a prefetch never faults),
      // so that its loads overlap this pass's arithmetic instead of stalling pass 1
      for (i = s0; i < s1; i += 32) {
        Ops16::prefetch(reinterpret_cast<const void*>(reinterpret_cast<std::uintptr_t>(src) + 2 * (i + kStretch)));
        const unsigned code = scales[i / 32];
        const std::size_t b = (i - s0) / 32;
        if (!odd || code - lo <= 254 - lo) {
          // normal form unless some nonzero |x| lies below Eb (lowest + 1 < Eb << 7)
          if (static_cast<unsigned>(lowest[b]) + 1 >= static_cast<unsigned>(eb[b]) << 7) {
            Bf16::template block32_normal<Fl>(src + 2 * i, out + i, Ops16::broadcast(&kb[b]), k16);
          } else {
            const auto ebv = Ops16::broadcast(&eb[b]);
            Bf16::template block32<Fl>(src + 2 * i, out + i, ebv, Bf16::eb_idx_vec(k16, ebv), k16, nan16);
          }
        } else if (code != 0xFF) {
          V u[4], c[4];
          Ops::load4_bf16_interleaved(src + 2 * i, u);
          const auto f = Ops::set1f(m.multiplier[code]);
          for (std::size_t j = 0; j < 4; ++j) c[j] = narrow_rne(Ops::bits(Ops::mul(Ops::as_float(u[j]), f)), k, p, nan_seen);
          Ops::store_bytes4_interleaved(out + i, c[0], c[1], c[2], c[3]);
        } else {
          std::memset(out + i, m.nan_fill, 32);
        }
      }
    }
    return whole;
  }

  template <fp8q::detail::Source S, fp8q::Rounding R>
  static std::size_t run_mx(const void* in, std::uint8_t* out, std::uint8_t* scales, std::size_t n,
                            std::uint64_t index0, const fp8q::detail::NarrowParams& p,
                            const fp8q::detail::MxParams& m) {
    if constexpr (kBf16MxFast<S, R>) {
      if (Bf16::takes(p))
        return narrow_flavor(p, [&](auto flavor) { return run_mx_bf16<decltype(flavor)>(in, out, scales, n, p, m); });
    }
    return run_mx_any<S, R>(in, out, scales, n, index0, p, m);
  }

  template <fp8q::detail::Source S, fp8q::Rounding R>
  static std::size_t run_mx_any(const void* in, std::uint8_t* out, std::uint8_t* scales, std::size_t n,
                                std::uint64_t index0, const fp8q::detail::NarrowParams& p,
                                const fp8q::detail::MxParams& m) {
    const Consts k(p);
    constexpr std::size_t L = Ops::kLanes, kGroup = 4 * L, kPerBlock = 32 / L, kStretch = 2048;
    static_assert(kGroup % 32 == 0 && 32 % L == 0 && kStretch % kGroup == 0);
    constexpr std::size_t kBytes = S == fp8q::detail::Source::kF32 ? 4 : 2;
    // the interleaved bf16 load permutes within 32 elements only, so each block stays whole
    constexpr bool kInter = kInterleaved<S, R> && kGroup == 32;
    const auto* src = static_cast<const unsigned char*>(in);
    V nan_seen = k.zero;  // NaN only reaches blocks that are overwritten
    const std::uint64_t base = p.options->offset + index0;
    const std::size_t whole = n / kGroup * kGroup;
    for (std::size_t s0 = 0; s0 < whole; s0 += kStretch) {
      const std::size_t s1 = s0 + kStretch < whole ? s0 + kStretch : whole;
      for (std::size_t i = s0; i < s1; i += 32) scales[i / 32] = mx_code<S>(src + i * kBytes, k, m);  // pass 1
      for (std::size_t i = s0; i < s1; i += kGroup) {  // pass 2: the elements
        const unsigned char* block = src + i * kBytes;
        V u[4];
        if constexpr (kInter) {
          Ops::load4_bf16_interleaved(block, u);
        } else {
          for (std::size_t j = 0; j < 4; ++j) u[j] = Ops::bits(Ops::template load<S>(block + j * L * kBytes));
        }
        V c[4];
        for (std::size_t j = 0; j < 4; ++j) {
          const auto f = Ops::set1f(m.multiplier[scales[i / 32 + j / kPerBlock]]);  // 0xFF: overwritten
          V x = Ops::bits(Ops::mul(Ops::as_float(u[j]), f));
          if constexpr (R == fp8q::Rounding::kUp || R == fp8q::Rounding::kDown || R == fp8q::Rounding::kOdd) {
            // a product flushed to +/-0 from a nonzero x stays nonzero: +/-2^-149 (the exact
            // value rounds away from 0 in these modes; in the others it gives 0 either way)
            const V lost = Ops::andnot(Ops::eq(Ops::band(u[j], k.c7fffffff), k.zero),
                                       Ops::eq(Ops::band(x, k.c7fffffff), k.zero));
            x = Ops::select(lost, Ops::bor(Ops::band(u[j], k.c80000000), k.one), x);
          }
          if constexpr (R == fp8q::Rounding::kNearestEven) {
            c[j] = narrow_rne(x, k, p, nan_seen);
          } else {
            c[j] = narrow<R>(x, base + i + j * L, k, p, nan_seen);
          }
        }
        if constexpr (kInter) {
          Ops::store_bytes4_interleaved(out + i, c[0], c[1], c[2], c[3]);
        } else {
          Ops::store_bytes4(out + i, c[0], c[1], c[2], c[3]);
        }
      }
      for (std::size_t i = s0; i < s1; i += 32)
        if (scales[i / 32] == 0xFF) std::memset(out + i, m.nan_fill, 32);
    }
    return whole;
  }

  template <fp8q::detail::Source S>
  static fp8q::detail::MxFn pick_mx(fp8q::Rounding r) {
    using fp8q::Rounding;
    switch (r) {
      case Rounding::kNearestEven: return &run_mx<S, Rounding::kNearestEven>;
      case Rounding::kNearestAway: return &run_mx<S, Rounding::kNearestAway>;
      case Rounding::kTowardZero: return &run_mx<S, Rounding::kTowardZero>;
      case Rounding::kUp: return &run_mx<S, Rounding::kUp>;
      case Rounding::kDown: return &run_mx<S, Rounding::kDown>;
      case Rounding::kOdd: return &run_mx<S, Rounding::kOdd>;
      case Rounding::kStochastic: return &run_mx<S, Rounding::kStochastic>;
    }
    return nullptr;
  }

  static fp8q::detail::MxFn mx_table(fp8q::detail::Source s, fp8q::Rounding r) {
    using fp8q::detail::Source;
    switch (s) {
      case Source::kF32: return pick_mx<Source::kF32>(r);
      case Source::kBF16: return pick_mx<Source::kBF16>(r);
      case Source::kF16: return pick_mx<Source::kF16>(r);
    }
    return nullptr;
  }

  // n elements from in to out (a bf16 source whose scale is a power of two the 16-bit kernel
  // takes goes there); returns whether a NaN met a target without NaN.
  template <fp8q::detail::Source S, fp8q::Rounding R>
  static bool run(const void* in, std::uint8_t* out, std::size_t n, std::uint64_t index0,
                  const fp8q::detail::NarrowParams& p) {
    if constexpr (kBf16Fast<S, R>) {
      const int d = pow2_offset(p);
      if (d >= 0 && d <= Bf16::max_offset(p) && Bf16::takes(p)) {
        const std::size_t whole = n / 32 * 32;
        const bool nan = Bf16::run(in, out, whole, d, p);
        return tail<S>(static_cast<const unsigned char*>(in), out, whole, n, index0, p) || nan;
      }
    }
    if (p.scale == 1.0f) return run_impl<S, R, Scale::kNone>(in, out, n, index0, p);  // x * 1 == x / 1 == x
    if (p.divide) return run_impl<S, R, Scale::kDivide>(in, out, n, index0, p);
    if (p.scale != p.scale) return run_impl<S, R, Scale::kNaN>(in, out, n, index0, p);  // NaN scale
    return run_impl<S, R, Scale::kNumber>(in, out, n, index0, p);
  }

  template <fp8q::detail::Source S>
  static fp8q::detail::NarrowFn pick(fp8q::Rounding r) {
    using fp8q::Rounding;
    switch (r) {
      case Rounding::kNearestEven: return &run<S, Rounding::kNearestEven>;
      case Rounding::kNearestAway: return &run<S, Rounding::kNearestAway>;
      case Rounding::kTowardZero: return &run<S, Rounding::kTowardZero>;
      case Rounding::kUp: return &run<S, Rounding::kUp>;
      case Rounding::kDown: return &run<S, Rounding::kDown>;
      case Rounding::kOdd: return &run<S, Rounding::kOdd>;
      case Rounding::kStochastic: return &run<S, Rounding::kStochastic>;
    }
    return nullptr;
  }

  static fp8q::detail::NarrowFn table(fp8q::detail::Source s, fp8q::Rounding r) {
    using fp8q::detail::Source;
    switch (s) {
      case Source::kF32: return pick<Source::kF32>(r);
      case Source::kBF16: return pick<Source::kBF16>(r);
      case Source::kF16: return pick<Source::kF16>(r);
    }
    return nullptr;
  }
};
