// ct-fp8: compressed-tensors "float-quantized" (what llm-compressor writes and vLLM loads).
//
// Public definition (checked against compressed-tensors: quantization/quant_scheme.py presets
// FP8, FP8_DYNAMIC, FP8_BLOCK; quantization/quant_args.py (the serialized QuantizationArgs
// fields); config/base.py CompressionFormat.float_quantized; the scale shapes its
// initialize_module_for_quantization gives each strategy):
//   <module>.weight        F8_E4M3 (e4m3fn) [out, in]
//   <module>.weight_scale  the input dtype (BF16/F16/F32; a converted weight: its model's), the
//                          dequantization multiplier:
//                            tensor [1], channel [out, 1], block [ceil(out/128), ceil(in/128)]
//   <module>.input_scale   the input dtype, [1]: only with static activation scales (--calib-data)
//   symmetric, so no zero point is stored.
//   block: only for W whose dimensions are multiples of 128; others stay in high precision, in
//   `ignore` (compressed-tensors 0.12 refuses a partial edge block).
// Scales: s = fp32(amax / 448) rounded UP to the input dtype (fp8q's choice: rounding to
// nearest could put a block's largest element above 448 and clip it), q = e4m3fn(fp32(x / s));
// with --like compressed-tensors, that library's own arithmetic (common.hpp).
// config.json "quantization_config": quant_method "compressed-tensors", format
// "float-quantized", quantization_status "compressed", one config group targeting Linear.
#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "fp8q/quant/scale_rules.hpp"
#include "layouts/common.hpp"
#include "layouts/registry.hpp"

namespace fp8q::checkpoint::layouts {
namespace {

using OJson = nlohmann::ordered_json;

// QuantizationArgs of FP8 without scale_dtype / zp_dtype: 0.12 and older forbid the keys.
OJson float8_args(const std::string& strategy, bool dynamic, std::optional<int> group_size,
                  std::optional<std::vector<std::size_t>> block, const char* observer) {
  return ct_quantization_args({.num_bits = 8, .strategy = strategy, .dynamic = dynamic, .group_size = group_size,
                               .block = std::move(block), .scale_dtype = std::nullopt, .observer = observer});
}

class CtFp8 final : public Layout {
 public:
  std::string_view name() const override { return "ct-fp8"; }
  std::string_view summary() const override {
    return "compressed-tensors float-quantized: e4m3fn weight, weight_scale per tensor/channel/128x128 block";
  }
  std::vector<Granularity> granularities() const override { return {Granularity::tensor(), Granularity::row(), kBlock128x128}; }
  void check_options(const LayoutOptions& o) const override {
    if (o.pack) throw std::invalid_argument("--pack applies to --layout trn3-mx only");
  }
  bool supports_input_scales() const override { return true; }
  static Granularity granularity(const LayoutOptions& o) { return weight_granularity(o, "ct-fp8"); }

  std::optional<std::string> cannot_quantize(const std::vector<std::uint64_t>& shape, const LayoutOptions& o) const override {
    return granularity(o) == kBlock128x128 ? partial_block_reason(shape) : std::nullopt;
  }
  std::vector<TensorSpec> plan(const WeightRef& w, const LayoutOptions& o) const override {
    std::vector<TensorSpec> s = {
        {w.module + ".weight", DType::kF8_E4M3, w.shape},
        {w.module + ".weight_scale", w.scale_dtype.value_or(w.dtype), scale_shape(granularity(o), w.shape[0], w.shape[1])}};
    if (w.input_amax) s.push_back({w.module + ".input_scale", w.scale_dtype.value_or(w.dtype), {1}});
    return s;
  }
  QuantizedWeight quantize(const WeightRef& w, const LayoutOptions& o) const override {
    const std::size_t rows = w.shape[0], cols = w.shape[1];
    const BlockGrid grid = block_grid(granularity(o), {rows, cols});
    DivideQuantized q = o.like == Producer::kCompressedTensors && !w.scale_dtype
                            ? quantize_divide_like_compressed_tensors(w, grid, o)
                            : quantize_divide(w, kE4M3FN, grid, w.scale_dtype.value_or(w.dtype), o);
    QuantizedWeight out;
    out.view = grid_view(FormatId::kE4M3FN, rows, cols, std::move(q.codes), q.grid, std::move(q.scale_inv));
    out.tensors = store(w, out.view, o);
    return out;
  }
  std::vector<OutputTensor> store(const WeightRef& w, const DequantView& v, const LayoutOptions& o) const override {
    require_grid_view(v, FormatId::kE4M3FN, block_grid(granularity(o), {w.shape[0], w.shape[1]}), name());
    const DType sd = w.scale_dtype.value_or(w.dtype);
    for (std::size_t b = 0; b < v.scale_inv.size(); ++b)
      if (round_up_to(sd, v.scale_inv[b]) != v.scale_inv[b])
        throw std::invalid_argument("scale " + std::to_string(b) + " is not exact in " + std::string(dtype_name(sd)));
    const auto specs = plan(w, o);
    std::vector<OutputTensor> out = {{specs[0], to_bytes(v.codes)}, {specs[1], encode_scales(v.scale_inv, sd)}};
    if (w.input_amax) {
      const float s = round_up_to(sd, scale_inv_from_amax(*w.input_amax, kE4M3FN));
      out.push_back({specs[2], encode_scales(std::span(&s, 1), sd)});
    }
    return out;
  }
  DequantView read_back(const std::string& module, const std::vector<std::uint64_t>& shape, const TensorLookup& lookup,
                        const LayoutOptions& o) const override {
    const std::size_t rows = shape[0], cols = shape[1];
    const StoredTensor q = require(lookup, module + ".weight", DType::kF8_E4M3, shape);
    const StoredTensor probe = lookup(module + ".weight_scale");
    if (probe.info == nullptr) throw FormatError("tensor \"" + module + ".weight_scale\" is missing");
    const DType sd = probe.info->dtype;
    if (sd != DType::kF32 && sd != DType::kBF16 && sd != DType::kF16)
      throw FormatError("tensor \"" + module + ".weight_scale\" has dtype " + std::string(dtype_name(sd)) +
                        "; compressed-tensors stores scales as F32, BF16 or F16");
    const StoredTensor s = require(lookup, module + ".weight_scale", sd, scale_shape(granularity(o), rows, cols));
    std::vector<std::uint8_t> codes(rows * cols);
    std::memcpy(codes.data(), q.bytes.data(), codes.size());
    return grid_view(FormatId::kE4M3FN, rows, cols, std::move(codes), block_grid(granularity(o), {rows, cols}),
                     decode_scales(s.bytes, sd));
  }
  std::vector<std::string> companion_names(const std::string& module) const override {
    return {module + ".weight_scale", module + ".input_scale"};
  }
  std::string quantization_config(const ConfigContext& c) const override {
    const Granularity g = granularity(c.options);
    OJson weights = g == kBlock128x128
                        ? float8_args("block", false, std::nullopt, std::vector<std::size_t>{kBlock, kBlock}, "memoryless_minmax")
                        : float8_args(std::string(ct_strategy(g)), false, std::nullopt, std::nullopt, "memoryless_minmax");
    OJson inputs;
    if (c.static_input_scales) {
      inputs = float8_args("tensor", false, std::nullopt, std::nullopt, "static_minmax");  // preset FP8
    } else if (g == kBlock128x128) {
      inputs = float8_args("group", true, 128, std::nullopt, nullptr);  // preset FP8_BLOCK
    } else {
      inputs = float8_args("token", true, std::nullopt, std::nullopt, nullptr);  // preset FP8_DYNAMIC
    }
    return compressed_tensors_config(weights, inputs, "float-quantized", c.kept_linear_modules, "0.13.0");
  }
};

}  // namespace

const Layout& ct_fp8_layout() {
  static const CtFp8 layout;
  return layout;
}

}  // namespace fp8q::checkpoint::layouts
