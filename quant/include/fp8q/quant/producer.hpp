// fp8q/quant/producer.hpp: whose quantizer fp8q reproduces, bit for bit (docs/checkpoints.md,
// "Producer presets"). fp8q's own rounds each value once; a producer's preset repeats that
// producer's arithmetic, roundings included.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "fp8q/numerics/block_scaled.hpp"
#include "fp8q/numerics/bulk.hpp"
#include "fp8q/numerics/format.hpp"

namespace fp8q {

enum class Producer : std::uint8_t {
  kFp8q,
  kCompressedTensors,  // compressed-tensors' calculate_qparams + quantize, what llm-compressor writes
};
std::optional<Producer> parse_producer(std::string_view name);  // "fp8q", "compressed-tensors"
std::string_view producer_name(Producer p);

// compressed-tensors' FP8 weight quantizer (its FP8, FP8_DYNAMIC and FP8_BLOCK presets) on the
// blocks of `grid` over `data` (elements of `from`: f32, bf16 or f16, row-major), computing in
// the weight's dtype D as torch does:
//   scale_inv = D(fp32(amax / 448)), or torch.finfo(D).eps where that is 0
//   q         = e4m3fn(D(fp32(x / scale_inv)))   nearest-even at each step, saturating at 448
// For D = f32 that is fp8q's own divide form but for the eps of an all-zero block. codes:
// grid.rows * grid.cols; scale_inv: one per block. The same bits for any thread count and FP
// environment.
void quantize_like_compressed_tensors(std::span<const std::byte> data, const Format& from, const BlockGrid& grid,
                                      std::span<std::uint8_t> codes, std::span<float> scale_inv,
                                      const BulkOptions& bulk = {});

}  // namespace fp8q
