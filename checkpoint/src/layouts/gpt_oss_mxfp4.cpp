// gpt-oss-mxfp4: OpenAI gpt-oss's MXFP4 mixture-of-experts weights, read as a quantized input;
// fp8q does not write it.
//
// Public definition (checked against Transformers 5.24 integrations/mxfp4.py:
// Mxfp4GptOssExperts' parameters and convert_moe_packed_tensors, the loader's dequantization):
//   <prefix>.gate_up_proj_blocks  U8 [E, N, K / 32, 16]: per expert e, W_e [N, K] in e2m1 codes,
//                                 32 a group, element 2i of a group in bits 0-3 of byte i
//   <prefix>.gate_up_proj_scales  U8 [E, N, K / 32]: each group's E8M0 scale, 2^(code - 127)
//   (and the same for down_proj), config.json quantization_config {"quant_method": "mxfp4",
//   "modules_to_not_convert": [...]}. The loader's high-precision parameter is the transpose
//   [E, K, N] (x @ W_e^T per expert), named <prefix>.gate_up_proj; the biases stay as stored.
// A module here is the prefix with its projection (".../experts.gate_up_proj"), W its E experts
// [E, N, K]; read_back gives them as one [E * N, K] MX view, the experts' rows in order.
#include <cstring>
#include <stdexcept>

#include "fp8q/quant/quantized_tensor.hpp"
#include "layouts/common.hpp"
#include "layouts/registry.hpp"
#include "safetensors/text.hpp"

namespace fp8q::checkpoint::layouts {
namespace {

class GptOssMxfp4 final : public ReadOnlyLayout {
 public:
  std::string_view name() const override { return "gpt-oss-mxfp4"; }
  std::string_view summary() const override {
    return "OpenAI gpt-oss MXFP4 experts (read only): U8 *_blocks [E, N, K/32, 16], U8 E8M0 *_scales [E, N, K/32]";
  }
  // w.shape is the experts' [E, N, K].
  std::vector<TensorSpec> plan(const WeightRef& w, const LayoutOptions&) const override {
    if (w.shape.size() != 3 || w.shape[2] % 32 != 0) return {{w.module + "_blocks", DType::kU8, {}}};  // matches nothing stored
    return {{w.module + "_blocks", DType::kU8, {w.shape[0], w.shape[1], w.shape[2] / 32, 16}},
            {w.module + "_scales", DType::kU8, {w.shape[0], w.shape[1], w.shape[2] / 32}}};
  }
  DequantView read_back(const std::string& module, const std::vector<std::uint64_t>& shape, const TensorLookup& lookup,
                        const LayoutOptions& o) const override {
    WeightRef w;
    w.module = module;
    w.shape = shape;
    const auto specs = plan(w, o);
    if (specs.size() != 2)
      throw FormatError("tensor " + detail::quote(module + "_blocks") + ": gpt-oss experts are [E, N, K] with K a multiple of 32");
    const StoredTensor q = require(lookup, specs[0].name, DType::kU8, specs[0].shape);
    const StoredTensor s = require(lookup, specs[1].name, DType::kU8, specs[1].shape);
    const std::size_t rows = shape[0] * shape[1], cols = shape[2];
    std::vector<std::uint8_t> codes(rows * cols), scales(s.bytes.size());
    unpack_fp4({reinterpret_cast<const std::uint8_t*>(q.bytes.data()), q.bytes.size()}, codes);
    std::memcpy(scales.data(), s.bytes.data(), scales.size());
    return mx_view(FormatId::kE2M1, rows, cols, std::move(codes), std::move(scales));
  }
  std::vector<std::string> companion_names(const std::string& module) const override { return {module + "_scales"}; }
};

}  // namespace

const Layout& gpt_oss_mxfp4_layout() {
  static const GptOssMxfp4 layout;
  return layout;
}

}  // namespace fp8q::checkpoint::layouts
