// torch/src/trainium_ops.cpp: Trainium's matmul instructions (kernels/trainium.hpp) and the
// Trainium3 SBUF layouts (quant/trainium3_layout.hpp) on tensors.
#include <ATen/ops/empty.h>

#include <cstring>

#include "fp8q/kernels/trainium.hpp"
#include "fp8q/quant/trainium3_layout.hpp"
#include "fp8q/torch/ops.hpp"
#include "tensor_args.hpp"

namespace fp8q::torch {

using namespace detail;

namespace {
// A tile of codes one a byte (any narrow dtype or uint8) or bf16 values; [K, F] or, in
// double_row mode, [K, F, 2]; t is dense() (the tile views its bytes).
trn::Tile tile_of(const at::Tensor& t, std::string_view format, bool pairs, const char* arg) {
  check_dims(t, pairs ? 3 : 2, arg);
  if (pairs) TORCH_CHECK_VALUE(t.size(2) == 2, arg, " has shape ", shape_text(t.sizes()), "; double_row pairs are [K, F, 2]");
  const FormatId f = resolve_format(t, format, arg);
  TORCH_CHECK_VALUE(!packed_fp4(t, f), arg, ": tiles hold one code a byte; pass e2m1 as uint8 codes");
  TORCH_CHECK_VALUE((is_narrow(f) && f != FormatId::kE8M0) || f == FormatId::kBF16, arg, ": ",
                    std::string(format_of(f).name), " is not an element format or bf16");
  const auto p = static_cast<std::size_t>(t.size(0)), free = static_cast<std::size_t>(t.size(1));
  return {.format = f, .partitions = p, .free = free, .partition_stride = free, .bytes = u8(t)};
}

trn3::X4Type parse_x4(std::string_view name, const char* arg) {
  const auto x = trn3::parse_x4_type(name);
  TORCH_CHECK_VALUE(x.has_value(), arg, ": unknown x4 type '", std::string(name),
                    "' (one of: float8_e4m3fn_x4 float8_e5m2_x4 float4_e2m1fn_x4)");
  return *x;
}

trn3::KLayout parse_layout(std::string_view name) {
  const auto l = trn3::parse_k_layout(name);
  TORCH_CHECK_VALUE(l.has_value(), "layout: unknown '", std::string(name), "' (one of: wrapX 1x32)");
  return *l;
}

at::Tensor psum_out(const std::optional<at::Tensor>& psum_in, std::int64_t m, std::int64_t n, const at::Tensor& like) {
  at::Tensor out = at::empty({m, n}, like.options().dtype(at::kFloat));
  if (!psum_in) return out;
  const at::Tensor psum = dense(*psum_in, "psum");
  check_same_device(psum, like, "psum", "stationary");
  check_dtype(psum, at::kFloat, "psum");
  TORCH_CHECK_VALUE(psum.dim() == 2 && psum.size(0) == m && psum.size(1) == n, "psum has shape ",
                    shape_text(psum.sizes()), "; expected [", m, ", ", n, "] (stationary free x moving free)");
  if (!out.is_meta()) std::memcpy(out.mutable_data_ptr(), psum.const_data_ptr(), out.nbytes());
  return out;
}

// K as the layouts take it (ValueError when negative) and its number of 512-K tiles.
struct KArg {
  std::size_t k;
  std::int64_t tiles;
};
KArg k_arg(std::int64_t k) {
  TORCH_CHECK_VALUE(k >= 0, "k: ", k, " is negative");
  const auto u = static_cast<std::size_t>(k);
  return {u, static_cast<std::int64_t>(trn3::k_tiles(u))};
}

// One code a byte: the dtype of a layout's codes (any narrow dtype but packed fp4, or uint8).
void check_codes(const at::Tensor& t, const char* arg) {
  const auto f = format_of_dtype(t.scalar_type());
  TORCH_CHECK_TYPE(t.scalar_type() == at::kByte || (f && is_narrow(*f) && *f != FormatId::kE2M1), arg, " has dtype ",
                   t.scalar_type(), "; expected codes one a byte (uint8 or a float8 dtype)");
}
}  // namespace

at::Tensor nc_matmul(const at::Tensor& stationary_in, const at::Tensor& moving_in, std::string_view stationary_format,
                     std::string_view moving_format, std::string_view perf_mode,
                     const std::optional<at::Tensor>& psum) {
  return guarded("nc_matmul", [&] {
    TORCH_CHECK_VALUE(perf_mode == "none" || perf_mode == "double_row", "perf_mode: unknown '",
                      std::string(perf_mode), "' (one of: none double_row)");
    const bool pairs = perf_mode == "double_row";
    const at::Tensor stationary = dense(stationary_in, "stationary"), moving = dense(moving_in, "moving");
    const trn::Tile s = tile_of(stationary, stationary_format, pairs, "stationary");
    const trn::Tile mv = tile_of(moving, moving_format, pairs, "moving");
    check_same_device(moving, stationary, "moving", "stationary");
    at::Tensor out = psum_out(psum, stationary.size(1), moving.size(1), stationary);
    if (!compute(stationary)) return out;
    trn::nc_matmul({static_cast<std::size_t>(out.size(0)), static_cast<std::size_t>(out.size(1)), mutable_f32(out)},
                   s, mv, pairs ? trn::PerfMode::kDoubleRow : trn::PerfMode::kNone, psum.has_value());
    return out;
  });
}

at::Tensor nc_matmul_mx(const at::Tensor& stationary_in, const at::Tensor& stationary_scale_in,
                        const at::Tensor& moving_in, const at::Tensor& moving_scale_in, std::string_view stationary_type,
                        std::string_view moving_type, const std::optional<at::Tensor>& psum,
                        bool exact_partition_sum, bool single_rounding_add) {
  return guarded("nc_matmul_mx", [&] {
    const at::Tensor stationary = dense(stationary_in, "stationary"), moving = dense(moving_in, "moving"),
                     stationary_scale = dense(stationary_scale_in, "stationary_scale"),
                     moving_scale = dense(moving_scale_in, "moving_scale");
    const auto x4 = [&](const at::Tensor& t, std::string_view type, const char* arg) {
      check_dtype(t, at::kByte, arg);
      const trn3::X4Type ty = parse_x4(type, arg == std::string_view("stationary") ? "stationary_type" : "moving_type");
      TORCH_CHECK_VALUE(t.dim() == 3 && t.size(2) == static_cast<std::int64_t>(trn3::x4_bytes(ty)), arg,
                        " has shape ", shape_text(t.sizes()), "; an x4 tile of ", std::string(type), " is [P, F, ",
                        trn3::x4_bytes(ty), "] bytes");
      const auto free = static_cast<std::size_t>(t.size(1));
      return trn::X4Tile{ty, static_cast<std::size_t>(t.size(0)), free, free, u8(t)};
    };
    const auto scale = [&](const at::Tensor& t, const at::Tensor& data, const char* arg) {
      check_e8m0(t, arg);
      TORCH_CHECK_VALUE(t.dim() == 2 && t.size(1) == data.size(1), arg, " has shape ", shape_text(t.sizes()),
                        "; expected [partitions, ", data.size(1), "] (one E8M0 byte per x4 column)");
      return trn::ScaleTile{static_cast<std::size_t>(t.size(1)), u8(t)};
    };
    const trn::X4Tile s = x4(stationary, stationary_type, "stationary");
    const trn::X4Tile mv = x4(moving, moving_type, "moving");
    const trn::ScaleTile ss = scale(stationary_scale, stationary, "stationary_scale");
    const trn::ScaleTile ms = scale(moving_scale, moving, "moving_scale");
    at::Tensor out = psum_out(psum, stationary.size(1), moving.size(1), stationary);
    if (!compute(stationary)) return out;
    const Trainium3MxAssumptions a{.exact_partition_sum = exact_partition_sum,
                                   .single_rounding_add = single_rounding_add};
    trn::nc_matmul_mx({static_cast<std::size_t>(out.size(0)), static_cast<std::size_t>(out.size(1)), mutable_f32(out)},
                      s, ss, mv, ms, a, psum.has_value());
    return out;
  });
}

at::Tensor trn3_pack_codes(const at::Tensor& codes_in, std::string_view layout) {
  return guarded("trn3_pack_codes", [&] {
    const at::Tensor codes = dense(codes_in, "codes");
    check_codes(codes, "codes");
    check_dims(codes, 2, "codes");
    const trn3::KLayout l = parse_layout(layout);
    const auto k = static_cast<std::size_t>(codes.size(0)), n = static_cast<std::size_t>(codes.size(1));
    at::Tensor out = at::empty({128, static_cast<std::int64_t>(trn3::k_tiles(k)), codes.size(1), 4}, codes.options());
    if (compute(codes)) trn3::to_onchip_codes(l, k, n, u8(codes), mutable_u8(out));
    return out;
  });
}

at::Tensor trn3_unpack_codes(const at::Tensor& onchip_in, std::string_view layout, std::int64_t k) {
  return guarded("trn3_unpack_codes", [&] {
    const at::Tensor onchip = dense(onchip_in, "onchip");
    check_codes(onchip, "onchip");
    check_dims(onchip, 4, "onchip");
    const trn3::KLayout l = parse_layout(layout);
    const auto [uk, t] = k_arg(k);
    TORCH_CHECK_VALUE(onchip.size(0) == 128 && onchip.size(1) == t && onchip.size(3) == 4, "onchip has shape ",
                      shape_text(onchip.sizes()), "; K = ", k, " lies in [128, ", t, ", N, 4]");
    at::Tensor out = at::empty({k, onchip.size(2)}, onchip.options());
    if (compute(onchip))
      trn3::from_onchip_codes(l, uk, static_cast<std::size_t>(onchip.size(2)), u8(onchip), mutable_u8(out));
    return out;
  });
}

at::Tensor trn3_pack_scales(const at::Tensor& scales_in, std::string_view layout, std::int64_t k) {
  return guarded("trn3_pack_scales", [&] {
    const at::Tensor scales = dense(scales_in, "scales");
    check_e8m0(scales, "scales");
    check_dims(scales, 2, "scales");
    const trn3::KLayout l = parse_layout(layout);
    const auto [uk, t] = k_arg(k);
    const auto blocks = static_cast<std::int64_t>(trn3::mx_blocks(l, uk));
    TORCH_CHECK_VALUE(scales.size(0) == blocks, "scales has shape ", shape_text(scales.sizes()), "; K = ", k,
                      " in layout ", std::string(layout), " has ", blocks, " MX groups (rows)");
    at::Tensor out = at::empty({128, t, scales.size(1)}, scales.options());
    if (compute(scales))
      trn3::to_onchip_scales(l, uk, static_cast<std::size_t>(scales.size(1)), u8(scales), mutable_u8(out));
    return out;
  });
}

at::Tensor trn3_unpack_scales(const at::Tensor& onchip_in, std::string_view layout, std::int64_t k) {
  return guarded("trn3_unpack_scales", [&] {
    const at::Tensor onchip = dense(onchip_in, "onchip");
    check_e8m0(onchip, "onchip");
    check_dims(onchip, 3, "onchip");
    const trn3::KLayout l = parse_layout(layout);
    const auto [uk, t] = k_arg(k);
    TORCH_CHECK_VALUE(onchip.size(0) == 128 && onchip.size(1) == t, "onchip has shape ", shape_text(onchip.sizes()),
                      "; K = ", k, " lies in [128, ", t, ", N]");
    const auto blocks = static_cast<std::int64_t>(trn3::mx_blocks(l, uk));
    at::Tensor out = at::empty({blocks, onchip.size(2)}, onchip.options());
    if (compute(onchip))
      trn3::from_onchip_scales(l, uk, static_cast<std::size_t>(onchip.size(2)), u8(onchip), mutable_u8(out));
    return out;
  });
}

at::Tensor pack_x4(const at::Tensor& codes_in, std::string_view type) {
  return guarded("pack_x4", [&] {
    const at::Tensor codes = dense(codes_in, "codes");
    check_codes(codes, "codes");
    const trn3::X4Type ty = parse_x4(type, "type");
    TORCH_CHECK_VALUE(codes.dim() >= 1 && codes.size(-1) % 4 == 0, "codes has shape ", shape_text(codes.sizes()),
                      "; the last dimension must be a multiple of 4 (four codes an x4 element)");
    std::vector<std::int64_t> shape = codes.sizes().vec();
    shape.back() /= 4;
    shape.push_back(static_cast<std::int64_t>(trn3::x4_bytes(ty)));
    at::Tensor out = new_output(shape, codes.options().dtype(at::kByte));
    if (compute(codes)) trn3::pack_x4(ty, u8(codes), mutable_u8(out));
    return out;
  });
}

at::Tensor unpack_x4(const at::Tensor& image_in, std::string_view type) {
  return guarded("unpack_x4", [&] {
    const at::Tensor image = dense(image_in, "image");
    check_dtype(image, at::kByte, "image");
    const trn3::X4Type ty = parse_x4(type, "type");
    TORCH_CHECK_VALUE(image.dim() >= 2 && image.size(-1) == static_cast<std::int64_t>(trn3::x4_bytes(ty)),
                      "image has shape ", shape_text(image.sizes()), "; ", std::string(type), " containers are [..., ",
                      trn3::x4_bytes(ty), "] bytes");
    std::vector<std::int64_t> shape = image.sizes().vec();
    shape.pop_back();
    shape.back() *= 4;
    // one code a byte: the element's float8 dtype, uint8 for fp4 (float4_e2m1fn_x2 packs two)
    const at::ScalarType dt = ty == trn3::X4Type::kFloat4E2M1fnX4 ? at::kByte
                                                                   : dtype_of(*parse_format(trn3::x4_element_format(ty).name));
    at::Tensor out = at::empty(shape, image.options().dtype(dt));
    if (compute(image)) trn3::unpack_x4(ty, u8(image), mutable_u8(out));
    return out;
  });
}

}  // namespace fp8q::torch
