// Internal: NarrowKernel, the entry of an ISA's narrowing kernels: the choice of driver for a
// call (16-bit bf16 kernel, nearest-even, other modes; the form of the scale) and the
// dispatch tables of bulk.cpp. Included only by the ISA translation units, inside an
// anonymous namespace (see narrow_kernel.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "isa/narrow.hpp"
#include "isa/narrow_common.hpp"
#include "isa/narrow_modes.hpp"
#include "isa/narrow_mx.hpp"
#include "isa/narrow_nearest.hpp"

// Ops16: the ISA's 16-bit-lane operations for the bf16 nearest-even kernel
// (narrow_bf16_kernel.hpp), or void where the ISA has none; the MX driver's (its groups are
// one 32-element block). Ops16Wide: the plain conversion's, the widest the ISA has.
template <class Ops, class Ops16 = void, class Ops16Wide = Ops16>
struct NarrowKernel {
  using Bf16 = NarrowBf16For<Ops16Wide>;
  using Mx = NarrowMx<Ops, Ops16>;

  // bf16 under nearest-even with a power-of-two factor takes the 16-bit kernel.
  template <fp8q::detail::Source S, fp8q::Rounding R>
  static constexpr bool kBf16Fast =
      !std::is_void_v<Ops16Wide> && S == fp8q::detail::Source::kBF16 && R == fp8q::Rounding::kNearestEven;

  template <fp8q::detail::Source S, fp8q::Rounding R, NarrowScale kScale>
  static bool run_scaled(const void* in, std::uint8_t* out, std::size_t n, std::uint64_t index0,
                         const fp8q::detail::NarrowParams& p) {
    if constexpr (R == fp8q::Rounding::kNearestEven) {
      return NarrowNearest<Ops>::template run<S, kScale>(in, out, n, index0, p);
    } else {
      return NarrowModes<Ops>::template run<S, R, kScale>(in, out, n, index0, p);
    }
  }

  // n elements from in to out (a bf16 source whose scale is a power of two the 16-bit kernel
  // takes goes there); returns whether a NaN met a target without NaN.
  template <fp8q::detail::Source S, fp8q::Rounding R>
  static bool run(const void* in, std::uint8_t* out, std::size_t n, std::uint64_t index0,
                  const fp8q::detail::NarrowParams& p) {
    if constexpr (kBf16Fast<S, R>) {
      const int d = narrow_pow2_offset(p);
      if (d >= 0 && d <= Bf16::max_offset(p) && Bf16::takes(p)) {
        const std::size_t whole = n / Bf16::kGroup * Bf16::kGroup;
        const bool nan = Bf16::run(in, out, whole, d, p);
        return narrow_tail<S>(static_cast<const unsigned char*>(in), out, whole, n, index0, p) || nan;
      }
    }
    if (p.scale == 1.0f) return run_scaled<S, R, NarrowScale::kNone>(in, out, n, index0, p);  // x * 1 == x / 1 == x
    if (narrow_scale_special(p)) return run_scaled<S, R, NarrowScale::kSpecial>(in, out, n, index0, p);
    if (p.divide) return run_scaled<S, R, NarrowScale::kDivide>(in, out, n, index0, p);
    return run_scaled<S, R, NarrowScale::kNumber>(in, out, n, index0, p);
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

  template <fp8q::detail::Source S>
  static fp8q::detail::MxFn pick_mx(fp8q::Rounding r) {
    using fp8q::Rounding;
    switch (r) {
      case Rounding::kNearestEven: return &Mx::template run<S, Rounding::kNearestEven>;
      case Rounding::kNearestAway: return &Mx::template run<S, Rounding::kNearestAway>;
      case Rounding::kTowardZero: return &Mx::template run<S, Rounding::kTowardZero>;
      case Rounding::kUp: return &Mx::template run<S, Rounding::kUp>;
      case Rounding::kDown: return &Mx::template run<S, Rounding::kDown>;
      case Rounding::kOdd: return &Mx::template run<S, Rounding::kOdd>;
      case Rounding::kStochastic: return &Mx::template run<S, Rounding::kStochastic>;
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
};
