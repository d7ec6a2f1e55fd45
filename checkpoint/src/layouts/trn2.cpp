// trn2: FP8 for Trainium2, whose E4M3 is the IEEE-style format with range +/-240.
//
// What AWS documents (Neuron: NKI dtypes; neuronx-distributed "rescaling FP8 for Neuron"):
// Trainium2's float8_e4m3 has exponent 1111 reserved for Inf/NaN, so its largest finite value
// is 240 (OCP e4m3fn's is 448), and values beyond +/-240 become NaN on the device; OCP
// checkpoints must therefore be rescaled before Neuron can run them. No public checkpoint
// format for this exists, so the layout is fp8q's, modelled on ct-fp8:
//   <module>.weight        F8_E4M3 [out, in]: IEEE e4m3 codes, |value| <= 240. For every
//                          finite value <= 240 the e4m3 and e4m3fn bit patterns are the same,
//                          so a loader that reads the dtype as e4m3fn gets the same numbers; a
//                          NaN (only with --allow-nonfinite) is written as 0x7F / 0xFF, NaN
//                          in both formats.
//   <module>.weight_scale  F32: tensor [1], channel [out, 1] (default), block [ceil(out/128),
//                          ceil(in/128)]; s = fp32(amax / 240), q = e4m3(fp32(x / s)) RNE
//                          saturating at 240 (never the device's NaN); x ~= q * s.
//   block: only for W whose dimensions are multiples of 128 (others stay in high precision):
//   NxD's blockwise layer allocates floor(dim / 128) scales and accepts a dimension under 128
//   on the partition axis alone. NxD Inference renames weight_scale to scale on loading.
// What tells a loader this is not OCP e4m3fn: config.json quantization_config
// {"quant_method": "fp8q", "layout": "trn2", "fmt": "e4m3", "fp8_max": 240, ...} and the
// safetensors __metadata__ "fp8q.layout" = "trn2", "fp8q.weight_format" = "e4m3".
#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "layouts/common.hpp"
#include "layouts/registry.hpp"

namespace fp8q::checkpoint::layouts {
namespace {

using OJson = nlohmann::ordered_json;

class Trn2 final : public Layout {
 public:
  std::string_view name() const override { return "trn2"; }
  std::string_view summary() const override {
    return "Trainium2 FP8: IEEE e4m3 weight (range 240), F32 weight_scale per tensor/channel/128x128 block";
  }
  std::vector<Granularity> granularities() const override { return {Granularity::tensor(), Granularity::row(), kBlock128x128}; }
  void check_options(const LayoutOptions& o) const override {
    if (o.pack) throw std::invalid_argument("--pack applies to --layout trn3-mx only");
  }
  static Granularity granularity(const LayoutOptions& o) { return weight_granularity(o, "trn2"); }
  std::optional<std::string> cannot_quantize(const std::vector<std::uint64_t>& shape, const LayoutOptions& o) const override {
    return granularity(o) == kBlock128x128 ? partial_block_reason(shape) : std::nullopt;
  }
  std::vector<TensorSpec> plan(const WeightRef& w, const LayoutOptions& o) const override {
    return {{w.module + ".weight", DType::kF8_E4M3, w.shape},
            {w.module + ".weight_scale", DType::kF32, scale_shape(granularity(o), w.shape[0], w.shape[1])}};
  }
  QuantizedWeight quantize(const WeightRef& w, const LayoutOptions& o) const override {
    const std::size_t rows = w.shape[0], cols = w.shape[1];
    DivideQuantized q = quantize_divide(w, kE4M3, block_grid(granularity(o), {rows, cols}), DType::kF32, o);
    // e4m3's NaN (exponent 1111, mantissa != 0) as 0x7F/0xFF: NaN in e4m3 and in e4m3fn alike.
    // Saturation means 0x78 (Inf) never occurs.
    for (auto& c : q.codes)
      if ((c & 0x78) == 0x78) c = static_cast<std::uint8_t>(c | 0x7F);
    QuantizedWeight out;
    out.view = grid_view(FormatId::kE4M3, rows, cols, std::move(q.codes), q.grid, std::move(q.scale_inv));
    out.tensors = store(w, out.view, o);
    return out;
  }
  std::vector<OutputTensor> store(const WeightRef& w, const DequantView& v, const LayoutOptions& o) const override {
    require_grid_view(v, FormatId::kE4M3, block_grid(granularity(o), {w.shape[0], w.shape[1]}), name());
    const auto specs = plan(w, o);
    return {{specs[0], to_bytes(v.codes)}, {specs[1], encode_scales(v.scale_inv, DType::kF32)}};
  }
  DequantView read_back(const std::string& module, const std::vector<std::uint64_t>& shape, const TensorLookup& lookup,
                        const LayoutOptions& o) const override {
    const std::size_t rows = shape[0], cols = shape[1];
    const StoredTensor q = require(lookup, module + ".weight", DType::kF8_E4M3, shape);
    const StoredTensor s = require(lookup, module + ".weight_scale", DType::kF32,
                                   scale_shape(granularity(o), rows, cols));
    std::vector<std::uint8_t> codes(rows * cols);
    std::memcpy(codes.data(), q.bytes.data(), codes.size());
    return grid_view(FormatId::kE4M3, rows, cols, std::move(codes), block_grid(granularity(o), {rows, cols}),
                     decode_scales(s.bytes, DType::kF32));
  }
  std::vector<std::string> companion_names(const std::string& module) const override {
    return {module + ".weight_scale"};
  }
  std::string quantization_config(const ConfigContext& c) const override {
    const Granularity g = granularity(c.options);
    OJson j;
    j["quant_method"] = "fp8q";
    j["layout"] = "trn2";
    j["fmt"] = "e4m3";
    j["fp8_encoding"] = "ieee-e4m3: exponent 1111 is Inf/NaN, max finite 240 (Trainium2 float8_e4m3), not OCP e4m3fn";
    j["fp8_max"] = 240;
    j["weight_strategy"] = ct_strategy(g);
    if (g == kBlock128x128) j["weight_block_size"] = {kBlock, kBlock};
    j["weight_scale_name"] = "weight_scale";
    j["weight_scale_dtype"] = "float32";
    j["dequantize"] = "weight = float(weight) * weight_scale (per block)";
    j["activation_scheme"] = "dynamic";
    j["modules_to_not_convert"] = c.kept_linear_modules;
    return j.dump();
  }
};

}  // namespace

const Layout& trn2_layout() {
  static const Trn2 layout;
  return layout;
}

}  // namespace fp8q::checkpoint::layouts
