// torch/src/convert_ops.cpp: convert, amax, scale_from_amax and cast_transpose on tensors.
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>

#include "fp8q/numerics/bulk.hpp"
#include "fp8q/numerics/cast_transpose.hpp"
#include "fp8q/numerics/hadamard.hpp"
#include "fp8q/quant/amax.hpp"
#include "fp8q/quant/granularity.hpp"
#include "fp8q/quant/quantized_tensor.hpp"
#include "fp8q/quant/scale_rules.hpp"
#include "fp8q/torch/ops.hpp"
#include "tensor_args.hpp"

namespace fp8q::torch {

using namespace detail;

namespace {
struct ConvertCall {
  FormatId src, dst;
  ConvertOptions options;
  std::vector<std::int64_t> out_shape;
};

ConvertCall convert_call(const at::Tensor& x, std::string_view to, std::string_view from, std::string_view rounding,
                         std::string_view overflow, std::string_view nan, std::int64_t seed, std::int64_t offset,
                         const std::optional<at::Tensor>& scale, std::string_view scale_op) {
  ConvertCall c;
  c.src = resolve_format(x, from, "x");
  c.dst = parse_format_arg(to, "to");
  c.options = convert_options(rounding, overflow, nan, seed, offset);
  c.options.scale = scalar_scale(scale, "scale");
  c.options.scale_op = parse_scale_op_arg(scale_op);
  std::vector<std::int64_t> shape = x.sizes().vec();  // of the elements, e2m1 unpacked
  if (packed_fp4(x, c.src)) {
    TORCH_CHECK_VALUE(!shape.empty(), "x: a 0-d tensor cannot hold packed e2m1 codes");
    shape.back() *= 2;
  }
  c.out_shape = code_shape(shape, c.dst, "x");
  return c;
}

void run_convert(const at::Tensor& x, const ConvertCall& c, at::Tensor& out) {
  if (!compute(x)) return;
  std::vector<std::uint8_t> unpacked;
  std::span<const std::byte> in = bytes(x);
  if (packed_fp4(x, c.src)) {
    in = std::as_bytes(codes_of(x, c.src, "x", unpacked));
  }
  BulkOptions bulk;
  bulk.threads = threads();
  if (c.dst == FormatId::kE2M1) {
    std::vector<std::uint8_t> codes(2 * static_cast<std::size_t>(out.nbytes()));
    fp8q::convert(in, format_of(c.src), std::as_writable_bytes(std::span(codes)), format_of(c.dst), c.options, bulk);
    pack_fp4(codes, mutable_u8(out));
  } else {
    fp8q::convert(in, format_of(c.src), mutable_bytes(out), format_of(c.dst), c.options, bulk);
  }
}
}  // namespace

at::Tensor convert(const at::Tensor& x_in, std::string_view to, std::string_view from, std::string_view rounding,
                   std::string_view overflow, std::string_view nan, std::int64_t seed, std::int64_t offset,
                   const std::optional<at::Tensor>& scale, std::string_view scale_op) {
  return guarded("convert", [&] {
    const at::Tensor x = dense(x_in, "x");
    const ConvertCall c = convert_call(x, to, from, rounding, overflow, nan, seed, offset, scale, scale_op);
    at::Tensor out = new_output(c.out_shape, x.options().dtype(dtype_of(c.dst)));
    run_convert(x, c, out);
    return out;
  });
}

void convert_into(const at::Tensor& x_in, std::string_view to, std::string_view from, std::string_view rounding,
                  std::string_view overflow, std::string_view nan, std::int64_t seed, std::int64_t offset,
                  const std::optional<at::Tensor>& scale, std::string_view scale_op, at::Tensor& out) {
  guarded("convert", [&] {
    const at::Tensor x = dense(x_in, "x");
    const ConvertCall c = convert_call(x, to, from, rounding, overflow, nan, seed, offset, scale, scale_op);
    check_tensor(out, "out");
    check_same_device(out, x, "out", "x");
    check_dtype(out, dtype_of(c.dst), "out");
    TORCH_CHECK_VALUE(out.sizes().vec() == c.out_shape, "out has shape ", shape_text(out.sizes()), "; expected ",
                      shape_text(c.out_shape));
    const auto* xb = static_cast<const std::byte*>(x.const_data_ptr());
    const auto* ob = static_cast<const std::byte*>(out.const_data_ptr());
    TORCH_CHECK_VALUE(!compute(x) || x.nbytes() == 0 || out.nbytes() == 0 || ob + out.nbytes() <= xb ||
                          xb + x.nbytes() <= ob,
                      "out overlaps x: the conversion does not run in place");
    run_convert(x, c, out);
  });
}

at::Tensor amax(const at::Tensor& x_in, std::string_view granularity) {
  return guarded("amax", [&] {
    const at::Tensor x = dense(x_in, "x");
    const Format& from = source_format(x, "x");
    const Granularity g = parse_granularity_arg(granularity);
    const auto shape = unsigned_shape(x.sizes());
    const BlockGrid grid = block_grid(g, matrix_shape(shape));
    const bool lone = g.kind == GranularityKind::kTensor;  // [1, 1], +0 for an empty tensor
    at::Tensor out = grid_tensor(lone ? 1 : grid.grid_rows(), lone ? 1 : grid.grid_cols(), x, at::kFloat);
    if (!compute(x) || grid.grid_size() == 0) return out;
    block_amax(bytes(x), from, grid, mutable_f32(out), threads());
    return out;
  });
}

at::Tensor hadamard16(const at::Tensor& x_in, std::int64_t sign_mask) {
  return guarded("hadamard16", [&] {
    const at::Tensor x = dense(x_in, "x");
    TORCH_CHECK_TYPE(x.scalar_type() == at::kFloat || x.scalar_type() == at::kBFloat16 || x.scalar_type() == at::kHalf,
                     "x has dtype ", x.scalar_type(), "; the transform takes float32, bfloat16 or float16");
    TORCH_CHECK_VALUE(x.dim() >= 1 && x.size(-1) % 16 == 0, "x has shape ", shape_text(x.sizes()),
                      ": its last dimension must be a multiple of 16 (blocks of 16 along it)");
    TORCH_CHECK_VALUE(sign_mask >= 0 && sign_mask <= 0xFFFF, "sign_mask: ", sign_mask,
                      " is not a 16-bit mask (0 to 65535)");
    at::Tensor out = new_output(x.sizes().vec(), x.options().dtype(at::kFloat));
    if (!compute(x)) return out;
    const at::Tensor xf = x.scalar_type() == at::kFloat ? x : x.to(at::kFloat);  // exact widening
    fp8q::hadamard16(f32(xf), mutable_f32(out), static_cast<std::uint16_t>(sign_mask), threads());
    return out;
  });
}

at::Tensor scale_from_amax(const at::Tensor& amax_in, std::string_view format, std::string_view scale_op,
                           std::int64_t margin, double amax_epsilon, bool power_of_two) {
  return guarded("scale_from_amax", [&] {
    const at::Tensor amax = dense(amax_in, "amax");
    check_dtype(amax, at::kFloat, "amax");
    const Format& target = format_of(parse_format_arg(format, "format"));
    const ScaleOp op = parse_scale_op_arg(scale_op);
    const AmaxScaleOptions o = amax_scale_options(margin, amax_epsilon, power_of_two);
    at::Tensor out = at::empty(amax.sizes(), amax.options());
    if (!compute(amax)) return out;
    const auto in = f32(amax);
    const auto dst = mutable_f32(out);
    for (std::size_t i = 0; i < in.size(); ++i)
      dst[i] = op == ScaleOp::kMultiply ? fp8q::scale_from_amax(in[i], target, o) : scale_inv_from_amax(in[i], target, o);
    return out;
  });
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> cast_transpose(const at::Tensor& x_in, std::string_view to,
                                                              const std::optional<at::Tensor>& scale,
                                                              std::string_view rounding, std::string_view overflow,
                                                              std::string_view nan, std::int64_t seed,
                                                              std::int64_t offset) {
  return guarded("cast_transpose", [&] {
    const at::Tensor x = dense(x_in, "x");
    check_dims(x, 2, "x");
    const Format& from = source_format(x, "x");
    const FormatId dst = parse_format_arg(to, "to");
    ConvertOptions o = convert_options(rounding, overflow, nan, seed, offset);
    o.scale = scalar_scale(scale, "scale");
    const std::int64_t rows = x.size(0), cols = x.size(1);
    const auto opts = x.options().dtype(dtype_of(dst));
    at::Tensor q = new_output(code_shape({rows, cols}, dst, "x"), opts);
    at::Tensor qt = new_output(code_shape({cols, rows}, dst, "x transposed"), opts);
    at::Tensor a = at::empty({}, x.options().dtype(at::kFloat));
    if (!compute(x)) return std::make_tuple(q, qt, a);
    const auto r = static_cast<std::size_t>(rows), c = static_cast<std::size_t>(cols);
    BulkOptions bulk;
    bulk.threads = threads();
    float m = 0;
    if (dst == FormatId::kE2M1) {
      std::vector<std::uint8_t> cq(r * c), cqt(r * c);
      m = fp8q::cast_transpose(bytes(x), from, r, c, cq, cqt, format_of(dst), o, bulk);
      pack_fp4(cq, mutable_u8(q));
      pack_fp4(cqt, mutable_u8(qt));
    } else {
      m = fp8q::cast_transpose(bytes(x), from, r, c, mutable_u8(q), mutable_u8(qt), format_of(dst), o, bulk);
    }
    *a.mutable_data_ptr<float>() = m;
    return std::make_tuple(q, qt, a);
  });
}

}  // namespace fp8q::torch
