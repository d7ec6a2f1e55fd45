// trn3-mx: MXFP8 (or, with --elem e2m1, MXFP4) for Trainium3 (nc_matmul_mx), with NKI
// quantize_mx's scale rule.
//
// What AWS documents is in quant/trainium3_layout.hpp (x4 packing, K on the 128 partitions,
// 4 codes per partition, one E8M0 scale per 8 partitions x 4 codes, scale placement) and
// docs/numerics.md section 5 (rule `trainium3`: e = floor(log2(amax)) - 7 for e4m3fn, so a block's max
// lands in [128, 256) and never saturates). No public checkpoint format exists; fp8q's:
//   unpacked (default): MX along the input axis, as ct-mxfp8 but with the trainium3 rule:
//     <module>.weight        F8_E4M3 (e4m3fn) [out, in]
//     <module>.weight_scale  U8 E8M0 [out, ceil(in / 32)] (a partial last group)
//   --pack wrapX | 1x32: the weight as the K x N operand of nc_matmul_mx (K = in, the
//   contraction axis, N = out; the operand is W transposed), already in SBUF order:
//     <module>.weight        F8_E4M3 [128, T, out, 4]  (T = ceil(in / 512); byte
//                            ((p * T + t) * out + n) * 4 + c is partition p, K tile t,
//                            column n, packed slot c: the float8_e4m3fn_x4 memory image)
//     <module>.weight_scale  U8 [128, T, out]: group g of tile t in partition
//                            scale_partition(g) (4 per 32-partition quadrant), others 0x00
//   MX groups are the hardware's (8 partitions x 4 slots), which for wrapX are not 32
//   consecutive K: each group is quantized over exactly the K indices it covers.
// MXFP4 (--elem e2m1; rule trainium3: e = floor(log2(amax)) - 1, a block's max in [2, 4)):
//   unpacked: <module>.weight U8 [out, in / 2], e2m1 codes two a byte (element 2i in bits 0-3,
//   as compressed-tensors packs them; in must be even); packed: <module>.weight U8
//   [128, T, out, 2], the float4_e2m1fn_x4 memory image (code c in bits 4c .. 4c + 3 of a
//   little-endian 16-bit container); the scales as for MXFP8. The shard metadata
//   "fp8q.weight_format" = "e2m1" tells a reader which.
// A stack of experts W [E, N, K] (a quantized input's, gpt-oss's) is stored unpacked with the
// experts leading: weight [E, N, K] (MXFP4 [E, N, K / 2]), weight_scale [E, N, ceil(K / 32)],
// each expert's slice the 2-D layout of W_e [N, K]; --pack does not take it.
// config.json: {"quant_method": "fp8q", "layout": "trn3-mx", "fmt": "e4m3fn" (or "e2m1"),
// "scale_fmt": "e8m0", "group_size": 32, "scale_rule": "trainium3", "packing": ...}, and for a
// packed layout "in_features": {module: K} (the image pads K to whole 512-element tiles).
#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <utility>

#include "fp8q/quant/quantized_tensor.hpp"
#include "fp8q/quant/scale_rules.hpp"
#include "layouts/common.hpp"
#include "layouts/registry.hpp"

namespace fp8q::checkpoint::layouts {
namespace {

using OJson = nlohmann::ordered_json;
namespace t3 = fp8q::trn3;

FormatId element_of(const LayoutOptions& o) { return o.element.value_or(FormatId::kE4M3FN); }
bool fp4(const LayoutOptions& o) { return element_of(o) == FormatId::kE2M1; }

const Pow2ScaleTable& trainium3_table(FormatId element) {
  static const Pow2ScaleTable fp8 = mx_scale_table(kE4M3FN, MxScaleRule::kTrainium3);
  static const Pow2ScaleTable e2m1 = mx_scale_table(kE2M1, MxScaleRule::kTrainium3);
  return element == FormatId::kE2M1 ? e2m1 : fp8;
}

// The on-chip x4 image of one-a-byte codes [128, T, N, 4], and back: fp8 codes are the image
// itself, e2m1 codes are packed two a byte (trn3::pack_x4).
std::vector<std::uint8_t> x4_image(FormatId element, std::vector<std::uint8_t> codes) {
  if (element != FormatId::kE2M1) return codes;
  std::vector<std::uint8_t> image(codes.size() / 2);
  t3::pack_x4(t3::X4Type::kFloat4E2M1fnX4, codes, image);
  return image;
}
std::vector<std::uint8_t> x4_codes(FormatId element, std::span<const std::uint8_t> image) {
  if (element != FormatId::kE2M1) return {image.begin(), image.end()};
  std::vector<std::uint8_t> codes(image.size() * 2);
  t3::unpack_x4(t3::X4Type::kFloat4E2M1fnX4, image, codes);
  return codes;
}

// The packed operand as DequantView: logical W [N = out, K = in]; element (n, k) has the code
// the on-chip image holds for K index k, column n, and the scale of MX group
// mx_block_of_k(layout, k) (scales transposed to [N, groups]).
DequantView packed_view(FormatId element, t3::KLayout layout, std::size_t n, std::size_t k,
                        std::span<const std::uint8_t> onchip_codes, std::span<const std::uint8_t> onchip_scales) {
  std::vector<std::uint8_t> kn(k * n);
  t3::from_onchip_codes(layout, k, n, onchip_codes, kn);
  const std::size_t groups = t3::mx_blocks(layout, k);
  std::vector<std::uint8_t> compact(groups * n);
  t3::from_onchip_scales(layout, k, n, onchip_scales, compact);
  DequantView v;
  v.element = element;
  v.rows = n;
  v.cols = k;
  v.codes.resize(n * k);
  for (std::size_t kk = 0; kk < k; ++kk)
    for (std::size_t nn = 0; nn < n; ++nn) v.codes[nn * k + kk] = kn[kk * n + nn];
  v.mx = true;
  v.groups_per_row = groups;
  v.e8m0.resize(n * groups);
  for (std::size_t g = 0; g < groups; ++g)
    for (std::size_t nn = 0; nn < n; ++nn) v.e8m0[nn * groups + g] = compact[g * n + nn];
  v.group_of_col.resize(k);
  for (std::size_t kk = 0; kk < k; ++kk) v.group_of_col[kk] = static_cast<std::uint32_t>(t3::mx_block_of_k(layout, kk));
  return v;
}

// W's rows and columns: [out, in], or experts [E, out, in] as E * out rows.
std::pair<std::size_t, std::size_t> rows_cols(const std::vector<std::uint64_t>& shape) {
  return {shape.size() == 3 ? shape[0] * shape[1] : shape[0], shape.back()};
}

class Trn3Mx final : public Layout {
 public:
  std::string_view name() const override { return "trn3-mx"; }
  std::string_view summary() const override {
    return "Trainium3 MXFP8 (e4m3fn) or MXFP4 (--elem e2m1): U8 E8M0 scales (trainium3 rule); optionally packed x4 "
           "(wrapX / 1x32)";
  }
  void check_options(const LayoutOptions& o) const override {
    if (o.granularity) throw std::invalid_argument("trn3-mx always uses MX groups of 32; --granularity does not apply");
    if (o.element && *o.element != FormatId::kE4M3FN && *o.element != FormatId::kE2M1)
      throw std::invalid_argument("--elem: trn3-mx takes e4m3fn (MXFP8) or e2m1 (MXFP4), not " +
                                  std::string(format_of(*o.element).name));
  }
  std::optional<std::string> cannot_quantize(const std::vector<std::uint64_t>& shape, const LayoutOptions& o) const override {
    if (shape.size() == 3 && o.pack)
      return "a stack of " + std::to_string(shape[0]) + " experts is stored unpacked (without --pack)";
    if (fp4(o) && !o.pack && shape.back() % 2 != 0)
      return "in_features " + std::to_string(shape.back()) + " is odd: e2m1 codes are stored two a byte";
    return std::nullopt;
  }
  bool stores_experts(const LayoutOptions& o) const override { return !o.pack; }
  std::vector<TensorSpec> plan(const WeightRef& w, const LayoutOptions& o) const override {
    const std::uint64_t in = w.shape.back();
    const DType codes = fp4(o) ? DType::kU8 : DType::kF8_E4M3;
    if (!o.pack) {  // [out, in] or experts [E, out, in]
      std::vector<std::uint64_t> c = w.shape, s = w.shape;
      c.back() = fp4(o) ? in / 2 : in;
      s.back() = (in + 31) / 32;
      return {{w.module + ".weight", codes, c}, {w.module + ".weight_scale", DType::kU8, s}};
    }
    const std::uint64_t out = w.shape[0];
    const std::uint64_t t = t3::k_tiles(in);
    return {{w.module + ".weight", codes, {t3::kPartitions, t, out, fp4(o) ? t3::kPacked / 2 : t3::kPacked}},
            {w.module + ".weight_scale", DType::kU8, {t3::kPartitions, t, out}}};
  }
  QuantizedWeight quantize(const WeightRef& w, const LayoutOptions& o) const override {
    const auto [rows, cols] = rows_cols(w.shape);
    const Format& from = source_format(w.dtype);
    const FormatId element = element_of(o);
    const Pow2ScaleTable& table = trainium3_table(element);
    QuantizedWeight out;
    if (!o.pack) {
      MxQuantized q = quantize_mx(w.data, from, rows, cols, table, o, format_of(element));
      out.view = mx_view(element, rows, cols, std::move(q.codes), std::move(q.scales));
      out.tensors = store(w, out.view, o);
      return out;
    }
    // Each row n of W, permuted into on-chip order: position j = 512 t + 4 p + c holds
    // W[n, k_position(layout, t, p, c).k] (0 past K). Then 32 consecutive positions are one
    // hardware MX group (j / 32 = 16 t + p / 8), so plain MX over the permuted rows quantizes
    // each group over exactly its own K indices; zero padding never raises an amax.
    const t3::KLayout layout = *o.pack;
    const std::size_t tiles = t3::k_tiles(cols), width = tiles * t3::kTileK, esz = from.storage_bytes();
    std::vector<std::byte> permuted(rows * width * esz, std::byte{0});
    std::vector<std::size_t> src(width, SIZE_MAX);  // K index of each position (SIZE_MAX: padding)
    for (std::size_t t = 0; t < tiles; ++t)
      for (std::size_t p = 0; p < t3::kPartitions; ++p)
        for (std::size_t c = 0; c < t3::kPacked; ++c) {
          const std::size_t k = t3::k_position(layout, t, p, c).k;
          if (k < cols) src[t * t3::kTileK + p * t3::kPacked + c] = k;
        }
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t j = 0; j < width; ++j)
        if (src[j] != SIZE_MAX) std::memcpy(&permuted[(r * width + j) * esz], &w.data[(r * cols + src[j]) * esz], esz);
    const MxQuantized q = quantize_mx(permuted, from, rows, width, table, o, format_of(element));
    // The view in W's order: element (n, k) and the hardware group of k.
    DequantView& v = out.view;
    v.element = element;
    v.rows = rows;
    v.cols = cols;
    v.codes.resize(rows * cols);
    for (std::size_t n = 0; n < rows; ++n)
      for (std::size_t j = 0; j < width; ++j)
        if (src[j] != SIZE_MAX) v.codes[n * cols + src[j]] = q.codes[n * width + j];
    v.mx = true;
    v.groups_per_row = t3::mx_blocks(layout, cols);  // groups that hold a real K index
    v.e8m0.resize(rows * v.groups_per_row);
    for (std::size_t n = 0; n < rows; ++n)
      for (std::size_t g = 0; g < v.groups_per_row; ++g) v.e8m0[n * v.groups_per_row + g] = q.scales[n * (width / 32) + g];
    v.group_of_col.resize(cols);
    for (std::size_t k = 0; k < cols; ++k) v.group_of_col[k] = static_cast<std::uint32_t>(t3::mx_block_of_k(layout, k));
    out.tensors = store(w, v, o);
    return out;
  }
  std::vector<OutputTensor> store(const WeightRef& w, const DequantView& v, const LayoutOptions& o) const override {
    const auto [rows, cols] = rows_cols(w.shape);
    const FormatId element = element_of(o);
    const auto specs = plan(w, o);
    if (!o.pack) {
      require_mx_view(v, element, rows, cols, name());
      std::vector<std::uint8_t> stored = v.codes;
      if (element == FormatId::kE2M1) {
        stored.resize(v.codes.size() / 2);
        pack_fp4(v.codes, stored);
      }
      return {{specs[0], to_bytes(stored)}, {specs[1], to_bytes(v.e8m0)}};
    }
    const t3::KLayout layout = *o.pack;
    const std::size_t groups = t3::mx_blocks(layout, cols);
    bool hardware = v.element == element && v.rows == rows && v.cols == cols && v.codes.size() == rows * cols && v.mx &&
                    v.groups_per_row == groups && v.e8m0.size() == rows * groups && v.group_of_col.size() == cols;
    for (std::size_t k = 0; hardware && k < cols; ++k) hardware = v.group_of_col[k] == t3::mx_block_of_k(layout, k);
    if (!hardware)
      throw std::invalid_argument("layout trn3-mx --pack " + std::string(t3::k_layout_name(layout)) + " stores " +
                                  std::string(format_of(element).name) + " codes with one E8M0 scale per hardware MX group");
    std::vector<std::uint8_t> kn(cols * rows), compact(groups * rows);
    for (std::size_t n = 0; n < rows; ++n) {
      for (std::size_t k = 0; k < cols; ++k) kn[k * rows + n] = v.codes[n * cols + k];
      for (std::size_t g = 0; g < groups; ++g) compact[g * rows + n] = v.e8m0[n * groups + g];
    }
    std::vector<std::uint8_t> codes(t3::onchip_codes_size(cols, rows)), scales(t3::onchip_scales_size(cols, rows));
    t3::to_onchip_codes(layout, cols, rows, kn, codes);
    t3::to_onchip_scales(layout, cols, rows, compact, scales);
    return {{specs[0], to_bytes(x4_image(element, std::move(codes)))}, {specs[1], to_bytes(scales)}};
  }
  DequantView read_back(const std::string& module, const std::vector<std::uint64_t>& shape, const TensorLookup& lookup,
                        const LayoutOptions& o) const override {
    const auto [rows, cols] = rows_cols(shape);
    WeightRef probe;
    probe.module = module;
    probe.shape = shape;
    const auto specs = plan(probe, o);
    const StoredTensor q = require(lookup, specs[0].name, specs[0].dtype, specs[0].shape);
    const StoredTensor s = require(lookup, specs[1].name, specs[1].dtype, specs[1].shape);
    const FormatId element = element_of(o);
    const std::span<const std::uint8_t> stored{reinterpret_cast<const std::uint8_t*>(q.bytes.data()), q.bytes.size()};
    std::vector<std::uint8_t> scales(s.bytes.size());
    std::memcpy(scales.data(), s.bytes.data(), scales.size());
    if (!o.pack) {
      std::vector<std::uint8_t> codes(rows * cols);
      if (element == FormatId::kE2M1) unpack_fp4(stored, codes);
      else std::copy(stored.begin(), stored.end(), codes.begin());
      return mx_view(element, rows, cols, std::move(codes), std::move(scales));
    }
    try {
      return packed_view(element, *o.pack, rows, cols, x4_codes(element, stored), scales);
    } catch (const std::invalid_argument& e) {
      throw FormatError("tensor \"" + specs[0].name + "\": " + e.what());
    }
  }
  std::vector<std::string> companion_names(const std::string& module) const override {
    return {module + ".weight_scale"};
  }
  std::string quantization_config(const ConfigContext& c) const override {
    OJson j;
    j["quant_method"] = "fp8q";
    j["layout"] = "trn3-mx";
    j["fmt"] = format_of(element_of(c.options)).name;
    j["scale_fmt"] = "e8m0";
    j["group_size"] = 32;
    j["scale_rule"] = "trainium3";
    j["packing"] = c.options.pack ? std::string(t3::k_layout_name(*c.options.pack)) : std::string("none");
    if (c.options.pack) {
      j["packed_shape"] = fp4(c.options)
                              ? "weight [128, ceil(in/512), out, 2] float4_e2m1fn_x4 image; weight_scale [128, ceil(in/512), out]"
                              : "weight [128, ceil(in/512), out, 4] float8_e4m3fn_x4 image; weight_scale [128, ceil(in/512), out]";
      // the packed image pads K to whole tiles: a reader needs each weight's in_features
      OJson in = OJson::object();
      for (const auto& [module, shape] : c.quantized_shapes) in[module] = shape[1];
      j["in_features"] = std::move(in);
    }
    j["activation_scheme"] = "dynamic";
    j["modules_to_not_convert"] = c.kept_linear_modules;
    return j.dump();
  }
};

}  // namespace

const Layout& trn3_mx_layout() {
  static const Trn3Mx layout;
  return layout;
}

}  // namespace fp8q::checkpoint::layouts
