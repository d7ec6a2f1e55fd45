// fp8q/quant/recipes/block_scaling.hpp: block scaling as DeepSeek-V3 trains and stores it
// (Transformer Engine's Float8BlockScaling): activations and gradients in 1 x 128 blocks along
// the last axis, weights in 128 x 128 blocks, edge blocks partial. Per block (quantized_tensor.hpp):
//   divide (the default, as DeepSeek-V3): scale_inv = fp32(amax / max), q = convert(fp32(x / scale_inv))
//   multiply:                             scale = fp32(max / amax),     q = convert(fp32(x * scale))
// with `options` (margin, power of two) and the role's format. No state between steps.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "fp8q/quant/quantized_tensor.hpp"
#include "fp8q/quant/recipes/roles.hpp"

namespace fp8q {

struct BlockScaling {
  RoleFormats formats = RoleFormats::e4m3();  // DeepSeek-V3: e4m3 for every tensor
  std::size_t block = 128;                    // 1 x block for activations/gradients, block x block for weights
  ScaleOp apply = ScaleOp::kDivide;
  AmaxScaleOptions options{};
  ConvertOptions convert{};                   // rounding, overflow (saturating by default)

  Granularity granularity(TensorRole role) const {
    return role == TensorRole::kWeight ? Granularity::block(block, block) : Granularity::block(1, block);
  }
  QuantizeOptions quantize_options(TensorRole role, int threads = 1) const;
  // `data`: fp32, bf16 or fp16 elements (`from`) of a tensor of `shape`.
  QuantizedTensor quantize(std::span<const std::byte> data, const Format& from, std::span<const std::uint64_t> shape,
                           TensorRole role, int threads = 1) const;
};

}  // namespace fp8q
