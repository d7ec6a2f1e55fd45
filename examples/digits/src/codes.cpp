#include "codes.hpp"

#include <bit>
#include <cmath>
#include <limits>

namespace digits {
namespace {

// One 1/4/3 format with bias 7; `ieee` selects the IEEE-style specials (exponent field 15
// holds Inf and NaN only) instead of OCP e4m3fn's (exponent field 15 is finite except
// mantissa 111, the one NaN per sign).
std::array<float, 256> make_e4m3_table(bool ieee) {
  std::array<float, 256> t{};
  for (int code = 0; code < 256; ++code) {
    const int sign = code >> 7, exp = (code >> 3) & 0xF, man = code & 0x7;
    float v;
    if (exp == 0xF && ieee) {
      v = man == 0 ? std::numeric_limits<float>::infinity() : std::numeric_limits<float>::quiet_NaN();
    } else if (exp == 0xF && man == 0x7) {
      v = std::numeric_limits<float>::quiet_NaN();  // e4m3fn 0x7F / 0xFF
    } else if (exp == 0) {
      v = std::ldexp(static_cast<float>(man), 1 - 7 - 3);  // subnormal: m * 2^-9
    } else {
      v = std::ldexp(static_cast<float>(8 + man), exp - 7 - 3);  // 1.mmm * 2^(e - 7)
    }
    t[code] = sign ? -v : v;
  }
  return t;
}

}  // namespace

const std::array<float, 256>& fp8_table(Fp8 format) {
  static const std::array<float, 256> fn = make_e4m3_table(false);
  static const std::array<float, 256> ieee = make_e4m3_table(true);
  return format == Fp8::kE4M3FN ? fn : ieee;
}

std::uint8_t encode_e4m3fn(float x) {
  // Codes 0x00..0x7E hold the non-negative finite values in increasing order; find the first
  // one >= |x| by bisection, then pick the nearer of it and the one below (even code on a tie).
  const auto& t = fp8_table(Fp8::kE4M3FN);
  const float a = std::fabs(x);
  const std::uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
  if (a >= t[0x7E]) return sign | 0x7E;  // saturate at 448
  int lo = 0, hi = 0x7E;                  // t[hi] >= a
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    if (t[mid] >= a) hi = mid; else lo = mid + 1;
  }
  int code = hi;
  if (code > 0 && t[code] != a) {
    const float up = t[code] - a, down = a - t[code - 1];  // exact: both are fp32 differences of nearby values
    if (down < up || (down == up && (code - 1) % 2 == 0)) code -= 1;
  }
  return static_cast<std::uint8_t>(sign | code);
}

float e8m0_value(std::uint8_t code) {
  if (code == 0xFF) return std::numeric_limits<float>::quiet_NaN();
  // 2^-127 is an fp32 subnormal (0x00400000): ldexp gives it exactly.
  return std::ldexp(1.0f, static_cast<int>(code) - 127);
}

float e2m1_value(std::uint8_t code) {
  const int exp = (code >> 1) & 0x3, man = code & 0x1;
  const float magnitude = exp == 0 ? 0.5f * static_cast<float>(man) : std::ldexp(1.0f + 0.5f * static_cast<float>(man), exp - 1);
  return (code & 0x8) != 0 ? -magnitude : magnitude;
}

float bf16_value(std::uint16_t bits) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
}

float f16_value(std::uint16_t bits) {
  const int sign = bits >> 15, exp = (bits >> 10) & 0x1F, man = bits & 0x3FF;
  float v;
  if (exp == 0x1F) {
    v = man == 0 ? std::numeric_limits<float>::infinity() : std::numeric_limits<float>::quiet_NaN();
  } else if (exp == 0) {
    v = std::ldexp(static_cast<float>(man), -24);  // subnormal: m * 2^(1 - 15 - 10)
  } else {
    v = std::ldexp(static_cast<float>(1024 + man), exp - 25);  // 1.m * 2^(e - 15)
  }
  return sign ? -v : v;
}

}  // namespace digits
