// ct-mxfp8: compressed-tensors "mxfp8-quantized".
//
// Public definition (checked against compressed-tensors: quantization/quant_scheme.py preset
// MXFP8 (weights: num_bits 8, type float, strategy group, group_size 32, symmetric, static,
// scale_dtype torch.uint8); config/base.py CompressionFormat.mxfp8_quantized;
// quantization/utils/mxfp4_utils.py generate_mx_scales / round_to_power_2):
//   <module>.weight        F8_E4M3 (e4m3fn) [out, in]
//   <module>.weight_scale  U8 [out, in / 32]: E8M0 (biased exponent, x ~= q * 2^(code - 127))
// The scale rule is compressed-tensors' own, not OCP's floor: the group's amax is rounded to a
// power of two by adding a quarter of its binade and truncating the mantissa (so amax >= 1.75 *
// 2^k rounds up to 2^(k+1)), then code = 127 + log2(that power) - 8 (8 = floor(log2(448))),
// clamped to [0, 254] (a zero group gets code 0). Elements: q = e4m3fn(x * 2^-(code-127)),
// nearest-even, saturating. A group never saturates: its max lands in [224, 448).
// The last dimension must be a multiple of 32 (the library reshapes into groups of 32);
// other weights are kept in high precision and listed in "ignore".
#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "fp8q/quant/scale_rules.hpp"
#include "layouts/common.hpp"
#include "layouts/registry.hpp"

namespace fp8q::checkpoint::layouts {

namespace {

class CtMxfp8 final : public Layout {
 public:
  std::string_view name() const override { return "ct-mxfp8"; }
  std::string_view summary() const override {
    return "compressed-tensors mxfp8-quantized: e4m3fn weight, U8 E8M0 weight_scale per 32 along the input axis";
  }
  void check_options(const LayoutOptions& o) const override {
    if (o.granularity) throw std::invalid_argument("ct-mxfp8 always uses groups of 32 (MX); --granularity does not apply");
    if (o.pack) throw std::invalid_argument("--pack applies to --layout trn3-mx only");
  }
  std::optional<std::string> cannot_quantize(const std::vector<std::uint64_t>& shape, const LayoutOptions&) const override {
    if (shape[1] % 32 != 0) return "in_features " + std::to_string(shape[1]) + " is not a multiple of 32";
    return std::nullopt;
  }
  std::vector<TensorSpec> plan(const WeightRef& w, const LayoutOptions&) const override {
    return {{w.module + ".weight", DType::kF8_E4M3, w.shape},
            {w.module + ".weight_scale", DType::kU8, {w.shape[0], w.shape[1] / 32}}};
  }
  QuantizedWeight quantize(const WeightRef& w, const LayoutOptions& o) const override {
    static const Pow2ScaleTable table = mx_scale_table(kE4M3FN, MxScaleRule::kCompressedTensors);
    const std::size_t rows = w.shape[0], cols = w.shape[1];
    MxQuantized q = quantize_mx(w.data, source_format(w.dtype), rows, cols, table, o);
    QuantizedWeight out;
    out.view = mx_view(FormatId::kE4M3FN, rows, cols, std::move(q.codes), std::move(q.scales));
    out.tensors = store(w, out.view, o);
    return out;
  }
  std::vector<OutputTensor> store(const WeightRef& w, const DequantView& v, const LayoutOptions& o) const override {
    require_mx_view(v, FormatId::kE4M3FN, w.shape[0], w.shape[1], name());
    const auto specs = plan(w, o);
    return {{specs[0], to_bytes(v.codes)}, {specs[1], to_bytes(v.e8m0)}};
  }
  DequantView read_back(const std::string& module, const std::vector<std::uint64_t>& shape, const TensorLookup& lookup,
                        const LayoutOptions&) const override {
    const std::size_t rows = shape[0], cols = shape[1];
    const StoredTensor q = require(lookup, module + ".weight", DType::kF8_E4M3, shape);
    const StoredTensor s = require(lookup, module + ".weight_scale", DType::kU8, {rows, cols / 32});
    std::vector<std::uint8_t> codes(rows * cols), scales(s.bytes.size());
    std::memcpy(codes.data(), q.bytes.data(), codes.size());
    std::memcpy(scales.data(), s.bytes.data(), scales.size());
    return mx_view(FormatId::kE4M3FN, rows, cols, std::move(codes), std::move(scales));
  }
  std::vector<std::string> companion_names(const std::string& module) const override {
    return {module + ".weight_scale"};
  }
  std::string quantization_config(const ConfigContext& c) const override {
    auto args = [](bool dynamic) {
      return ct_quantization_args({.num_bits = 8, .strategy = "group", .dynamic = dynamic, .group_size = 32,
                                   .block = std::nullopt, .scale_dtype = "torch.uint8",
                                   .observer = dynamic ? nullptr : "memoryless_minmax"});
    };
    // preset MXFP8: dynamic MX activations
    // 0.15.0: the first release with CompressionFormat.mxfp8_quantized (config/base.py)
    return compressed_tensors_config(args(false), args(true), "mxfp8-quantized", c.kept_linear_modules, "0.15.0");
  }
};

}  // namespace

const Layout& ct_mxfp8_layout() {
  static const CtMxfp8 layout;
  return layout;
}

}  // namespace fp8q::checkpoint::layouts
