// torch/src/quantize_ops.cpp: quantize / dequantize (quant/quantized_tensor.hpp) on tensors.
#include <ATen/ops/empty.h>

#include <cmath>


#include "fp8q/quant/granularity.hpp"
#include "fp8q/quant/quantized_tensor.hpp"
#include "fp8q/torch/ops.hpp"
#include "tensor_args.hpp"

namespace fp8q::torch {

using namespace detail;

namespace {
// The scales' tensor shape: the grid, [1, 1] for a per-tensor scale (also of an empty tensor).
std::pair<std::size_t, std::size_t> scale_grid(const Granularity& g, const BlockGrid& grid) {
  if (g.kind == GranularityKind::kTensor) return {1, 1};
  return {grid.grid_rows(), grid.grid_cols()};
}

// The arguments quantize and quantize_nvfp4 share, as QuantizeOptions (quant/quantized_tensor.hpp
// checks their combination).
QuantizeOptions quantize_options(std::string_view format, std::string_view granularity, std::string_view scale_op,
                                 std::int64_t margin, double amax_epsilon, bool power_of_two, std::string_view mx_rule,
                                 std::string_view rounding, std::string_view overflow, std::string_view nan,
                                 std::int64_t seed, std::int64_t offset, std::string_view like = "fp8q") {
  QuantizeOptions o;
  o.element = parse_format_arg(format, "format");
  o.granularity = parse_granularity_arg(granularity);
  o.apply = parse_scale_op_arg(scale_op);
  o.amax = amax_scale_options(margin, amax_epsilon, power_of_two);
  const auto rule = parse_mx_scale_rule(mx_rule);
  TORCH_CHECK_VALUE(rule.has_value(), "mx_rule: unknown '", std::string(mx_rule),
                    "' (one of: floor ceil even rceil trainium3 compressed-tensors)");
  o.mx_rule = *rule;
  const auto producer = parse_producer(like);
  TORCH_CHECK_VALUE(producer.has_value(), "like: unknown '", std::string(like), "' (one of: fp8q compressed-tensors modelopt modelopt-cuda)");
  o.like = *producer;
  o.convert = convert_options(rounding, overflow, nan, seed, offset);
  o.bulk.threads = threads();
  return o;
}
}  // namespace

std::string granularity(std::string_view name, bool transpose) {
  const Granularity g = parse_granularity_arg(name);
  return granularity_name(transpose ? transposed(g) : g);
}

std::tuple<at::Tensor, at::Tensor> quantize(const at::Tensor& x_in, std::string_view format,
                                            std::string_view granularity, std::string_view scale_op,
                                            std::int64_t margin, double amax_epsilon, bool power_of_two,
                                            std::string_view mx_rule, std::string_view rounding,
                                            std::string_view overflow, std::string_view nan, std::int64_t seed,
                                            std::int64_t offset, std::string_view like) {
  return guarded("quantize", [&] {
    const at::Tensor x = dense(x_in, "x");
    const Format& from = source_format(x, "x");
    const QuantizeOptions o = quantize_options(format, granularity, scale_op, margin, amax_epsilon, power_of_two,
                                               mx_rule, rounding, overflow, nan, seed, offset, like);
    TORCH_CHECK_VALUE(o.granularity.kind != GranularityKind::kNvfp4, "granularity: ", std::string(granularity),
                      " has a global scale as well; quantize_nvfp4 returns it");
    const bool mx = o.granularity.kind == GranularityKind::kMx;
    TORCH_CHECK_VALUE(!mx || o.apply == ScaleOp::kMultiply, "scale_op: MX scales are powers of two applied exactly; "
                      "scale_op divide applies to the other granularities");
    const auto shape = unsigned_shape(x.sizes());
    const BlockGrid grid = block_grid(o.granularity, matrix_shape(shape));
    const auto [gr, gc] = scale_grid(o.granularity, grid);
    at::Tensor codes = new_output(code_shape(x.sizes(), o.element, "x"), x.options().dtype(dtype_of(o.element)));
    at::Tensor scales = grid_tensor(gr, gc, x, mx ? at::ScalarType::Float8_e8m0fnu : at::kFloat);
    if (!compute(x)) return std::make_tuple(codes, scales);
    QuantizedOut out{.codes = mutable_u8(codes), .scales = {}, .scale_inv = {}};
    if (mx)
      out.scales = mutable_u8(scales);
    else
      out.scale_inv = mutable_f32(scales);
    fp8q::quantize_into(bytes(x), from, shape, o, out);
    return std::make_tuple(codes, scales);
  });
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> quantize_nvfp4(
    const at::Tensor& x_in, std::string_view format, std::string_view granularity, std::string_view scale_op,
    std::int64_t margin, double amax_epsilon, bool power_of_two, std::string_view mx_rule, std::string_view rounding,
    std::string_view overflow, std::string_view nan, std::int64_t seed, std::int64_t offset, std::string_view like,
    std::optional<double> global_scale) {
  return guarded("quantize_nvfp4", [&] {
    const at::Tensor x = dense(x_in, "x");
    const Format& from = source_format(x, "x");
    QuantizeOptions o = quantize_options(format, granularity, scale_op, margin, amax_epsilon, power_of_two, mx_rule,
                                         rounding, overflow, nan, seed, offset, like);
    if (global_scale) {
      o.global_scale = static_cast<float>(*global_scale);
      TORCH_CHECK_VALUE(std::isnan(*global_scale) || static_cast<double>(*o.global_scale) == *global_scale,
                        "global_scale: ", *global_scale,
                        " is not a float32 value");
    }
    TORCH_CHECK_VALUE(o.granularity == Granularity::nvfp4() || o.granularity == Granularity::nvfp4_2d(),
                      "granularity: quantize_nvfp4 takes nvfp4 (1 x 16) or nvfp4_16x16, not ", std::string(granularity));
    TORCH_CHECK_VALUE(o.element == FormatId::kE2M1, "format: granularity ", std::string(granularity),
                      " scales e2m1 elements, not ", std::string(format_of(o.element).name));
    const auto shape = unsigned_shape(x.sizes());
    const BlockGrid grid = block_grid(o.granularity, matrix_shape(shape));
    at::Tensor codes = new_output(code_shape(x.sizes(), o.element, "x"), x.options().dtype(dtype_of(o.element)));
    at::Tensor scales = grid_tensor(grid.grid_rows(), grid.grid_cols(), x, at::ScalarType::Float8_e4m3fn);
    at::Tensor global = grid_tensor(1, 1, x, at::kFloat).view({1});
    if (!compute(x)) return std::make_tuple(codes, scales, global);
    fp8q::quantize_into(bytes(x), from, shape, o,
                        {.codes = mutable_u8(codes), .scales = mutable_u8(scales), .scale_inv = {},
                         .global_scale = mutable_f32(global)});
    return std::make_tuple(codes, scales, global);
  });
}

at::Tensor unpack_fp4(const at::Tensor& packed_in) {
  return guarded("unpack_fp4", [&] {
    const at::Tensor packed = dense(packed_in, "packed");
    TORCH_CHECK_TYPE(packed.scalar_type() == at::ScalarType::Float4_e2m1fn_x2 || packed.scalar_type() == at::kByte,
                     "packed has dtype ", packed.scalar_type(), "; e2m1 codes two a byte are float4_e2m1fn_x2 or uint8");
    TORCH_CHECK_VALUE(packed.dim() >= 1, "packed: a 0-d tensor holds no pair of codes");
    std::vector<std::int64_t> shape = packed.sizes().vec();
    shape.back() *= 2;
    at::Tensor out = new_output(shape, packed.options().dtype(at::kByte));
    if (!compute(packed)) return out;
    const auto in = u8(packed.view(at::kByte));
    auto o = mutable_u8(out);
    for (std::size_t i = 0; i < in.size(); ++i)
      o[2 * i] = static_cast<std::uint8_t>(in[i] & 0xF), o[2 * i + 1] = static_cast<std::uint8_t>(in[i] >> 4);
    return out;
  });
}

at::Tensor dequantize(const at::Tensor& codes_in, const at::Tensor& scales_in, std::string_view granularity,
                      std::string_view format, at::ScalarType dtype, const std::optional<at::Tensor>& global_scale,
                      std::string_view global_scale_op) {
  return guarded("dequantize", [&] {
    const at::Tensor codes = dense(codes_in, "codes"), scales = dense(scales_in, "scales");
    check_same_device(scales, codes, "scales", "codes");
    QuantizedRef q;
    q.element = resolve_format(codes, format, "codes");
    TORCH_CHECK_VALUE(is_narrow(q.element) && q.element != FormatId::kE8M0, "format: ",
                      std::string(format_of(q.element).name), " is not an element format");
    q.granularity = parse_granularity_arg(granularity);
    const bool mx = q.granularity.kind == GranularityKind::kMx, nvfp4 = q.granularity.kind == GranularityKind::kNvfp4;
    TORCH_CHECK_VALUE(nvfp4 == global_scale.has_value(), "global_scale: ",
                      nvfp4 ? "granularity " + std::string(granularity) + " needs the tensor's global scale"
                            : "only the nvfp4 granularities have a global scale, not " + std::string(granularity));
    TORCH_CHECK_VALUE(global_scale_op == "divide" || global_scale_op == "multiply", "global_scale_op: '",
                      std::string(global_scale_op), "' is not divide or multiply");
    TORCH_CHECK_VALUE(nvfp4 || global_scale_op == "divide", "global_scale_op: only the nvfp4 granularities have a "
                      "global scale, not ", std::string(granularity));
    if (nvfp4) {
      check_same_device(*global_scale, codes, "global_scale", "codes");
      q.global_scale = *scalar_scale(global_scale, "global_scale");
      q.global_op = global_scale_op == "multiply" ? ScaleOp::kMultiply : ScaleOp::kDivide;
    }
    TORCH_CHECK_TYPE(dtype == at::kFloat || dtype == at::kBFloat16 || dtype == at::kHalf, "dtype: ", dtype,
                     " is not float32, bfloat16 or float16");
    const Format& to = dtype == at::kFloat ? kF32 : dtype == at::kBFloat16 ? kBF16 : kF16;
    std::vector<std::int64_t> shape = codes.sizes().vec();
    if (q.element == FormatId::kE2M1) {
      TORCH_CHECK_TYPE(packed_fp4(codes, q.element), "codes: e2m1 codes are float4_e2m1fn_x2 (two a byte), not ",
                       codes.scalar_type());
      TORCH_CHECK_VALUE(!shape.empty(), "codes: a 0-d tensor cannot hold packed e2m1 codes");
      shape.back() *= 2;
    }
    const std::vector<std::uint64_t> ushape = unsigned_shape(shape);
    q.shape = ushape;
    q.grid = block_grid(q.granularity, matrix_shape(q.shape));
    const auto [gr, gc] = scale_grid(q.granularity, q.grid);
    if (mx) {
      check_e8m0(scales, "scales");
    } else if (nvfp4) {
      TORCH_CHECK_TYPE(scales.scalar_type() == at::ScalarType::Float8_e4m3fn || scales.scalar_type() == at::kByte,
                       "scales has dtype ", scales.scalar_type(), "; NVFP4 scales are float8_e4m3fn (or uint8 codes)");
    } else {
      check_dtype(scales, at::kFloat, "scales");
    }
    TORCH_CHECK_VALUE(scales.dim() == 2 && scales.size(0) == static_cast<std::int64_t>(gr) &&
                          scales.size(1) == static_cast<std::int64_t>(gc),
                      "scales has shape ", shape_text(scales.sizes()), "; the ", std::string(granularity),
                      " grid of codes of shape ", shape_text(shape), " is [", gr, ", ", gc, "]");
    at::Tensor out = new_output(shape, codes.options().dtype(dtype));
    if (!compute(codes)) return out;
    q.codes = u8(codes);
    if (mx || nvfp4)
      q.scales = u8(scales);
    else
      q.scale_inv = f32(scales);
    fp8q::dequantize(q, mutable_bytes(out), to, threads());
    return out;
  });
}

}  // namespace fp8q::torch
