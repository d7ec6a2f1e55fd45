// Internal: the per-target choices of the nearest-even kernels as types, so that the inner
// loops have no branch on them. Included only by ISA translation units, inside an anonymous
// namespace (see narrow_kernel.hpp).
#pragma once

#include "isa/narrow.hpp"

template <bool InfResult, bool NegativeZero, bool Sign7, bool HasNan>
struct NarrowFlavor {
  static constexpr bool kInfResult = InfResult;        // overflow gives Inf/NaN, not max
  static constexpr bool kNegativeZero = NegativeZero;  // the target has -0 (fnuz does not)
  static constexpr bool kSign7 = Sign7;                // an 8-bit target: the sign is bit 7
  static constexpr bool kHasNan = HasNan;
};

template <int I, class Body, bool... Bits>
auto narrow_flavor_bit(const fp8q::detail::NarrowParams& p, const Body& body) {
  if constexpr (I == 4) {
    return body(NarrowFlavor<Bits...>{});
  } else {
    const bool bit = I == 0 ? p.inf_result : I == 1 ? p.negative_zero : I == 2 ? p.sign_shift == 7 : p.has_nan;
    return bit ? narrow_flavor_bit<I + 1, Body, Bits..., true>(p, body)
               : narrow_flavor_bit<I + 1, Body, Bits..., false>(p, body);
  }
}

// Calls body(NarrowFlavor<...>{}) with p's flavor; returns what it returns.
template <class Body>
auto narrow_flavor(const fp8q::detail::NarrowParams& p, const Body& body) {
  return narrow_flavor_bit<0>(p, body);
}
