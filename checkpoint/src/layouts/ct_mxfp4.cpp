// ct-mxfp4: compressed-tensors "mxfp4-pack-quantized", preset MXFP4A16 (weights only).
//
// Public definition (checked against compressed-tensors 0.20.1: quantization/quant_scheme.py
// preset MXFP4A16 (weights: num_bits 4, type float, strategy group, group_size 32, symmetric,
// static, scale_dtype torch.uint8); compressors/mxfp4/base.py MXFP4PackedCompressor (the NVFP4
// packing, E8M0 scales); compressors/mx_utils.py decompress_mx_scale; quantization/utils/
// mxfp_utils.py generate_mx_scales / round_to_power_2):
//   <module>.weight_packed  U8 [out, in / 2]: e2m1 codes, element 2i in bits 0-3
//   <module>.weight_scale   U8 [out, in / 32]: E8M0 (x ~= q * 2^(code - 127))
// The scale rule is compressed-tensors' MX rule with e2m1's offset: the group's amax is rounded
// to a power of two by adding a quarter of its binade and truncating the mantissa (amax >=
// 1.75 * 2^k gives 2^(k+1)), then code = 127 + log2(that power) - 2 (2 = floor(log2(6))),
// clamped to [0, 254]: the `compressed-tensors` MX rule (docs/numerics.md section 5). Elements:
// q = e2m1(x * 2^-(code - 127)), nearest-even, saturating. The input dimension must be a
// multiple of 32; other weights are kept in high precision and listed in "ignore".
#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "fp8q/quant/quantized_tensor.hpp"
#include "fp8q/quant/scale_rules.hpp"
#include "layouts/common.hpp"
#include "layouts/registry.hpp"

namespace fp8q::checkpoint::layouts {
namespace {

class CtMxfp4 final : public Layout {
 public:
  std::string_view name() const override { return "ct-mxfp4"; }
  std::string_view summary() const override {
    return "compressed-tensors mxfp4-pack-quantized (MXFP4A16): packed e2m1 weight_packed, U8 E8M0 weight_scale per "
           "32 along the input axis";
  }
  void check_options(const LayoutOptions& o) const override {
    if (o.granularity) throw std::invalid_argument("ct-mxfp4 always uses groups of 32 (MX); --granularity does not apply");
    if (o.pack) throw std::invalid_argument("--pack applies to --layout trn3-mx only");
  }
  std::optional<std::string> cannot_quantize(const std::vector<std::uint64_t>& shape, const LayoutOptions&) const override {
    if (shape[1] % 32 != 0) return "in_features " + std::to_string(shape[1]) + " is not a multiple of 32";
    return std::nullopt;
  }
  std::vector<TensorSpec> plan(const WeightRef& w, const LayoutOptions&) const override {
    return {{w.module + ".weight_packed", DType::kU8, {w.shape[0], w.shape[1] / 2}},
            {w.module + ".weight_scale", DType::kU8, {w.shape[0], w.shape[1] / 32}}};
  }
  QuantizedWeight quantize(const WeightRef& w, const LayoutOptions& o) const override {
    static const Pow2ScaleTable table = mx_scale_table(kE2M1, MxScaleRule::kCompressedTensors);
    const std::size_t rows = w.shape[0], cols = w.shape[1];
    MxQuantized q = quantize_mx(w.data, source_format(w.dtype), rows, cols, table, o, kE2M1);
    std::vector<std::uint8_t> packed(q.codes.size() / 2);
    pack_fp4(q.codes, packed);
    const auto specs = plan(w, o);
    QuantizedWeight out;
    out.tensors.push_back({specs[0], to_bytes(packed)});
    out.tensors.push_back({specs[1], to_bytes(q.scales)});
    out.view = mx_view(FormatId::kE2M1, rows, cols, std::move(q.codes), std::move(q.scales));
    return out;
  }
  DequantView read_back(const std::string& module, const std::vector<std::uint64_t>& shape, const TensorLookup& lookup,
                        const LayoutOptions&) const override {
    const std::size_t rows = shape[0], cols = shape[1];
    const StoredTensor q = require(lookup, module + ".weight_packed", DType::kU8, {rows, cols / 2});
    const StoredTensor s = require(lookup, module + ".weight_scale", DType::kU8, {rows, cols / 32});
    std::vector<std::uint8_t> codes(rows * cols), scales(s.bytes.size());
    unpack_fp4({reinterpret_cast<const std::uint8_t*>(q.bytes.data()), q.bytes.size()}, codes);
    std::memcpy(scales.data(), s.bytes.data(), scales.size());
    return mx_view(FormatId::kE2M1, rows, cols, std::move(codes), std::move(scales));
  }
  std::vector<std::string> companion_names(const std::string& module) const override {
    return {module + ".weight_packed", module + ".weight_scale"};
  }
  std::string quantization_config(const ConfigContext& c) const override {
    // preset MXFP4A16; scale_dtype needs 0.15.0 (releases before it forbid the key)
    const auto weights = ct_quantization_args({.num_bits = 4, .strategy = "group", .dynamic = false, .group_size = 32,
                                               .block = std::nullopt, .scale_dtype = "torch.uint8",
                                               .observer = "memoryless_minmax"});
    return compressed_tensors_config(weights, nullptr, "mxfp4-pack-quantized", c.kept_linear_modules, "0.15.0");
  }
};

}  // namespace

const Layout& ct_mxfp4_layout() {
  static const CtMxfp4 layout;
  return layout;
}

}  // namespace fp8q::checkpoint::layouts
