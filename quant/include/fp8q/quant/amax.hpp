// fp8q/quant/amax.hpp: the largest |x| of a tensor (or of a slice of it).
//
// Computed on bit patterns: for non-negative floats the integer order is the value order,
// and NaN patterns sort above Inf, so a NaN anywhere makes the amax NaN (as torch.amax
// does), never a silently smaller number. Max is associative, so the result is the same for
// any thread count and split; no FP environment can change it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "fp8q/numerics/block_scaled.hpp"
#include "fp8q/numerics/format.hpp"

namespace fp8q {

float amax(std::span<const float> x, int threads = 1);
// bf16 codes; the result is the exact fp32 value of the largest |x|.
float amax_bf16(std::span<const std::uint16_t> x, int threads = 1);

// The amax of every block of a row-major matrix of fp32, bf16 or fp16 elements (`from`),
// written row-major over the grid (out.size() == grid.grid_size()). Exact fp32 values.
void block_amax(std::span<const std::byte> in, const Format& from, const BlockGrid& grid, std::span<float> out,
                int threads = 1);

}  // namespace fp8q
