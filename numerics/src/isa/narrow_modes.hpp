// Internal: the narrowing kernel of every rounding mode but nearest-even, in 32-bit integer
// lanes. Included only by the ISA translation units, inside an anonymous namespace (see
// narrow_kernel.hpp). On the fp32 bit pattern u of fp32(x * scale):
//   a = |u|, e32 = a >> 23, mant = fraction | hidden bit (hidden bit only if e32 > 0)
//   Eeff = max(e32, 1) - 127                 exponent of mant's bit 23 (fp32 subnormals: -126)
//   sh   = (23 - m) + max(emin - Eeff, 0)    bits of mant below the target's quantum
//   n0   = mant >> sh, rem = mant mod 2^sh   (sh clamped to 31: mant < 2^24, so n0 = 0 and
//                                            rem < half either way)
//   code = (max(Eeff - emin, 0) << m) + n0 + up
// `up` is the rounding decision of each mode; a code above max_code is overflow. Ops::sllv
// and Ops::srlv give 0 for shift counts above 31 (as vpsllvd / vpsrlvd do), which the
// stochastic fraction relies on.
#pragma once

#include <cstddef>
#include <cstdint>

#include "isa/narrow.hpp"
#include "isa/narrow_common.hpp"
#include "isa/philox_lanes.hpp"

// One vector of fp32 bit patterns -> one vector of codes, rounded by R (not nearest-even).
template <fp8q::Rounding R, class Ops>
typename Ops::V narrow_mode(typename Ops::V u, std::uint64_t counter, const NarrowConsts<Ops>& k,
                            const fp8q::detail::NarrowParams& p, typename Ops::V& nan_seen) {
  using fp8q::Rounding;
  using V = typename Ops::V;
  static_assert(R != Rounding::kNearestEven, "nearest-even: NarrowNearest (narrow_nearest.hpp)");
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
    const V sum = Ops::add(frac, PhiloxLanes<Ops>::word0(counter, k.keys));
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

// The driver of those modes (natural lane order: each lane's counter is its element index).
template <class Ops>
struct NarrowModes {
  using V = typename Ops::V;

  template <fp8q::detail::Source S, fp8q::Rounding R, NarrowScale kScale>
  static bool run(const void* in, std::uint8_t* out, std::size_t n, std::uint64_t index0,
                  const fp8q::detail::NarrowParams& p) {
    const NarrowConsts<Ops> k(p);
    constexpr std::size_t L = Ops::kLanes;
    constexpr std::size_t kBytes = S == fp8q::detail::Source::kF32 ? 4 : 2;
    const auto* src = static_cast<const unsigned char*>(in);
    V nan_seen = k.zero;
    const std::uint64_t base = p.options->offset + index0;
    std::size_t i = 0;
    for (; i + 4 * L <= n; i += 4 * L) {
      const unsigned char* block = src + i * kBytes;
      V u[4];
      for (std::size_t j = 0; j < 4; ++j) u[j] = Ops::bits(Ops::template load<S>(block + j * L * kBytes));
      if constexpr (kScale != NarrowScale::kNone) {  // without a scale x is used as it is (x * 1 == x)
        for (std::size_t j = 0; j < 4; ++j) u[j] = Ops::bits(narrow_scaled<kScale>(Ops::as_float(u[j]), k));
      }
      V c[4];
      for (std::size_t j = 0; j < 4; ++j) c[j] = narrow_mode<R>(u[j], base + i + j * L, k, p, nan_seen);
      Ops::store_bytes4(out + i, c[0], c[1], c[2], c[3]);
    }
    const bool nan_unrepresentable = Ops::any(nan_seen);
    return narrow_tail<S>(src, out, i, n, index0, p) || nan_unrepresentable;  // the tail: scalar reference
  }
};
