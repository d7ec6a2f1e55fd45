// ct-nvfp4: compressed-tensors "nvfp4-pack-quantized", preset NVFP4A16 (weights only).
//
// Public definition (checked against compressed-tensors 0.20.1: quantization/quant_scheme.py
// preset NVFP4A16 (weights: num_bits 4, type float, strategy tensor_group, group_size 16,
// symmetric, static, scale_dtype torch.float8_e4m3fn); compressors/nvfp4/base.py
// NVFP4PackedCompressor; compressors/nvfp4/helpers.py unpack_fp4_from_uint8;
// quantization/lifecycle/forward_helpers.py _dequantize):
//   <module>.weight_packed        U8 [out, in / 2]: e2m1 codes, element 2i in bits 0-3
//   <module>.weight_scale         F8_E4M3 [out, in / 16]: the block scales s (e4m3fn)
//   <module>.weight_global_scale  F32 [1]: the tensor scale S
// which the loader dequantizes as x = q * fp32(s / S). The codes, s and S are fp8q's NVFP4
// quantization (docs/numerics.md section 5, "NVFP4"), whose dequantization is that formula, or
// with --like compressed-tensors that library's own (quant/producer.hpp).
// The input dimension must be a multiple of 16 (the loader reshapes into groups of 16); other
// weights are kept in high precision and listed in "ignore".
#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "fp8q/numerics/convert.hpp"
#include "fp8q/quant/quantized_tensor.hpp"
#include "layouts/common.hpp"
#include "layouts/registry.hpp"
#include "safetensors/text.hpp"

namespace fp8q::checkpoint::layouts {
namespace {

// The view the loader computes: one fp32(s / S) per 1 x 16 block of the unpacked codes.
DequantView nvfp4_view(std::size_t rows, std::size_t cols, std::span<const std::uint8_t> packed,
                       std::span<const std::uint8_t> scales, float global_scale) {
  std::vector<std::uint8_t> codes(rows * cols);
  unpack_fp4(packed, codes);
  std::vector<float> scale_inv(scales.size());
  for (std::size_t b = 0; b < scales.size(); ++b) scale_inv[b] = nvfp4_block_decode(scales[b], global_scale);
  return grid_view(FormatId::kE2M1, rows, cols, std::move(codes), block_grid(Granularity::nvfp4(), {rows, cols}),
                   std::move(scale_inv));
}

class CtNvfp4 final : public Layout {
  static QuantizeOptions options_for(const WeightRef& w, const LayoutOptions& o) {
    QuantizeOptions qo;
    qo.element = FormatId::kE2M1;
    qo.granularity = Granularity::nvfp4();
    qo.like = o.like == Producer::kCompressedTensors ? o.like : Producer::kFp8q;
    qo.bulk = {o.threads, o.isa};
    qo.global_scale = w.global_scale;
    return qo;
  }

 public:
  std::string_view name() const override { return "ct-nvfp4"; }
  std::string_view summary() const override {
    return "compressed-tensors nvfp4-pack-quantized (NVFP4A16): packed e2m1 weight_packed, F8_E4M3 weight_scale per "
           "16 along the input axis, F32 weight_global_scale";
  }
  void check_options(const LayoutOptions& o) const override {
    if (o.granularity) throw std::invalid_argument("ct-nvfp4 always uses groups of 16 (NVFP4); --granularity does not apply");
    if (o.pack) throw std::invalid_argument("--pack applies to --layout trn3-mx only");
  }
  std::optional<std::string> cannot_quantize(const std::vector<std::uint64_t>& shape, const LayoutOptions&) const override {
    if (shape[1] % 16 != 0) return "in_features " + std::to_string(shape[1]) + " is not a multiple of 16";
    return std::nullopt;
  }
  std::vector<TensorSpec> plan(const WeightRef& w, const LayoutOptions&) const override {
    return {{w.module + ".weight_packed", DType::kU8, {w.shape[0], w.shape[1] / 2}},
            {w.module + ".weight_scale", DType::kF8_E4M3, {w.shape[0], w.shape[1] / 16}},
            {w.module + ".weight_global_scale", DType::kF32, {1}}};
  }
  std::optional<float> global_scale_of(const WeightRef& w, const LayoutOptions& o) const override {
    return nvfp4_global_scale_of(w.data, source_format(w.dtype), w.shape, options_for(w, o));
  }
  QuantizedWeight quantize(const WeightRef& w, const LayoutOptions& o) const override {
    const QuantizedTensor q = fp8q::quantize(w.data, source_format(w.dtype), w.shape, options_for(w, o));
    const auto specs = plan(w, o);
    QuantizedWeight out;
    out.tensors.push_back({specs[0], to_bytes(q.codes)});
    out.tensors.push_back({specs[1], to_bytes(q.scales)});
    out.tensors.push_back({specs[2], encode_scales(std::span(&q.global_scale, 1), DType::kF32)});
    out.view = nvfp4_view(w.shape[0], w.shape[1], q.codes, q.scales, q.global_scale);
    return out;
  }
  DequantView read_back(const std::string& module, const std::vector<std::uint64_t>& shape, const TensorLookup& lookup,
                        const LayoutOptions&) const override {
    const std::size_t rows = shape[0], cols = shape[1];
    const StoredTensor q = require(lookup, module + ".weight_packed", DType::kU8, {rows, cols / 2});
    const StoredTensor s = require(lookup, module + ".weight_scale", DType::kF8_E4M3, {rows, cols / 16});
    const StoredTensor g = require(lookup, module + ".weight_global_scale", DType::kF32, {1});
    const float global = decode_scales(g.bytes, DType::kF32)[0];
    if (!is_finite_positive(global))
      throw FormatError("tensor " + detail::quote(module + ".weight_global_scale") + " is " + float_text(global) +
                        ": a global scale must be finite and positive");
    std::vector<std::uint8_t> scales(s.bytes.size());
    std::memcpy(scales.data(), s.bytes.data(), scales.size());
    for (std::size_t b = 0; b < scales.size(); ++b)
      if ((scales[b] & 0x80) != 0 || scales[b] == 0x7F)
        throw FormatError("tensor " + detail::quote(module + ".weight_scale") + " element " + std::to_string(b) +
                          " is a negative or NaN block scale (byte " + std::to_string(scales[b]) + ")");
    return nvfp4_view(rows, cols, {reinterpret_cast<const std::uint8_t*>(q.bytes.data()), q.bytes.size()}, scales,
                      global);
  }
  std::vector<std::string> companion_names(const std::string& module) const override {
    return {module + ".weight_packed", module + ".weight_scale", module + ".weight_global_scale"};
  }
  std::string quantization_config(const ConfigContext& c) const override {
    // preset NVFP4A16 without scale_dtype: the NVFP4 compressor of every release takes e4m3fn
    // block scales when it is null. 0.10.0: the first release with the tensor_group strategy
    const auto weights = ct_quantization_args({.num_bits = 4, .strategy = "tensor_group", .dynamic = false,
                                               .group_size = 16, .block = std::nullopt, .scale_dtype = std::nullopt,
                                               .observer = "memoryless_minmax"});
    return compressed_tensors_config(weights, nullptr, "nvfp4-pack-quantized", c.kept_linear_modules, "0.10.0");
  }
};

}  // namespace

const Layout& ct_nvfp4_layout() {
  static const CtNvfp4 layout;
  return layout;
}

}  // namespace fp8q::checkpoint::layouts
