#include "layout.hpp"

#include "trn3_onchip.hpp"

#include <cmath>
#include <cstring>
#include <stdexcept>

namespace digits {
using fp8q::checkpoint::DType;
using nlohmann::json;

namespace {

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

std::string str(const json& j, const char* key) {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string();
}

// [rows, cols] of a block shape field such as weight_block_size: [128, 128].
void read_block(const json& j, const char* key, const std::string& where, Layout& l) {
  if (!j.contains(key) || j[key].is_null()) return;
  const json& b = j[key];
  if (!b.is_array() || b.size() != 2 || !b[0].is_number_unsigned() || !b[1].is_number_unsigned() ||
      b[0].get<std::uint64_t>() == 0 || b[1].get<std::uint64_t>() == 0)
    throw std::runtime_error("config.json: " + where + "." + key + " is not two positive integers");
  l.block_rows = b[0].get<std::uint64_t>();
  l.block_cols = b[1].get<std::uint64_t>();
}

// compressed-tensors: the weights arguments of the (first) config group.
const json* ct_weights(const json& qc) {
  if (!qc.contains("config_groups") || !qc["config_groups"].is_object()) return nullptr;
  for (const auto& [_, group] : qc["config_groups"].items())
    if (group.is_object() && group.contains("weights") && group["weights"].is_object()) return &group["weights"];
  return nullptr;
}

std::string describe_grid(const Tensor& s, const std::string& what) {
  return std::string(fp8q::checkpoint::dtype_name(s.dtype)) + " " + s.name.substr(s.name.rfind('.') + 1) + " " +
         shape_string(s.shape) + " (" + what + ")";
}

// The codes of `module`.weight [out, in] as fp32 values, decoded with `element`.
std::vector<float> decode_codes(const Tensor& q, Fp8 element, std::uint64_t out, std::uint64_t in) {
  if (fp8q::checkpoint::dtype_bytes(q.dtype) != 1)
    throw std::runtime_error("tensor \"" + q.name + "\": dtype " + std::string(fp8q::checkpoint::dtype_name(q.dtype)) +
                             " is not an 8-bit code");
  expect_shape(q, {out, in});
  const auto& table = fp8_table(element);
  std::vector<float> v(out * in);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = table[static_cast<std::uint8_t>(q.bytes[i])];
  return v;
}

// w = fp32(q * s), s from a tensor / channel / block grid of scales (F32, BF16 or F16).
Weight scale_grid(const ModelFiles& files, const Layout& l, const std::string& module, std::uint64_t out,
                  std::uint64_t in) {
  // Trainium2's codes are IEEE-style e4m3; every other layout stores OCP e4m3fn.
  const Fp8 element = l.kind == LayoutKind::kTrn2 ? Fp8::kE4M3 : Fp8::kE4M3FN;
  std::vector<float> w = decode_codes(files.at(module + ".weight"), element, out, in);
  // hf-fp8 names its multiplier weight_scale_inv (DeepSeek-V3); compressed-tensors and trn2
  // name theirs weight_scale. Both multiply: x = q * s.
  const Tensor s = files.at(module + (l.kind == LayoutKind::kHfFp8 ? ".weight_scale_inv" : ".weight_scale"));
  const std::vector<float> sv = float_values(s);
  std::uint64_t br, bc;  // the block each scale covers
  std::string what;
  // Which elements share a scale follows from the scale's shape; a block grid needs the
  // block size from config.json. (Where two readings fit, e.g. a [1, 1] grid of one block
  // and a per-tensor [1], they give the same multiplier for every element.)
  if (l.block_rows != 0 && s.shape == std::vector<std::uint64_t>{ceil_div(out, l.block_rows), ceil_div(in, l.block_cols)}) {
    br = l.block_rows, bc = l.block_cols;
    what = std::to_string(br) + "x" + std::to_string(bc) + " blocks";
  } else if (s.shape == std::vector<std::uint64_t>{1} || s.shape.empty()) {
    br = out, bc = in, what = "per tensor";
  } else if (s.shape == std::vector<std::uint64_t>{out, 1}) {
    br = 1, bc = in, what = "per channel";
  } else {
    throw std::runtime_error("tensor \"" + s.name + "\": shape " + shape_string(s.shape) + " is not a scale of [" +
                             std::to_string(out) + ", " + std::to_string(in) + "] per tensor [1], per channel [" +
                             std::to_string(out) + ", 1]" +
                             (l.block_rows ? " or per " + std::to_string(l.block_rows) + "x" +
                                                 std::to_string(l.block_cols) + " block"
                                           : std::string(" (config.json gives no block size)")));
  }
  const std::uint64_t grid_cols = ceil_div(in, bc);
  for (std::uint64_t i = 0; i < out; ++i)
    for (std::uint64_t j = 0; j < in; ++j) w[i * in + j] *= sv[(i / br) * grid_cols + j / bc];
  return {std::move(w), std::string(element == Fp8::kE4M3 ? "e4m3 (IEEE, max 240)" : "F8_E4M3") + " * " +
                            describe_grid(s, what)};
}

// w = fp32(q * 2^(e - 127)), one E8M0 scale per MX group of the input dimension. The product
// is one correctly rounded fp32 multiply (2^-127 is an fp32 subnormal, so every scale but the
// NaN code 0xFF is exact in fp32).
Weight mx(const ModelFiles& files, const Layout& l, const std::string& module, std::uint64_t out, std::uint64_t in,
          std::optional<trn3::KLayout> packing) {
  const Tensor q = files.at(module + ".weight");
  const Tensor s = files.at(module + ".weight_scale");
  if (fp8q::checkpoint::dtype_bytes(s.dtype) != 1)
    throw std::runtime_error("tensor \"" + s.name + "\": dtype " + std::string(fp8q::checkpoint::dtype_name(s.dtype)) +
                             " is not an E8M0 scale (U8 or F8_E8M0)");
  if (fp8q::checkpoint::dtype_bytes(q.dtype) != 1)
    throw std::runtime_error("tensor \"" + q.name + "\": dtype " + std::string(fp8q::checkpoint::dtype_name(q.dtype)) +
                             " is not an 8-bit code");
  const auto& table = fp8_table(Fp8::kE4M3FN);
  auto byte = [](const Tensor& t, std::uint64_t i) { return static_cast<std::uint8_t>(t.bytes[i]); };
  // code i of the codes: a byte, or (MXFP4) nibble i % 2 of byte i / 2, low nibble first
  auto value = [&](std::uint64_t i) {
    if (!l.fp4) return table[byte(q, i)];
    const std::uint8_t b = byte(q, i / 2);
    return e2m1_value(i % 2 == 0 ? b & 0xF : b >> 4);
  };
  const std::string codes = l.fp4 ? "e2m1 (packed)" : "F8_E4M3";
  std::vector<float> w(out * in);
  if (!packing) {
    // Compact scales [out, ceil(in / 32)]: OCP blocks of 32 consecutive inputs.
    const std::uint64_t ng = ceil_div(in, l.mx_group);
    expect_shape(q, {out, l.fp4 ? in / 2 : in});
    expect_shape(s, {out, ng});
    for (std::uint64_t i = 0; i < out; ++i)
      for (std::uint64_t j = 0; j < in; ++j)
        w[i * in + j] = value(i * in + j) * e8m0_value(byte(s, i * ng + j / l.mx_group));
    return {std::move(w), codes + " * 2^(" + describe_grid(s, "E8M0") + " - 127)"};
  }
  // Pre-packed for nc_matmul_mx: the K x N operand with K = in, N = out, T = ceil(K / 512)
  // tiles: codes [128, T, N, 4], scales [128, T, N].
  // (an fp4 x4 container is 2 bytes: code c is nibble c of it, so code offsets are the same)
  const std::uint64_t T = trn3::tiles(in);
  expect_shape(q, {128, T, out, l.fp4 ? 2u : 4u});
  expect_shape(s, {128, T, out});
  for (std::uint64_t n = 0; n < out; ++n)
    for (std::uint64_t k = 0; k < in; ++k)
      w[n * in + k] = value(trn3::code_offset(*packing, in, out, k, n)) *
                      e8m0_value(byte(s, trn3::scale_offset(*packing, in, out, k, n)));
  return {std::move(w), codes + " x4 on-chip image " + shape_string(q.shape) + " * 2^(E8M0 " + shape_string(s.shape) +
                            " - 127), " + (*packing == trn3::KLayout::kWrapX ? "wrapX" : "1x32")};
}

// Packed e2m1 codes times one scale per group of the input dimension: E8M0 per 32 (ct-mxfp4) or
// fp32(e4m3fn / global) per 16 (ct-nvfp4), each product one fp32 multiply.
Weight packed_fp4(const ModelFiles& files, const Layout& l, const std::string& module, std::uint64_t out,
                  std::uint64_t in) {
  const bool nv = l.kind == LayoutKind::kCtNvfp4;
  const std::uint64_t group = nv ? 16 : 32;
  const Tensor q = files.at(module + ".weight_packed");
  const Tensor s = files.at(module + ".weight_scale");
  if (q.dtype != DType::kU8 || s.dtype != (nv ? DType::kF8_E4M3 : DType::kU8))
    throw std::runtime_error("tensor \"" + q.name + "\" or \"" + s.name + "\": dtypes " +
                             std::string(fp8q::checkpoint::dtype_name(q.dtype)) + ", " +
                             std::string(fp8q::checkpoint::dtype_name(s.dtype)) + " are not packed FP4 codes and " +
                             (nv ? "F8_E4M3" : "U8 E8M0") + " scales");
  if (in % group != 0) throw std::runtime_error("module \"" + module + "\": in_features is not a multiple of the group");
  expect_shape(q, {out, in / 2});
  expect_shape(s, {out, in / group});
  float global = 1.0f;
  if (nv) {
    const Tensor g = files.at(module + ".weight_global_scale");
    expect_shape(g, {1});
    global = float_values(g)[0];
    if (!(global > 0.0f && std::isfinite(global)))
      throw std::runtime_error("tensor \"" + g.name + "\": a global scale must be finite and > 0");
  }
  const auto& e4m3 = fp8_table(Fp8::kE4M3FN);
  auto byte = [](const Tensor& t, std::uint64_t i) { return static_cast<std::uint8_t>(t.bytes[i]); };
  std::vector<float> w(out * in);
  for (std::uint64_t i = 0; i < out; ++i)
    for (std::uint64_t j = 0; j < in; ++j) {
      const std::uint8_t b = byte(q, (i * in + j) / 2), sc = byte(s, i * (in / group) + j / group);
      const float scale = nv ? e4m3[sc] / global : e8m0_value(sc);
      w[i * in + j] = e2m1_value(j % 2 == 0 ? b & 0xF : b >> 4) * scale;
    }
  return {std::move(w), nv ? "e2m1 (packed) * fp32(" + describe_grid(s, "E4M3FN") + " / F32 weight_global_scale)"
                           : "e2m1 (packed) * 2^(" + describe_grid(s, "E8M0") + " - 127)"};
}

}  // namespace

const char* layout_name(LayoutKind kind) {
  switch (kind) {
    case LayoutKind::kOriginal: return "original";
    case LayoutKind::kHfFp8: return "hf-fp8";
    case LayoutKind::kCtFp8: return "ct-fp8";
    case LayoutKind::kCtMxfp8: return "ct-mxfp8";
    case LayoutKind::kCtMxfp4: return "ct-mxfp4";
    case LayoutKind::kCtNvfp4: return "ct-nvfp4";
    case LayoutKind::kTrn2: return "trn2";
    case LayoutKind::kTrn3Mx: return "trn3-mx";
  }
  return "?";
}

std::optional<LayoutKind> parse_layout_name(const std::string& name) {
  for (auto k : {LayoutKind::kOriginal, LayoutKind::kHfFp8, LayoutKind::kCtFp8, LayoutKind::kCtMxfp8,
                 LayoutKind::kCtMxfp4, LayoutKind::kCtNvfp4, LayoutKind::kTrn2, LayoutKind::kTrn3Mx})
    if (name == layout_name(k)) return k;
  return std::nullopt;
}

Layout detect_layout(const json& config) {
  Layout l;
  if (!config.contains("quantization_config")) return l;
  const json& qc = config["quantization_config"];
  if (!qc.is_object()) throw std::runtime_error("config.json: quantization_config is not an object");
  const std::string method = str(qc, "quant_method");
  if (method == "fp8") {
    l.kind = LayoutKind::kHfFp8;
    read_block(qc, "weight_block_size", "quantization_config", l);
    return l;
  }
  if (method == "compressed-tensors") {
    const std::string format = str(qc, "format");
    const json* w = ct_weights(qc);
    if (format == "float-quantized") {
      l.kind = LayoutKind::kCtFp8;
      if (w) read_block(*w, "block_structure", "quantization_config.config_groups.*.weights", l);
      return l;
    }
    if (format == "mxfp8-quantized") {
      l.kind = LayoutKind::kCtMxfp8;
      if (w && w->contains("group_size") && (*w)["group_size"].is_number_unsigned())
        l.mx_group = (*w)["group_size"].get<std::uint64_t>();
      if (l.mx_group == 0) throw std::runtime_error("config.json: group_size is 0");
      return l;
    }
    if (format == "mxfp4-pack-quantized" || format == "nvfp4-pack-quantized") {
      l.kind = format == "mxfp4-pack-quantized" ? LayoutKind::kCtMxfp4 : LayoutKind::kCtNvfp4;
      const std::uint64_t want = l.kind == LayoutKind::kCtMxfp4 ? 32 : 16;
      if (!w || !w->contains("group_size") || (*w)["group_size"] != want)
        throw std::runtime_error("config.json: " + format + " needs weights.group_size " + std::to_string(want));
      return l;
    }
    throw std::runtime_error("config.json: quantization_config.format \"" + format +
                             "\" is not float-quantized, mxfp8-quantized, mxfp4-pack-quantized or nvfp4-pack-quantized");
  }
  if (method == "fp8q") {
    // fp8q's own layouts for Trainium (no public checkpoint format exists for them).
    const std::string name = str(qc, "layout");
    if (name == "trn2") {
      l.kind = LayoutKind::kTrn2;
      if (str(qc, "fmt") != "e4m3") throw std::runtime_error("config.json: trn2 with fmt \"" + str(qc, "fmt") + "\", not e4m3");
      read_block(qc, "weight_block_size", "quantization_config", l);
      return l;
    }
    if (name == "trn3-mx") {
      l.kind = LayoutKind::kTrn3Mx;
      const std::string packing = str(qc, "packing");
      if (packing == "wrapX") l.packing = trn3::KLayout::kWrapX;
      else if (packing == "1x32") l.packing = trn3::KLayout::k1x32;
      else if (packing != "none" && !packing.empty())
        throw std::runtime_error("config.json: quantization_config.packing \"" + packing + "\" is not none, wrapX or 1x32");
      if (qc.contains("group_size") && qc["group_size"] != 32)
        throw std::runtime_error("config.json: trn3-mx group_size is not 32");
      const std::string fmt = qc.contains("fmt") ? str(qc, "fmt") : "e4m3fn";
      if (fmt != "e4m3fn" && fmt != "e2m1")
        throw std::runtime_error("config.json: trn3-mx fmt \"" + fmt + "\" is not e4m3fn or e2m1");
      l.fp4 = fmt == "e2m1";
      return l;
    }
    throw std::runtime_error("config.json: quantization_config.layout \"" + name + "\" is not trn2 or trn3-mx");
  }
  throw std::runtime_error("config.json: quantization_config.quant_method \"" + method + "\" is not known here");
}

Weight dequantize_weight(const ModelFiles& files, const Layout& l, const std::string& module, std::uint64_t out,
                         std::uint64_t in) {
  if ((l.kind == LayoutKind::kCtMxfp4 || l.kind == LayoutKind::kCtNvfp4) && files.has(module + ".weight_packed"))
    return packed_fp4(files, l, module, out, in);
  const Tensor t = files.at(module + ".weight");
  if (t.dtype == DType::kF32 || t.dtype == DType::kBF16 || t.dtype == DType::kF16) {
    expect_shape(t, {out, in});
    return {float_values(t), std::string(fp8q::checkpoint::dtype_name(t.dtype)) + " (not quantized)"};
  }
  switch (l.kind) {
    case LayoutKind::kOriginal:
      throw std::runtime_error("tensor \"" + t.name + "\": dtype " + std::string(fp8q::checkpoint::dtype_name(t.dtype)) +
                               " but config.json has no quantization_config");
    case LayoutKind::kHfFp8:
    case LayoutKind::kCtFp8:
    case LayoutKind::kTrn2:
      return scale_grid(files, l, module, out, in);
    case LayoutKind::kCtMxfp8:
      return mx(files, l, module, out, in, std::nullopt);
    case LayoutKind::kCtMxfp4:
    case LayoutKind::kCtNvfp4:
      throw std::runtime_error("tensor \"" + t.name + "\": " + layout_name(l.kind) + " stores weight_packed, not " +
                               std::string(fp8q::checkpoint::dtype_name(t.dtype)) + " weight");
    case LayoutKind::kTrn3Mx:
      return mx(files, l, module, out, in, l.packing);
  }
  return {};
}

}  // namespace digits
