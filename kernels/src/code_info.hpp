// Internal: what the fast exact_block and fused paths need to know about each code of an
// element format, from its exact decoded value. Not installed.
#pragma once

#include <array>
#include <cstdint>

#include "fp8q/numerics/format.hpp"

namespace fp8q::detail {

struct CodeInfo {
  float value = 0.0f;     // exact decoded value (NaN, +/-Inf kept; 0 for bytes outside the format)
  bool special = false;   // NaN or Inf
  bool nonzero = false;   // finite and != 0
  // Finite nonzero codes only: |value| = odd * 2^low with 2^top <= |value| < 2^(top + 1).
  int top = 0;
  int low = 0;
  // The exponent the fused model gives the operand: top, or the format's emin when the value
  // is subnormal in its format (accumulation.hpp).
  int model_exp = 0;
};

std::array<CodeInfo, 256> code_info(FormatId f);

// Significant bits of the largest significand of a format (man_bits + 1).
inline int significand_bits(FormatId f) { return format_of(f).man_bits + 1; }

// E8M0 scale code -> 2^(code - 127) as fp64; 0xFF -> NaN.
double e8m0_value(std::uint8_t code);

// ceil(log2(n)) for n >= 1.
int ceil_log2(std::uint64_t n);

}  // namespace fp8q::detail
