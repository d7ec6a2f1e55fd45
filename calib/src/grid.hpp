// Internal: the non-negative finite values of a target format, as the calibrators see them.
#pragma once

#include <array>
#include <vector>

#include "fp8q/numerics/format.hpp"

namespace fp8q::calib::detail {

struct Grid {
  const Format* format = nullptr;
  std::vector<double> value;     // 0 = g_0 < g_1 < ... < g_M = max_finite
  std::vector<double> midpoint;  // (g_j + g_{j+1}) / 2, j < M: the rounding boundaries
  std::array<double, 256> decode{};  // every code's value (NaN codes: NaN); sign included
};

// std::invalid_argument unless `f` is a signed narrow format (<= 8 bits) with a zero.
const Grid& grid_of(const Format& f);

}  // namespace fp8q::calib::detail
