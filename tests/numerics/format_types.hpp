// Typed-test plumbing: one GoogleTest type per format, named after it.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "fp8q/numerics/format.hpp"
#include "fp8q/numerics/policy.hpp"

namespace fp8q::test {

template <FormatId Id>
struct Fmt {
  static constexpr FormatId id = Id;
  static constexpr const Format& format = format_of(Id);
};

using NarrowFormats =
    ::testing::Types<Fmt<FormatId::kE4M3FN>, Fmt<FormatId::kE4M3>, Fmt<FormatId::kE5M2>,
                     Fmt<FormatId::kE4M3FNUZ>, Fmt<FormatId::kE5M2FNUZ>, Fmt<FormatId::kE3M4>,
                     Fmt<FormatId::kE8M0>, Fmt<FormatId::kE2M3>, Fmt<FormatId::kE3M2>, Fmt<FormatId::kE2M1>>;

struct FormatName {
  template <class T>
  static std::string GetName(int) {
    return std::string(T::format.name);
  }
};

inline constexpr Rounding kAllRoundings[] = {Rounding::kNearestEven, Rounding::kNearestAway, Rounding::kTowardZero,
                                             Rounding::kUp,          Rounding::kDown,        Rounding::kOdd,
                                             Rounding::kStochastic};
inline constexpr Overflow kAllOverflows[] = {Overflow::kSaturate, Overflow::kInfOrNan};

}  // namespace fp8q::test
