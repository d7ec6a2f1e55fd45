// modelopt-fp8: NVIDIA ModelOpt's FP8 export (quant_algo "FP8", its unified Hugging Face
// checkpoint, what its FP8 releases ship), read as a quantized input; fp8q does not write it.
//
// Public definition (checked against ModelOpt 0.47 export/unified_export_hf.py and
// export/quant_utils.py to_quantized_weight, whose FP8 weight is (w / weight_scale) cast to
// float8_e4m3fn, and vLLM's ModelOpt loader, layers/quantization/modelopt.py ModelOptFp8LinearMethod):
//   <module>.weight        F8_E4M3 (OCP e4m3fn) [out, in]
//   <module>.weight_scale  F32 [] or [1]: the tensor's multiplier s = amax / 448, x = q * s
//   <module>.input_scale   F32: the activations' static scale (not converted)
//   <k_proj>.k_scale, <v_proj>.v_scale  F32: the FP8 KV cache's scales (kv_cache_quant_algo
//                          "FP8"; not converted)
// hf_quant_config.json {"quantization": {"quant_algo": "FP8", "exclude_modules": [...]}}, or
// config.json quantization_config {"quant_method": "modelopt", "quant_algo": "FP8", ...}.
#include <cstring>

#include "layouts/common.hpp"
#include "layouts/registry.hpp"
#include "safetensors/text.hpp"

namespace fp8q::checkpoint::layouts {
namespace {

class ModeloptFp8 final : public ReadOnlyLayout {
 public:
  std::string_view name() const override { return "modelopt-fp8"; }
  std::string_view summary() const override {
    return "NVIDIA ModelOpt FP8 (read only): e4m3fn weight, one F32 weight_scale per tensor";
  }
  std::vector<TensorSpec> plan(const WeightRef& w, const LayoutOptions&) const override {
    return {{w.module + ".weight", DType::kF8_E4M3, w.shape}, {w.module + ".weight_scale", DType::kF32, {}}};
  }
  DequantView read_back(const std::string& module, const std::vector<std::uint64_t>& shape, const TensorLookup& lookup,
                        const LayoutOptions&) const override {
    const std::size_t rows = shape[0], cols = shape[1];
    const StoredTensor q = require(lookup, module + ".weight", DType::kF8_E4M3, shape);
    const float scale = positive_scalar_scale(lookup, module + ".weight_scale");
    std::vector<std::uint8_t> codes(rows * cols);
    std::memcpy(codes.data(), q.bytes.data(), codes.size());
    return grid_view(FormatId::kE4M3FN, rows, cols, std::move(codes), block_grid(Granularity::tensor(), {rows, cols}),
                     {scale});
  }
  std::vector<std::string> companion_names(const std::string& module) const override {
    return {module + ".weight_scale", module + ".input_scale", module + ".k_scale", module + ".v_scale"};
  }
};

}  // namespace

const Layout& modelopt_fp8_layout() {
  static const ModeloptFp8 layout;
  return layout;
}

}  // namespace fp8q::checkpoint::layouts
