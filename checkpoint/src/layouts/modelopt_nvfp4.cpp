// modelopt-nvfp4: NVIDIA ModelOpt's NVFP4 export (its unified Hugging Face checkpoint), read as
// a quantized input; fp8q does not write it.
//
// Public definition (checked against vLLM's ModelOpt loader, layers/quantization/modelopt.py
// ModelOptNvFp4LinearMethod: create_weights and process_weights_after_loading, which folds
// weight_scale_2 into the GEMM's alpha = input_scale * weight_scale_2; ModelOpt's
// docs/source/deployment/3_unified_hf.rst for hf_quant_config.json):
//   <module>.weight          U8 [out, in / 2]: e2m1 codes, element 2i in bits 0-3
//   <module>.weight_scale    F8_E4M3 [out, in / 16]: the block scales s
//   <module>.weight_scale_2  F32 [] or [1]: the tensor's second-level multiplier S2 (amax / (6 * 448)),
//                            the reciprocal of compressed-tensors' weight_global_scale
//   <module>.input_scale     F32: the activations' static global scale (not converted)
// whose value is x = q * s * S2, each product exact in fp64. hf_quant_config.json:
// {"quantization": {"quant_algo": "NVFP4", "group_size": 16, "exclude_modules": [...]}}, or
// config.json quantization_config {"quant_method": "modelopt", "quant_algo": "NVFP4", ...}.
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "fp8q/numerics/convert.hpp"
#include "fp8q/quant/quantized_tensor.hpp"
#include "layouts/common.hpp"
#include "layouts/registry.hpp"
#include "safetensors/text.hpp"

namespace fp8q::checkpoint::layouts {
namespace {

class ModeloptNvfp4 final : public ReadOnlyLayout {
 public:
  std::string_view name() const override { return "modelopt-nvfp4"; }
  std::string_view summary() const override {
    return "NVIDIA ModelOpt NVFP4 (read only): U8 e2m1 weight, F8_E4M3 weight_scale per 16, F32 weight_scale_2";
  }
  std::vector<TensorSpec> plan(const WeightRef& w, const LayoutOptions&) const override {
    return {{w.module + ".weight", DType::kU8, {w.shape[0], w.shape[1] / 2}},
            {w.module + ".weight_scale", DType::kF8_E4M3, {w.shape[0], w.shape[1] / 16}},
            {w.module + ".weight_scale_2", DType::kF32, {}}};
  }
  DequantView read_back(const std::string& module, const std::vector<std::uint64_t>& shape, const TensorLookup& lookup,
                        const LayoutOptions&) const override {
    const std::size_t rows = shape[0], cols = shape[1];
    if (cols % 16 != 0)
      throw FormatError("tensor " + detail::quote(module + ".weight") + ": in_features " + std::to_string(cols) +
                        " is not a multiple of 16 (NVFP4 blocks)");
    const StoredTensor q = require(lookup, module + ".weight", DType::kU8, {rows, cols / 2});
    const StoredTensor s = require(lookup, module + ".weight_scale", DType::kF8_E4M3, {rows, cols / 16});
    const float s2 = positive_scalar_scale(lookup, module + ".weight_scale_2");
    std::vector<std::uint8_t> codes(rows * cols);
    unpack_fp4({reinterpret_cast<const std::uint8_t*>(q.bytes.data()), q.bytes.size()}, codes);
    std::vector<float> block(s.bytes.size());
    for (std::size_t b = 0; b < block.size(); ++b) {
      const auto byte = static_cast<std::uint8_t>(s.bytes[b]);
      if ((byte & 0x80) != 0 || (byte & 0x7F) == 0x7F)
        throw FormatError("tensor " + detail::quote(module + ".weight_scale") + " element " + std::to_string(b) +
                          " is a negative or NaN block scale (byte " + std::to_string(byte) + ")");
      block[b] = decode_f32(byte, kE4M3FN);
    }
    DequantView v = grid_view(FormatId::kE2M1, rows, cols, std::move(codes), block_grid(Granularity::nvfp4(), {rows, cols}),
                              std::move(block));
    v.global_scale = s2;
    return v;
  }
  std::vector<std::string> companion_names(const std::string& module) const override {
    return {module + ".weight_scale", module + ".weight_scale_2", module + ".input_scale", module + ".k_scale",
            module + ".v_scale"};
  }
};

}  // namespace

const Layout& modelopt_nvfp4_layout() {
  static const ModeloptNvfp4 layout;
  return layout;
}

}  // namespace fp8q::checkpoint::layouts
