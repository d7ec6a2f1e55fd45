// modelopt-fp8: NVIDIA ModelOpt's FP8 exports (its unified Hugging Face checkpoint; quant_algo
// "FP8" is what its FP8 releases ship), read as a quantized input; fp8q does not write them.
//
// Public definition (checked against ModelOpt 0.47 export/unified_export_hf.py and
// export/quant_utils.py to_quantized_weight, whose FP8 weight is (w / weight_scale) cast to
// float8_e4m3fn, and vLLM's ModelOpt loader, layers/quantization/modelopt.py ModelOptFp8LinearMethod):
//   <module>.weight        F8_E4M3 (OCP e4m3fn) [out, in]
//   <module>.weight_scale  F32 multipliers, x = q * s, by quant_algo (LayoutOptions::granularity):
//                          "FP8": [] or [1], one per tensor (amax / 448);
//                          "FP8_PER_CHANNEL_PER_TOKEN": [out], one per output channel;
//                          "fp8_pb_wo": [ceil(out/128), 1, ceil(in/128), 1], one per 128x128 block
//   <module>.input_scale   F32: the activations' static scale (not converted)
//   <k_proj>.k_scale, <v_proj>.v_scale  F32: the FP8 KV cache's scales (kv_cache_quant_algo
//                          "FP8"; not converted)
// hf_quant_config.json {"quantization": {"quant_algo": "FP8", "exclude_modules": [...]}}, or
// config.json quantization_config {"quant_method": "modelopt", "quant_algo": "FP8", ...}.
#include <cstring>

#include "fp8q/numerics/convert.hpp"
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
  std::vector<TensorSpec> plan(const WeightRef& w, const LayoutOptions& o) const override {
    return {{w.module + ".weight", DType::kF8_E4M3, w.shape}, {w.module + ".weight_scale", DType::kF32, scale_shape(w.shape, o)}};
  }
  DequantView read_back(const std::string& module, const std::vector<std::uint64_t>& shape, const TensorLookup& lookup,
                        const LayoutOptions& o) const override {
    const std::size_t rows = shape[0], cols = shape[1];
    const StoredTensor q = require(lookup, module + ".weight", DType::kF8_E4M3, shape);
    const Granularity g = o.granularity.value_or(Granularity::tensor());
    std::vector<float> scales;
    if (g == Granularity::tensor()) {
      scales = {positive_scalar_scale(lookup, module + ".weight_scale")};
    } else {
      const std::string name = module + ".weight_scale";
      scales = decode_scales(require(lookup, name, DType::kF32, scale_shape(shape, o)).bytes, DType::kF32);
      for (std::size_t i = 0; i < scales.size(); ++i)
        if (!is_finite_positive(scales[i]))
          throw FormatError("tensor " + detail::quote(name) + " element " + std::to_string(i) + " is " +
                            float_text(scales[i]) + ": a weight scale must be finite and positive");
    }
    std::vector<std::uint8_t> codes(rows * cols);
    std::memcpy(codes.data(), q.bytes.data(), codes.size());
    return grid_view(FormatId::kE4M3FN, rows, cols, std::move(codes), block_grid(g, {rows, cols}), std::move(scales));
  }
  std::vector<std::string> companion_names(const std::string& module) const override {
    return {module + ".weight_scale", module + ".input_scale", module + ".k_scale", module + ".v_scale"};
  }

 private:
  // The stored weight_scale's shape; a per-tensor scale may also be [1] (read_back accepts both).
  static std::vector<std::uint64_t> scale_shape(const std::vector<std::uint64_t>& w, const LayoutOptions& o) {
    const Granularity g = o.granularity.value_or(Granularity::tensor());
    if (g == Granularity::row()) return {w[0]};
    if (g == Granularity::block(128, 128)) return {(w[0] + 127) / 128, 1, (w[1] + 127) / 128, 1};
    return {};
  }
};

}  // namespace

const Layout& modelopt_fp8_layout() {
  static const ModeloptFp8 layout;
  return layout;
}

}  // namespace fp8q::checkpoint::layouts
