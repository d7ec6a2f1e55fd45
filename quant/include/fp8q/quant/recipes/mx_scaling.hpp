// fp8q/quant/recipes/mx_scaling.hpp: MX block scaling (OCP MX v1.0; Transformer Engine's
// MXFP8BlockScaling; Trainium3's quantize_mx). Blocks of 32 along the last axis, one E8M0
// scale each, chosen from the block's amax by `rule`:
//   e = rule(amax) (scale_rules.hpp), q = convert(fp32(x * 2^-e)), block of NaN/Inf: scale 0xFF
// The element format comes from the tensor's role (MXFP8: e4m3fn for every tensor by default,
// as Transformer Engine; set gradient to e5m2 for the hybrid choice, or e2m1 / fp6 formats
// for MXFP4 / MXFP6). No state between steps.
#pragma once

#include <cstdint>
#include <span>

#include "fp8q/quant/quantized_tensor.hpp"
#include "fp8q/quant/recipes/roles.hpp"

namespace fp8q {

struct MxScaling {
  RoleFormats formats = RoleFormats::e4m3();
  MxScaleRule rule = MxScaleRule::kFloor;  // OCP; kRceil for Transformer Engine, kTrainium3 for NKI
  ConvertOptions convert{};                // nearest-even (or stochastic for gradients), saturating

  static MxScaling ocp() { return {}; }
  static MxScaling transformer_engine() { return {RoleFormats::e4m3(), MxScaleRule::kRceil, {}}; }
  static MxScaling trainium3() { return {RoleFormats::e4m3(), MxScaleRule::kTrainium3, {}}; }

  QuantizeOptions quantize_options(TensorRole role, int threads = 1) const;
  QuantizedTensor quantize(std::span<const std::byte> data, const Format& from, std::span<const std::uint64_t> shape,
                           TensorRole role, int threads = 1) const;
};

}  // namespace fp8q
