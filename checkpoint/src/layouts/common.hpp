// Pieces shared by the layout files: the divide-convention block quantization, MX
// quantization with a given E8M0 rule table, scale tensors in a dtype, and the checks that
// read a stored tensor back.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "fp8q/checkpoint/layout.hpp"
#include "fp8q/numerics/block_scaled.hpp"
#include "fp8q/numerics/format.hpp"

namespace fp8q::checkpoint::layouts {

inline constexpr std::size_t kBlock = 128;  // DeepSeek-V3 / FP8_BLOCK weight blocks: 128 x 128

const Format& source_format(DType d);  // F32, BF16, F16; std::invalid_argument otherwise

// The weight granularity of ct-fp8 / trn2: the option, row by default; std::invalid_argument
// naming the layout for one it does not store (tensor row block128x128).
Granularity weight_granularity(const LayoutOptions& o, std::string_view layout);
inline const Granularity kBlock128x128 = Granularity::block(kBlock, kBlock);

// The shape of a weight granularity's scale tensor on W [rows, cols] as compressed-tensors
// defines it: tensor [1], row [rows, 1], block128x128 [ceil(rows/128), ceil(cols/128)].
std::vector<std::uint64_t> scale_shape(const Granularity& g, std::size_t rows, std::size_t cols);

// 128 x 128 blocks are stored only for W whose dimensions are both multiples of 128: the CPU
// loaders take the block as dim / n_scales (transformers' Fp8Dequantize) or require exact
// division (compressed-tensors <= 0.19), so a partial edge block is misread or refused
// (docs/checkpoints.md). The reason names the dimension; nullopt when both divide.
std::optional<std::string> partial_block_reason(const std::vector<std::uint64_t>& shape);

// Divide convention (DeepSeek-V3, compressed-tensors): per block, s = scale_inv_from_amax(amax,
// target) (= fp32(amax / max_finite)); with `scale_dtype` BF16 or F16, s is then rounded UP to
// that dtype (so every |x| / s stays within max_finite: rounding down could clip the block's
// largest element); q = convert(fp32(x / s)), nearest-even, saturating.
struct DivideQuantized {
  BlockGrid grid;
  std::vector<float> scale_inv;   // one per block, each exactly representable in scale_dtype
  std::vector<std::uint8_t> codes;
};
DivideQuantized quantize_divide(const WeightRef& w, const Format& target, const BlockGrid& grid, DType scale_dtype,
                                const LayoutOptions& o);

// compressed-tensors' FP8 quantizer (quantization/utils/helpers.py calculate_qparams,
// lifecycle/forward_helpers.py _quantize, 0.20.1) on a weight of dtype D (F32, BF16, F16), torch's
// CPU arithmetic in D (each operation in fp32, its result rounded to D): per block
// s = D(fp32(amax / 448)), a zero s replaced by D's epsilon; q = e4m3fn(D(fp32(x / s))) nearest-even,
// after clamping to +/-448 (the same as saturating). Two roundings where fp8q's divide
// convention has one; the scales are exact in D.
DivideQuantized quantize_divide_like_compressed_tensors(const WeightRef& w, const BlockGrid& grid, const LayoutOptions& o);

// MX: blocks of 32 along each row, E8M0 code table.code(amax), q = convert(x * 2^-e) RNE saturating
// into `element` (e4m3fn unless given).
struct MxQuantized {
  std::vector<std::uint8_t> codes;   // [rows, cols], one a byte
  std::vector<std::uint8_t> scales;  // [rows, ceil(cols / 32)]
};
MxQuantized quantize_mx(std::span<const std::byte> data, const Format& from, std::size_t rows, std::size_t cols,
                        const Pow2ScaleTable& table, const LayoutOptions& o, const Format& element = kE4M3FN);

// Scales as stored: F32, BF16 or F16 little-endian (values must be exact in that dtype).
std::vector<std::byte> encode_scales(std::span<const float> s, DType dtype);
std::vector<float> decode_scales(std::span<const std::byte> bytes, DType dtype);
float round_up_to(DType dtype, float x);  // smallest value of dtype >= x (x > 0, finite)

std::vector<std::byte> to_bytes(std::span<const std::uint8_t> codes);

// A stored tensor that must exist with this dtype and shape (FormatError naming it otherwise).
StoredTensor require(const TensorLookup& lookup, const std::string& name, DType dtype,
                     const std::vector<std::uint64_t>& shape);
// A per-tensor F32 multiplier stored as [] or [1] (ModelOpt's weight_scale, weight_scale_2):
// FormatError naming the tensor when it is missing, of another dtype or shape, or not finite
// and positive.
float positive_scalar_scale(const TensorLookup& lookup, const std::string& name);

DequantView grid_view(FormatId element, std::size_t rows, std::size_t cols, std::vector<std::uint8_t> codes,
                      const BlockGrid& grid, std::vector<float> scale_inv);
// MX view with OCP groups (column c in group c / 32).
DequantView mx_view(FormatId element, std::size_t rows, std::size_t cols, std::vector<std::uint8_t> codes,
                    std::vector<std::uint8_t> e8m0);

// Layout::store()'s checks that a view has the structure `layout` stores: std::invalid_argument
// naming what differs.
void require_grid_view(const DequantView& v, FormatId element, const BlockGrid& grid, std::string_view layout);
void require_mx_view(const DequantView& v, FormatId element, std::size_t rows, std::size_t cols, std::string_view layout);

// compressed-tensors' QuantizationArgs as it serializes them, keys in its order. Without
// `scale_dtype` neither scale_dtype nor zp_dtype is written: releases before 0.15.0 forbid the
// keys (QuantizationArgs has extra="forbid"); with it, zp_dtype is null (symmetric).
struct CtArgs {
  int num_bits = 8;
  std::string strategy;
  bool dynamic = false;
  std::optional<int> group_size;
  std::optional<std::vector<std::size_t>> block;
  std::optional<std::string> scale_dtype;
  const char* observer = nullptr;  // null when absent
};
nlohmann::ordered_json ct_quantization_args(const CtArgs& a);

// JSON text helpers for quantization_config.
std::string json_string_array(const std::vector<std::string>& items);
// compressed-tensors' quantization_config (as that library writes it, keys in its order): one
// config group "group_0" over every Linear with these weight and input-activation arguments,
// `format` ("float-quantized", "mxfp8-quantized"), quantization_status "compressed", and
// `version`, the compressed-tensors release that first reads the format.
std::string compressed_tensors_config(nlohmann::ordered_json weights, nlohmann::ordered_json inputs,
                                      const std::string& format, const std::vector<std::string>& ignore,
                                      const std::string& version);

// A layout fp8q reads as a quantized input and does not write (modelopt-nvfp4, gpt-oss-mxfp4,
// fbgemm-fp8): every member that writes refuses, naming the layout.
class ReadOnlyLayout : public Layout {
 public:
  void check_options(const LayoutOptions&) const override { refuse(); }
  QuantizedWeight quantize(const WeightRef&, const LayoutOptions&) const override { refuse(); }
  std::string quantization_config(const ConfigContext&) const override { refuse(); }

 protected:
  [[noreturn]] void refuse() const {
    throw std::invalid_argument(std::string(name()) + " is read as a quantized input; fp8q does not write it");
  }
};

}  // namespace fp8q::checkpoint::layouts
