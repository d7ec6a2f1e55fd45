// torch/src/matmul_ops.cpp: the quantized GEMM of a device profile (kernels/gemm.hpp,
// kernels/profile.hpp, kernels/trainium.hpp) on tensors.
#include <ATen/ops/empty.h>

#include "fp8q/kernels/gemm.hpp"
#include "fp8q/kernels/profile.hpp"
#include "fp8q/kernels/trainium.hpp"
#include "fp8q/torch/ops.hpp"
#include "tensor_args.hpp"

namespace fp8q::torch {

using namespace detail;

namespace {
// One operand: its codes (one a byte) and scales, checked against the scaling's shape.
struct Operand {
  std::vector<std::uint8_t> unpacked;  // e2m1 codes one a byte
  std::span<const std::uint8_t> codes;
  std::vector<float> scale_inv;
  std::vector<std::uint8_t> scale_codes;  // E8M0 (MX) or E4M3FN (NVFP4)
  float global_scale = 1.0f;              // NVFP4's S
  GemmOperand view(FormatId f, const Granularity& g) const { return {f, codes, g, scale_inv, scale_codes, global_scale}; }
};

// The scales of granularity g on an operand [rows, cols]: the block grid's shape (gemm.hpp); a
// per-tensor scale may be absent (a multiplier of 1), 0-d or one element in any shape, a
// per-channel one also 1-D.
void load_scales(Operand& op, const Granularity& g, const std::optional<at::Tensor>& t_in,
                 const std::optional<at::Tensor>& global, std::int64_t rows, std::int64_t cols, const at::Tensor& ref,
                 const char* arg, const char* global_arg) {
  const bool tensor = g.kind == GranularityKind::kTensor, mx = g.kind == GranularityKind::kMx,
             nvfp4 = g.kind == GranularityKind::kNvfp4;
  TORCH_CHECK_VALUE(nvfp4 == global.has_value(), global_arg, ": ",
                    nvfp4 ? "granularity " + granularity_name(g) + " needs the operand's NVFP4 global scale"
                          : "only NVFP4 operands have a global scale, not granularity " + granularity_name(g));
  if (nvfp4) {
    check_same_device(*global, ref, global_arg, "a");
    op.global_scale = *scalar_scale(global, global_arg);
  }
  if (tensor && !t_in.has_value()) return;
  const BlockGrid grid = block_grid(g, {static_cast<std::size_t>(rows), static_cast<std::size_t>(cols)});
  const std::vector<std::int64_t> want{static_cast<std::int64_t>(grid.grid_rows()), static_cast<std::int64_t>(grid.grid_cols())};
  TORCH_CHECK_VALUE(t_in.has_value(), arg, " is missing: granularity ", granularity_name(g), " needs scales of shape ",
                    shape_text(want));
  const std::optional<at::Tensor> t = dense(t_in, arg);
  check_same_device(*t, ref, arg, "a");
  if (mx) {
    check_e8m0(*t, arg);
  } else if (nvfp4) {
    TORCH_CHECK_TYPE(t->scalar_type() == at::ScalarType::Float8_e4m3fn || t->scalar_type() == at::kByte, arg,
                     " has dtype ", t->scalar_type(), "; NVFP4 scales are float8_e4m3fn (or uint8 codes)");
  } else {
    check_dtype(*t, at::kFloat, arg);
  }
  const bool channel = g.kind == GranularityKind::kRow || g.kind == GranularityKind::kColumn;
  const bool ok = tensor ? t->numel() == 1
                         : (t->sizes().vec() == want || (channel && t->dim() == 1 && t->numel() == numel_of(want)));
  TORCH_CHECK_VALUE(ok, arg, " has shape ", shape_text(t->sizes()), "; expected ", shape_text(want));
  if (t->is_meta()) return;
  if (mx || nvfp4) {
    const auto b = u8(*t);
    op.scale_codes.assign(b.begin(), b.end());
  } else {
    const auto v = f32(*t);
    op.scale_inv.assign(v.begin(), v.end());
  }
}
}  // namespace

at::Tensor matmul(const at::Tensor& a_in, const at::Tensor& b_in, std::string_view profile, std::string_view a_format,
                  std::string_view b_format, std::string_view a_granularity, const std::optional<at::Tensor>& a_scale,
                  std::string_view b_granularity, const std::optional<at::Tensor>& b_scale,
                  const std::optional<at::Tensor>& c_in, const std::optional<at::Tensor>& bias_in, std::string_view model,
                  at::ScalarType out_dtype, bool trainium, std::string_view c_role,
                  const std::optional<at::Tensor>& a_global_scale, const std::optional<at::Tensor>& b_global_scale) {
  return guarded("matmul", [&] {
    const at::Tensor a = dense(a_in, "a"), b = dense(b_in, "b");
    const std::optional<at::Tensor> c = dense(c_in, "c"), bias = dense(bias_in, "bias");
    check_same_device(b, a, "b", "a");
    check_dims(a, 2, "a");
    check_dims(b, 2, "b");
    const FormatId fa = resolve_format(a, a_format, "a"), fb = resolve_format(b, b_format, "b");
    TORCH_CHECK_VALUE(is_narrow(fa) && fa != FormatId::kE8M0, "a: ", std::string(format_of(fa).name),
                      " is not an element format (a holds codes)");
    TORCH_CHECK_VALUE(is_narrow(fb) && fb != FormatId::kE8M0, "b: ", std::string(format_of(fb).name),
                      " is not an element format (b holds codes)");
    const std::int64_t m = a.size(0), k = a.size(1) * (packed_fp4(a, fa) ? 2 : 1);
    const std::int64_t kb = b.size(0), n = b.size(1) * (packed_fp4(b, fb) ? 2 : 1);
    TORCH_CHECK_VALUE(k == kb, "a is [", m, ", ", k, "] and b is [", kb, ", ", n, "]: K differs");
    TORCH_CHECK_TYPE(out_dtype == at::kFloat || out_dtype == at::kBFloat16, "out_dtype: ", out_dtype,
                     " is not float32 or bfloat16");
    const auto pid = parse_profile(profile);
    TORCH_CHECK_VALUE(pid.has_value(), "profile: unknown '", std::string(profile),
                      "' (one of: trn2 trn3 ocp hopper fp32)");
    std::optional<AccumulationModel> override;
    if (!model.empty()) {
      override = parse_model(model);
      TORCH_CHECK_VALUE(override.has_value(), "model: unknown '", std::string(model),
                        "' (e.g. fp32_sequential, exact_block:32, systolic:128, fused:32:13:rtz, trainium3_mx:wrapx)");
    }
    const Granularity ga = parse_granularity_arg(a_granularity, "a_granularity"),
                      gb = parse_granularity_arg(b_granularity, "b_granularity");
    const std::optional<CRole> role = parse_c_role(c_role);
    TORCH_CHECK_VALUE(role.has_value(), "c_role: unknown '", std::string(c_role), "' (one of: epilogue accumulator)");
    TORCH_CHECK_VALUE(*role == CRole::kEpilogue || c.has_value(),
                      "c_role: 'accumulator' needs c (the accumulator input, float32 [M, N])");
    Operand oa, ob;
    load_scales(oa, ga, a_scale, a_global_scale, m, k, a, "a_scale", "a_global_scale");
    load_scales(ob, gb, b_scale, b_global_scale, k, n, a, "b_scale", "b_global_scale");
    std::span<const float> cv, bv;
    if (c) {
      check_same_device(*c, a, "c", "a");
      check_dtype(*c, at::kFloat, "c");
      TORCH_CHECK_VALUE(c->dim() == 2 && c->size(0) == m && c->size(1) == n, "c has shape ", shape_text(c->sizes()),
                        "; expected [", m, ", ", n, "]");
    }
    if (bias) {
      check_same_device(*bias, a, "bias", "a");
      check_dtype(*bias, at::kFloat, "bias");
      TORCH_CHECK_VALUE(bias->dim() == 1 && bias->size(0) == n, "bias has shape ", shape_text(bias->sizes()),
                        "; expected [", n, "]");
    }
    at::Tensor out = new_output({m, n}, a.options().dtype(out_dtype));
    if (!compute(a)) return out;
    oa.codes = codes_of(a, fa, "a", oa.unpacked);
    ob.codes = codes_of(b, fb, "b", ob.unpacked);
    if (c) cv = f32(*c);
    if (bias) bv = f32(*bias);
    const GemmArgs args{.m = static_cast<std::size_t>(m), .n = static_cast<std::size_t>(n),
                        .k = static_cast<std::size_t>(k), .a = oa.view(fa, ga), .b = ob.view(fb, gb), .c = cv,
                        .bias = bv, .c_role = *role};
    const GemmOptions opts = gemm_options(device_profile(*pid), args, override, threads());
    if (out_dtype == at::kFloat) {
      trainium ? trn::gemm_trainium(args, opts, mutable_f32(out)) : gemm(args, opts, mutable_f32(out));
    } else {
      std::span<std::uint16_t> o{static_cast<std::uint16_t*>(out.mutable_data_ptr()), static_cast<std::size_t>(m * n)};
      trainium ? trn::gemm_trainium(args, opts, o) : gemm(args, opts, o);
    }
    return out;
  });
}

}  // namespace fp8q::torch
