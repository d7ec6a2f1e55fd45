// The arrays every suite measures on: N(0, 1) activations as fp32 and bf16, kArrayBytes each.
#pragma once

#include <cstdint>
#include <vector>

namespace fp8q::bench {

// A scale that maps ~8 sigma of N(0, 1) to e4m3fn's 448: the mix of normal, subnormal and
// saturated values a real activation tensor gives.
inline constexpr float kScale = 56.0f;

const std::vector<float>& f32_data();
const std::vector<std::uint16_t>& bf16_data();

}  // namespace fp8q::bench
