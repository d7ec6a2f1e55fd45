// Internal: what every narrowing kernel shares (narrow_kernel.hpp): the broadcast constants of
// one target, the scaling of the input, the scalar tail. Included only by the ISA translation
// units, inside an anonymous namespace there.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "fp8q/numerics/convert.hpp"
#include "isa/narrow.hpp"
#include "isa/narrow_bf16_kernel.hpp"
#include "isa/philox_lanes.hpp"

// The 16-bit bf16 kernel of an ISA whose Ops16 (16-bit-lane operations) is void names this
// placeholder; it is never instantiated.
struct NoOps16;
template <class Ops16>
using NarrowBf16For = NarrowBf16Kernel<std::conditional_t<std::is_void_v<Ops16>, NoOps16, Ops16>>;

// d where fp32(x * scale) (or fp32(x / scale)) is fp32(x * 2^d) with 0 <= d, else -1.
inline int narrow_pow2_offset(const fp8q::detail::NarrowParams& p) {
  std::uint32_t b;
  std::memcpy(&b, &p.scale, 4);
  const int e = static_cast<int>(b >> 23);  // the sign bit makes e > 255: not taken
  if ((b & 0x7FFFFFu) != 0 || e == 0 || e >= 255) return -1;
  const int d = p.divide ? 127 - e : e - 127;
  return d >= 0 ? d : -1;
}

// Whether the scale can make a NaN of a number (NaN, 0 or +/-Inf): NarrowScale::kSpecial.
inline bool narrow_scale_special(const fp8q::detail::NarrowParams& p) {
  return !(p.scale != 0.0f && p.scale - p.scale == 0.0f);  // s - s is NaN for NaN and Inf
}

// A NaN product's value where x is not NaN: the scale if it is NaN, else the negative default NaN.
inline float narrow_nan_fill(const fp8q::detail::NarrowParams& p) {
  if (p.scale != p.scale) return p.scale;
  const std::uint32_t b = 0xFFC00000u;
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

// The constant of rne_shifted (narrow_nearest.hpp): 2^7 * (biased exponent of M for E = emin).
inline std::int32_t narrow_shifted_bias(const fp8q::detail::NarrowParams& p) {
  return 128 * (p.emin + 23 - p.man_bits + 127);
}

// Elements [i, n) by the scalar reference; returns whether a NaN met a target without NaN.
template <fp8q::detail::Source S>
bool narrow_tail(const unsigned char* src, std::uint8_t* out, std::size_t i, std::size_t n, std::uint64_t index0,
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

// The target's constants, broadcast once per call.
template <class Ops>
struct NarrowConsts {
  using V = typename Ops::V;
  V c7fffffff, c7fffff, c800000, c7f800000, c80000000, one, zero, m1_127, emin, sh_base,
      max_code, nan_code, inf_or_nan, c31, c32, min_normal, cap, quantum_shift, max_bits,
      madd_weights, c16, nan_shifted;
  typename Ops::Count code_shift;
  typename Ops::F scale;
  typename Ops::F nan_fill;  // narrow_nan_fill
  bool divide;
  int man_bits, sign_shift;
  typename PhiloxLanes<Ops>::Keys keys;  // the Philox key schedule of this seed
  // philox: also the key schedule, which only stochastic rounding reads (the block-scaled
  // drivers call a kernel per block, so the other modes skip its 20 broadcasts)
  [[gnu::always_inline]] explicit NarrowConsts(const fp8q::detail::NarrowParams& p, bool philox = true)
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
        c16(Ops::set1(static_cast<std::int32_t>(0x10001u * static_cast<std::uint32_t>(narrow_shifted_bias(p))))),
        nan_shifted(Ops::set1((p.nan_code << (7 - p.man_bits)) + narrow_shifted_bias(p))),
        code_shift(Ops::count(7 - p.man_bits)),
        scale(Ops::set1f(p.scale)),
        nan_fill(Ops::set1f(narrow_nan_fill(p))),
        divide(p.divide), man_bits(p.man_bits),
        sign_shift(p.sign_shift) {
    if (philox) keys.set(p.options->seed);
  }
};

// How fp32(x * scale) or fp32(x / scale) is formed, chosen once per call. kSpecial: a scale
// (either operation) that is NaN, 0 or +/-Inf, the ones that can make a NaN from a number.
enum class NarrowScale { kNone, kNumber, kSpecial, kDivide };

// fp32(x * scale) or fp32(x / scale) with the NaN rule of convert.cpp: a NaN x keeps its own
// sign, else a NaN scale gives its own, else 0 * Inf, 0 / 0 and Inf / Inf give the negative
// default NaN. With a finite nonzero scale x is the only possible NaN operand, so kNumber and
// kDivide need no select; kSpecial enforces the rule, since the compiler may swap a product's
// operands and aarch64's default NaN is positive.
template <NarrowScale kScale, class Ops>
typename Ops::F narrow_scaled(typename Ops::F x, const NarrowConsts<Ops>& k) {
  if constexpr (kScale == NarrowScale::kDivide) return Ops::div(x, k.scale);
  if constexpr (kScale == NarrowScale::kSpecial) {
    const typename Ops::F p = k.divide ? Ops::div(x, k.scale) : Ops::mul(x, k.scale);
    return Ops::select_f(Ops::is_nan(x), x, Ops::select_f(Ops::is_nan(p), k.nan_fill, p));
  }
  return Ops::mul(x, k.scale);
}

// bf16 under nearest-even may use the ISA's cheaper, lane-interleaving widening
// (Ops::load4_bf16_interleaved); stochastic rounding keys each lane by its element index,
// so the other modes keep natural order.
template <class Ops, fp8q::detail::Source S, fp8q::Rounding R>
constexpr bool kNarrowInterleaved =
    Ops::kInterleavedBf16 && S == fp8q::detail::Source::kBF16 && R == fp8q::Rounding::kNearestEven;
