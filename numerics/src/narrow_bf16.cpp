#include "narrow_bf16.hpp"

#include <cstdint>
#include <cstring>

namespace fp8q::detail {

bool f32_to_bf16_path(const Format& from, const Format& to, const ConvertOptions& o) {
  return from == kF32 && to == kBF16 && o.rounding == Rounding::kNearestEven && !o.scale;
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

}  // namespace fp8q::detail
