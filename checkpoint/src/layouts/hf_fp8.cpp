// hf-fp8: DeepSeek-V3 / Hugging Face Transformers fine-grained FP8.
//
// Public definition (checked against: DeepSeek-V3's config.json and inference/kernel.py
// `weight_dequant` (y = x * s per 128 x 128 block), Transformers' FineGrainedFP8Config and
// integrations/finegrained_fp8.py, which load `weight` and `weight_scale_inv`):
//   <module>.weight            F8_E4M3 (OCP e4m3fn)  [out, in]
//   <module>.weight_scale_inv  F32                   [ceil(out/128), ceil(in/128)]
//     the dequantization multiplier of each 128 x 128 block (edge blocks partial):
//     s = fp32(amax / 448), q = e4m3fn(fp32(x / s)) nearest-even, saturating; x ~= q * s
//   A weight with a dimension that is not a multiple of 128 stays in high precision (listed in
//   modules_to_not_convert): Transformers' CPU path would misread its partial edge block.
//   config.json "quantization_config": {"quant_method": "fp8", "fmt": "e4m3",
//     "activation_scheme": "dynamic", "weight_block_size": [128, 128],
//     "modules_to_not_convert": [the linear layers left in high precision]}
#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "layouts/common.hpp"
#include "layouts/registry.hpp"

namespace fp8q::checkpoint::layouts {
namespace {

class HfFp8 final : public Layout {
 public:
  std::string_view name() const override { return "hf-fp8"; }
  std::string_view summary() const override {
    return "DeepSeek-V3 / Transformers fine-grained FP8: e4m3fn weight, F32 weight_scale_inv per 128x128 block";
  }
  std::vector<Granularity> granularities() const override { return {kBlock128x128}; }
  void check_options(const LayoutOptions& o) const override {
    if (o.granularity && *o.granularity != kBlock128x128)
      throw std::invalid_argument("hf-fp8 always uses 128x128 blocks (--granularity block128x128); --granularity " +
                                  granularity_name(*o.granularity) + " does not apply");
    if (o.pack) throw std::invalid_argument("--pack applies to --layout trn3-mx only");
  }
  std::optional<std::string> cannot_quantize(const std::vector<std::uint64_t>& shape, const LayoutOptions&) const override {
    return partial_block_reason(shape);
  }
  std::vector<TensorSpec> plan(const WeightRef& w, const LayoutOptions&) const override {
    return {{w.module + ".weight", DType::kF8_E4M3, w.shape},
            {w.module + ".weight_scale_inv", DType::kF32, scale_shape(kBlock128x128, w.shape[0], w.shape[1])}};
  }
  QuantizedWeight quantize(const WeightRef& w, const LayoutOptions& o) const override {
    const std::size_t rows = w.shape[0], cols = w.shape[1];
    DivideQuantized q = quantize_divide(w, kE4M3FN, block_grid(kBlock128x128, {rows, cols}), DType::kF32, o);
    QuantizedWeight out;
    out.view = grid_view(FormatId::kE4M3FN, rows, cols, std::move(q.codes), q.grid, std::move(q.scale_inv));
    out.tensors = store(w, out.view, o);
    return out;
  }
  std::vector<OutputTensor> store(const WeightRef& w, const DequantView& v, const LayoutOptions& o) const override {
    require_grid_view(v, FormatId::kE4M3FN, block_grid(kBlock128x128, {w.shape[0], w.shape[1]}), name());
    const auto specs = plan(w, o);
    return {{specs[0], to_bytes(v.codes)}, {specs[1], encode_scales(v.scale_inv, DType::kF32)}};
  }
  DequantView read_back(const std::string& module, const std::vector<std::uint64_t>& shape, const TensorLookup& lookup,
                        const LayoutOptions&) const override {
    const std::size_t rows = shape[0], cols = shape[1];
    const StoredTensor q = require(lookup, module + ".weight", DType::kF8_E4M3, shape);
    const StoredTensor s = require(lookup, module + ".weight_scale_inv", DType::kF32,
                                   scale_shape(kBlock128x128, rows, cols));
    std::vector<std::uint8_t> codes(rows * cols);
    std::memcpy(codes.data(), q.bytes.data(), codes.size());
    return grid_view(FormatId::kE4M3FN, rows, cols, std::move(codes), block_grid(kBlock128x128, {rows, cols}),
                     decode_scales(s.bytes, DType::kF32));
  }
  std::vector<std::string> companion_names(const std::string& module) const override {
    return {module + ".weight_scale_inv"};
  }
  std::string quantization_config(const ConfigContext& c) const override {
    nlohmann::ordered_json j;
    j["quant_method"] = "fp8";
    j["fmt"] = "e4m3";
    j["activation_scheme"] = "dynamic";
    j["weight_block_size"] = {kBlock, kBlock};
    j["modules_to_not_convert"] = c.kept_linear_modules;
    return j.dump();
  }
};

}  // namespace

const Layout& hf_fp8_layout() {
  static const HfFp8 layout;
  return layout;
}

}  // namespace fp8q::checkpoint::layouts
