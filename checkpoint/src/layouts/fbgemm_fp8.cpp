// fbgemm-fp8: FP8 weights with one F32 scale per output channel, as Transformers' FBGEMM FP8
// integration stores them (Llama 3.1 405B's FP8 release), read as a quantized input; fp8q does
// not write it.
//
// Public definition (checked against Transformers 5.24 integrations/fbgemm_fp8.py,
// FbgemmFp8Linear: `weight` float8_e4m3fn [out, in], `weight_scale` float32 [out, 1], the GEMM
// taking weight_scale as its per-row multiplier scale_b; quantizers/quantizer_fbgemm_fp8.py):
//   <module>.weight        F8_E4M3 (OCP e4m3fn) [out, in]
//   <module>.weight_scale  F32 [out, 1]: x = q * s per row
//   config.json "quantization_config": {"quant_method": "fbgemm_fp8", "activation_scale_ub":
//     1200.0, "modules_to_not_convert": [...]} (activations are quantized per row at run time,
//     their scales bounded by activation_scale_ub; nothing about them is stored).
// Transformers' 3-D Llama 4 experts under this method are not read.
#include <cstring>
#include <stdexcept>

#include "layouts/common.hpp"
#include "layouts/registry.hpp"

namespace fp8q::checkpoint::layouts {
namespace {

class FbgemmFp8 final : public ReadOnlyLayout {
 public:
  std::string_view name() const override { return "fbgemm-fp8"; }
  std::string_view summary() const override {
    return "Transformers FBGEMM FP8 (read only): e4m3fn weight, F32 weight_scale [out, 1] per output channel";
  }
  std::vector<TensorSpec> plan(const WeightRef& w, const LayoutOptions&) const override {
    return {{w.module + ".weight", DType::kF8_E4M3, w.shape}, {w.module + ".weight_scale", DType::kF32, {w.shape[0], 1}}};
  }
  DequantView read_back(const std::string& module, const std::vector<std::uint64_t>& shape, const TensorLookup& lookup,
                        const LayoutOptions&) const override {
    const std::size_t rows = shape[0], cols = shape[1];
    const StoredTensor q = require(lookup, module + ".weight", DType::kF8_E4M3, shape);
    const StoredTensor s = require(lookup, module + ".weight_scale", DType::kF32, {rows, 1});
    std::vector<std::uint8_t> codes(rows * cols);
    std::memcpy(codes.data(), q.bytes.data(), codes.size());
    return grid_view(FormatId::kE4M3FN, rows, cols, std::move(codes), block_grid(Granularity::row(), {rows, cols}),
                     decode_scales(s.bytes, DType::kF32));
  }
  std::vector<std::string> companion_names(const std::string& module) const override { return {module + ".weight_scale"}; }
};

}  // namespace

const Layout& fbgemm_fp8_layout() {
  static const FbgemmFp8 layout;
  return layout;
}

}  // namespace fp8q::checkpoint::layouts
