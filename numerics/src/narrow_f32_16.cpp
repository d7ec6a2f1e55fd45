#include "narrow_f32_16.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace fp8q::detail {

bool f32_to_bf16_path(const Format& from, const Format& to, const ConvertOptions& o) {
  return from == kF32 && to == kBF16 && o.rounding == Rounding::kNearestEven && !o.scale;
}

bool f32_to_f16_path(const Format& from, const Format& to, const ConvertOptions& o) {
  return from == kF32 && to == kF16 && o.rounding == Rounding::kNearestEven && !o.scale;
}

void f32_to_bf16_rne(const std::byte* in, std::byte* out, std::size_t n, bool saturate) {
  const std::uint32_t inf = saturate ? 0x7F7Fu : 0x7F80u;
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t u;
    std::memcpy(&u, in + 4 * i, 4);
    const std::uint32_t sign = (u >> 16) & 0x8000u, mag = u & 0x7FFFFFFFu;
    std::uint32_t r = (mag + 0x7FFFu + ((mag >> 16) & 1u)) >> 16;  // at most 0x7F80 for a non-NaN
    r = r == 0x7F80u ? inf : r;
    r = mag > 0x7F800000u ? 0x7FC0u : r;
    const auto b = static_cast<std::uint16_t>(sign | r);
    std::memcpy(out + 2 * i, &b, 2);
  }
}

void f32_to_f16_rne(const std::byte* in, std::byte* out, std::size_t n, bool saturate) {
  const std::uint32_t inf = saturate ? 0x7BFFu : 0x7C00u;
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t u;
    std::memcpy(&u, in + 4 * i, 4);
    const std::uint32_t sign = (u >> 16) & 0x8000u, mag = u & 0x7FFFFFFFu;
    const std::uint32_t normal = (mag - 0x38000000u + 0xFFFu + ((mag >> 13) & 1u)) >> 13;
    // 14 <= s: every fp32 below 2^-14; 31 sends fp32's own subnormals (and anything below 2^-25) to 0
    const auto s = static_cast<std::uint32_t>(std::clamp(126 - static_cast<int>(mag >> 23), 14, 31));
    const std::uint32_t m = (mag & 0x7FFFFFu) | 0x800000u;
    const std::uint32_t sub = (m + (1u << (s - 1)) - 1u + ((m >> s) & 1u)) >> s;
    std::uint32_t r = mag < 0x38800000u ? sub : normal;
    r = mag >= 0x477FF000u ? inf : r;
    r = mag > 0x7F800000u ? 0x7E00u : r;
    const auto h = static_cast<std::uint16_t>(sign | r);
    std::memcpy(out + 2 * i, &h, 2);
  }
}

}  // namespace fp8q::detail
