// fp8q/quant/recipes/current_scaling.hpp: per-tensor current scaling (Transformer Engine's
// Float8CurrentScaling). Each tensor is scaled by its own amax, measured in the same step:
//   a = amax(x)                                        (quant/amax.hpp; NaN if x has a NaN)
//   scale = scale_from_amax(a, format(role), options)  (quant/scale_rules.hpp; 1 for 0/Inf/NaN)
//   q = convert(fp32(x * scale)), nearest-even, saturating   (multiply, as TE does)
//   scale_inv = fp32(1 / scale), correctly rounded     (what dequantization multiplies by)
// No state: two passes over the data (amax, then the cast).
#pragma once

#include <cstdint>
#include <span>

#include "fp8q/quant/recipes/roles.hpp"
#include "fp8q/quant/scale_rules.hpp"

namespace fp8q {

struct CurrentScaling {
  RoleFormats formats = RoleFormats::hybrid();
  AmaxScaleOptions options{};

  struct Result {
    float amax;
    float scale;
    float scale_inv;
  };

  // Quantizes x into codes (one byte each, format of `role`); codes.size() must equal
  // x.size(). NaN inputs become the format's NaN (e4m3fn 0x7F/0xFF, e5m2 0x7E/0xFE).
  Result quantize(std::span<const float> x, TensorRole role, std::span<std::uint8_t> codes, int threads = 1) const;
};

}  // namespace fp8q
