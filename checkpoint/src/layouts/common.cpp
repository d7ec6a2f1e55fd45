#include "layouts/common.hpp"

#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "fp8q/numerics/bulk.hpp"
#include "fp8q/numerics/convert.hpp"
#include "fp8q/quant/amax.hpp"
#include "fp8q/quant/scale_rules.hpp"
#include "safetensors/text.hpp"

namespace fp8q::checkpoint::layouts {

const Format& source_format(DType d) {
  const Format* f = floating_format(d);
  if (f == nullptr) throw std::invalid_argument("dtype " + std::string(dtype_name(d)) + " is not F32, BF16 or F16");
  return *f;
}

Granularity weight_granularity(const LayoutOptions& o, std::string_view layout) {
  const Granularity g = o.granularity.value_or(Granularity::row());
  if (g != Granularity::tensor() && g != Granularity::row() && g != kBlock128x128)
    throw std::invalid_argument(std::string(layout) + " stores weights per tensor, per row (output channel) or in " +
                                "128x128 blocks (--granularity tensor row block128x128), not " + granularity_name(g));
  return g;
}

std::vector<std::uint64_t> scale_shape(const Granularity& g, std::size_t rows, std::size_t cols) {
  if (g.kind == GranularityKind::kTensor) return {1};
  const BlockGrid grid = block_grid(g, {rows, cols});
  return {grid.grid_rows(), grid.grid_cols()};
}

std::optional<std::string> partial_block_reason(const std::vector<std::uint64_t>& shape) {
  const bool out_ok = shape[0] % kBlock == 0, in_ok = shape[1] % kBlock == 0;
  if (out_ok && in_ok) return std::nullopt;
  const std::string out = "out_features " + std::to_string(shape[0]), in = "in_features " + std::to_string(shape[1]);
  const std::string what = !out_ok && !in_ok ? out + " and " + in + " are not multiples" : (out_ok ? in : out) + " is not a multiple";
  return what + " of 128 (the loaders misread a partial 128x128 block)";
}

float round_up_to(DType dtype, float x) {
  if (dtype == DType::kF32) return x;
  const Format& f = dtype == DType::kBF16 ? kBF16 : kF16;
  ConvertOptions o;
  o.rounding = Rounding::kUp;
  o.overflow = Overflow::kSaturate;
  return decode_f32(encode_f32(x, f, o), f);
}

DivideQuantized quantize_divide(const WeightRef& w, const Format& target, const BlockGrid& grid, DType scale_dtype,
                                const LayoutOptions& lo) {
  const Format& from = source_format(w.dtype);
  DivideQuantized out;
  out.grid = grid;
  std::vector<float> amaxes(grid.grid_size());
  block_amax(w.data, from, grid, amaxes, lo.threads);
  out.scale_inv.resize(amaxes.size());
  for (std::size_t b = 0; b < amaxes.size(); ++b)
    out.scale_inv[b] = round_up_to(scale_dtype, scale_inv_from_amax(amaxes[b], target));
  out.codes.resize(grid.rows * grid.cols);
  ConvertOptions o;
  o.scale_op = ScaleOp::kDivide;
  o.overflow = Overflow::kSaturate;
  convert_block_scaled(w.data, from, out.codes, target, grid, out.scale_inv, o, {lo.threads, lo.isa});
  return out;
}

DivideQuantized quantize_divide_like_compressed_tensors(const WeightRef& w, const BlockGrid& grid,
                                                        const LayoutOptions& lo) {
  DivideQuantized out;
  out.grid = grid;
  out.codes.resize(grid.rows * grid.cols);
  out.scale_inv.resize(grid.grid_size());
  quantize_like_producer(Producer::kCompressedTensors, w.data, source_format(w.dtype), grid, false, out.codes, out.scale_inv,
                         {lo.threads, lo.isa});
  return out;
}

MxQuantized quantize_mx(std::span<const std::byte> data, const Format& from, std::size_t rows, std::size_t cols,
                        const Pow2ScaleTable& table, const LayoutOptions& lo, const Format& element) {
  MxQuantized out;
  out.codes.resize(rows * cols);
  out.scales.resize(rows * ((cols + 31) / 32));
  ConvertOptions o;
  o.overflow = Overflow::kSaturate;
  convert_mx(data, from, rows, cols, 32, out.codes, out.scales, element, table, o, {lo.threads, lo.isa});
  return out;
}

std::vector<std::byte> encode_scales(std::span<const float> s, DType dtype) {
  const std::size_t width = dtype_bytes(dtype);
  std::vector<std::byte> out(s.size() * width);
  for (std::size_t i = 0; i < s.size(); ++i) {
    std::uint32_t bits;
    if (dtype == DType::kF32) {
      bits = bits_of(s[i]);
    } else {
      const Format& f = dtype == DType::kBF16 ? kBF16 : kF16;
      bits = static_cast<std::uint32_t>(encode_f32(s[i], f));
      if (decode_f32(bits, f) != s[i]) throw std::logic_error("encode_scales: scale not exact in " + std::string(dtype_name(dtype)));
    }
    std::memcpy(out.data() + i * width, &bits, width);  // little-endian host
  }
  return out;
}

std::vector<float> decode_scales(std::span<const std::byte> bytes, DType dtype) {
  const std::size_t width = dtype_bytes(dtype);
  std::vector<float> out(bytes.size() / width);
  for (std::size_t i = 0; i < out.size(); ++i) {
    std::uint32_t bits = 0;
    std::memcpy(&bits, bytes.data() + i * width, width);
    out[i] = dtype == DType::kF32 ? float_of(bits) : decode_f32(bits, dtype == DType::kBF16 ? kBF16 : kF16);
  }
  return out;
}

std::vector<std::byte> to_bytes(std::span<const std::uint8_t> codes) {
  std::vector<std::byte> out(codes.size());
  if (!codes.empty()) std::memcpy(out.data(), codes.data(), codes.size());
  return out;
}

namespace {
std::string shape_text(const std::vector<std::uint64_t>& s) {
  std::string t = "[";
  for (std::size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + "]";
}
}  // namespace

StoredTensor require(const TensorLookup& lookup, const std::string& name, DType dtype,
                     const std::vector<std::uint64_t>& shape) {
  const StoredTensor t = lookup(name);
  if (t.info == nullptr) throw FormatError("tensor " + detail::quote(name) + " is missing");
  if (t.info->dtype != dtype || t.info->shape != shape)
    throw FormatError("tensor " + detail::quote(name) + " is " + std::string(dtype_name(t.info->dtype)) + " " +
                      shape_text(t.info->shape) + ", the layout stores " + std::string(dtype_name(dtype)) + " " +
                      shape_text(shape));
  return t;
}

float positive_scalar_scale(const TensorLookup& lookup, const std::string& name) {
  const StoredTensor probe = lookup(name);
  const bool scalar = probe.info != nullptr && probe.info->shape.empty();
  const StoredTensor t = require(lookup, name, DType::kF32, scalar ? std::vector<std::uint64_t>{} : std::vector<std::uint64_t>{1});
  const float s = decode_scales(t.bytes, DType::kF32)[0];
  if (!is_finite_positive(s))
    throw FormatError("tensor " + detail::quote(name) + " is " + float_text(s) + ": a per-tensor scale must be finite and positive");
  return s;
}

namespace {
DequantView codes_view(FormatId element, std::size_t rows, std::size_t cols, std::vector<std::uint8_t> codes) {
  DequantView v;
  v.element = element;
  v.rows = rows;
  v.cols = cols;
  v.codes = std::move(codes);
  return v;
}
}  // namespace

DequantView grid_view(FormatId element, std::size_t rows, std::size_t cols, std::vector<std::uint8_t> codes,
                      const BlockGrid& grid, std::vector<float> scale_inv) {
  DequantView v = codes_view(element, rows, cols, std::move(codes));
  v.grid = grid;
  v.scale_inv = std::move(scale_inv);
  return v;
}

DequantView mx_view(FormatId element, std::size_t rows, std::size_t cols, std::vector<std::uint8_t> codes,
                    std::vector<std::uint8_t> e8m0) {
  DequantView v = codes_view(element, rows, cols, std::move(codes));
  v.mx = true;
  v.e8m0 = std::move(e8m0);
  v.groups_per_row = (cols + 31) / 32;
  v.group_of_col.resize(cols);
  for (std::size_t c = 0; c < cols; ++c) v.group_of_col[c] = static_cast<std::uint32_t>(c / 32);
  return v;
}

namespace {
void require_codes(const DequantView& v, FormatId element, std::size_t rows, std::size_t cols, std::string_view layout) {
  if (v.element != element)
    throw std::invalid_argument("layout " + std::string(layout) + " stores " + std::string(format_of(element).name) +
                                " codes, not " + std::string(format_of(v.element).name));
  if (v.rows != rows || v.cols != cols || v.codes.size() != rows * cols)
    throw std::invalid_argument("layout " + std::string(layout) + ": the codes are not the weight's " +
                                std::to_string(rows) + " x " + std::to_string(cols));
}
}  // namespace

void require_grid_view(const DequantView& v, FormatId element, const BlockGrid& grid, std::string_view layout) {
  require_codes(v, element, grid.rows, grid.cols, layout);
  if (v.mx || v.grid.block_rows != grid.block_rows || v.grid.block_cols != grid.block_cols ||
      v.scale_inv.size() != grid.grid_size())
    throw std::invalid_argument("layout " + std::string(layout) + " stores one scale per " +
                                std::to_string(grid.block_rows) + " x " + std::to_string(grid.block_cols) + " block");
}

void require_mx_view(const DequantView& v, FormatId element, std::size_t rows, std::size_t cols, std::string_view layout) {
  require_codes(v, element, rows, cols, layout);
  bool ocp = v.mx && v.groups_per_row == (cols + 31) / 32 && v.e8m0.size() == rows * v.groups_per_row &&
             v.group_of_col.size() == cols;
  for (std::size_t c = 0; ocp && c < cols; ++c) ocp = v.group_of_col[c] == c / 32;
  if (!ocp) throw std::invalid_argument("layout " + std::string(layout) + " stores one E8M0 scale per 32 columns");
}

nlohmann::ordered_json ct_quantization_args(const CtArgs& c) {
  using OJson = nlohmann::ordered_json;
  OJson a;
  a["num_bits"] = c.num_bits;
  a["type"] = "float";
  a["symmetric"] = true;
  a["group_size"] = c.group_size ? OJson(*c.group_size) : OJson(nullptr);
  a["strategy"] = c.strategy;
  a["block_structure"] = c.block ? OJson(*c.block) : OJson(nullptr);
  a["dynamic"] = c.dynamic;
  a["actorder"] = nullptr;
  if (c.scale_dtype) {
    a["scale_dtype"] = *c.scale_dtype;
    a["zp_dtype"] = nullptr;
  }
  a["observer"] = c.observer ? OJson(c.observer) : OJson(nullptr);
  a["observer_kwargs"] = OJson::object();
  return a;
}

std::string json_string_array(const std::vector<std::string>& items) { return nlohmann::json(items).dump(); }

std::string compressed_tensors_config(nlohmann::ordered_json weights, nlohmann::ordered_json inputs,
                                      const std::string& format, const std::vector<std::string>& ignore,
                                      const std::string& version) {
  using OJson = nlohmann::ordered_json;
  OJson group;
  group["targets"] = {"Linear"};
  group["weights"] = std::move(weights);
  group["input_activations"] = std::move(inputs);
  group["output_activations"] = nullptr;
  group["format"] = format;
  OJson j;
  j["config_groups"] = {{"group_0", group}};
  j["format"] = format;
  j["global_compression_ratio"] = nullptr;
  j["ignore"] = ignore;
  j["kv_cache_scheme"] = nullptr;
  j["quant_method"] = "compressed-tensors";
  j["quantization_status"] = "compressed";
  j["sparsity_config"] = OJson::object();
  j["transform_config"] = OJson::object();
  j["version"] = version;
  return j.dump();
}

}  // namespace fp8q::checkpoint::layouts
