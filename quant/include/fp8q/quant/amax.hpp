// fp8q/quant/amax.hpp: the largest |x| of a tensor (or of a slice of it).
//
// Computed on bit patterns: for non-negative floats the integer order is the value order,
// and NaN patterns sort above Inf, so a NaN anywhere makes the amax NaN (as torch.amax
// does), never a silently smaller number. Max is associative, so the result is the same for
// any thread count and split; no FP environment can change it.
#pragma once

#include <cstdint>
#include <span>

namespace fp8q {

float amax(std::span<const float> x, int threads = 1);
// bf16 codes; the result is the exact fp32 value of the largest |x|.
float amax_bf16(std::span<const std::uint16_t> x, int threads = 1);

}  // namespace fp8q
