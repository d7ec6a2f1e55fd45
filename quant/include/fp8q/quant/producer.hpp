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
  kModelOpt,           // NVIDIA ModelOpt's FP8 and NVFP4 exports: mtq.quantize + export_hf_checkpoint, on a CPU
  kModelOptCuda,       // the same run on a CUDA device, where torch divides by a Python number by
                       // multiplying by its fp32 reciprocal (what GPU-made exports hold)
};
// "fp8q", "compressed-tensors", "modelopt", "modelopt-cuda"
std::optional<Producer> parse_producer(std::string_view name);
std::string_view producer_name(Producer p);

// A producer's FP8 weight quantizer on the blocks of `grid` over `data` (elements of `from`:
// f32, bf16 or f16, row-major), nearest-even at each step; D is the weight's dtype:
//   compressed-tensors (its FP8, FP8_DYNAMIC and FP8_BLOCK presets; tensor, row or block):
//     scale_inv = D(fp32(amax / 448)), or torch.finfo(D).eps where that is 0
//     q         = e4m3fn(D(fp32(x / scale_inv)))   saturating at 448
//   ModelOpt (FP8_DEFAULT_CFG per tensor: `per_tensor`; FP8_PER_CHANNEL_PER_TOKEN_CFG and
//   FP8_2D_BLOCKWISE_WEIGHT_ONLY_CFG per row and 128x128 block):
//     scale_inv = fp32(amax / 448), on CUDA fp32(amax * fp32(1 / 448)), kept in fp32
//     per tensor: q = e4m3fn(D(fp32(x / scale_inv))), NaN beyond 448 (the scale is a 0-dim
//                 tensor, so the quotient takes x's dtype); an all-zero tensor (scale 0, for
//                 which ModelOpt writes NaN codes) is refused
//     per row or block: q = e4m3fn(fp32(x / scale_inv)); an all-zero block's scale is 1
// codes: grid.rows * grid.cols; scale_inv: one per block. The same bits for any thread count and
// FP environment.
void quantize_like_producer(Producer producer, std::span<const std::byte> data, const Format& from,
                            const BlockGrid& grid, bool per_tensor, std::span<std::uint8_t> codes,
                            std::span<float> scale_inv, const BulkOptions& bulk = {});

// A producer's NVFP4 weight quantizer (blocks of 16 along the rows of `grid`, a block1x16
// grid), every operation one fp32 nearest-even rounding but where D (the weight's dtype) is named:
//   ModelOpt (NVFP4_DEFAULT_CFG, NVFP4QTensor.quantize):
//     global = fp32(amax / 2688)                    its weight_scale_2, a multiplier; on CUDA
//                                                   fp32(amax * fp32(1 / 2688))
//     s_b    = e4m3fn(clamp(fp32(amax_b / fp32(6 * global)) or 1 where 0, 2^-9, 448))
//     d_b    = fp32(decode(s_b) * global)
//   compressed-tensors (NVFP4 / NVFP4A16: generate_gparam, calculate_qparams, quantize):
//     global = D(D(1 / max(amax, D's smallest normal)) * 2688), 1 where Inf
//                                                   its weight_global_scale, a divisor
//     s_b    = e4m3fn(fp32(global * D(amax_b / 6))) saturating, 0.125 where that is 0
//     d_b    = fp32(decode(s_b) / global)
// then q = e2m1(fp32(x / d_b)), nearest-even, saturating at 6, with the code of +0 for a quotient
// of -0 (both producers take the sign from x / d_b < 0). An amax that is NaN, Inf or (ModelOpt)
// 0, or a d_b of 0, is refused: the producer writes NaN or Inf there. codes: one e2m1 code a
// byte (unpacked); scales: one per block. `given`: the global scale used in place of the
// tensor's own (a fused group's: see nvfp4_global_like_producer); finite and positive. The same
// bits for any thread count and FP environment.
void quantize_nvfp4_like_producer(Producer producer, std::span<const std::byte> data, const Format& from,
                                  const BlockGrid& grid, std::span<std::uint8_t> codes, std::span<std::uint8_t> scales,
                                  float& global, std::optional<float> given = std::nullopt,
                                  const BulkOptions& bulk = {});

// The global scale above of a D tensor whose amax is `amax`, with the same refusals. The layers
// a server fuses (q, k, v; gate, up) share one: compressed-tensors gives them the smallest of
// theirs (llm-compressor's update_fused_layer_weight_global_scales), ModelOpt the one of their
// concatenation (the largest weight_scale_2).
float nvfp4_global_like_producer(Producer producer, float amax, const Format& from);

}  // namespace fp8q
