// Float8Linear for LibTorch: the three GEMMs of python/fp8q/training/linear.py with the same
// casts, keys and state, on the operators of fp8q/torch/ops.hpp (docs/training.md).
#include <torch/autograd.h>
#include <torch/nn/init.h>

#include <cmath>
#include <optional>

#include "fp8q/quant/granularity.hpp"
#include "fp8q/torch/ops.hpp"
#include "fp8q/torch/training.hpp"

namespace fp8q::torch {
namespace {

using ::torch::autograd::AutogradContext;
using ::torch::autograd::variable_list;

struct Quantized {
  at::Tensor codes, scales;
  std::string format, granularity;
  at::Tensor global_scale{};  // NVFP4's S; undefined otherwise

  std::optional<at::Tensor> global() const {
    return global_scale.defined() ? std::optional<at::Tensor>(global_scale) : std::nullopt;
  }
};

// splitmix64 over the words, as fp8q.training's _mix: the stochastic-rounding key of
// (recipe seed, layer, step, operand).
std::uint64_t mix(std::initializer_list<std::uint64_t> words) {
  std::uint64_t h = 0;
  for (std::uint64_t w : words) {
    h = (h ^ w) + 0x9E3779B97F4A7C15ull;
    h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ull;
    h = (h ^ (h >> 27)) * 0x94D049BB133111EBull;
    h ^= h >> 31;
  }
  return h;
}

// The stochastic-rounding key of a role's cast: the role's number is its place in kRoles, from 1.
struct Keys {
  std::uint64_t seed, layer, step;
  std::int64_t of(const Cast& c, Role r) const {
    return c.rounding == Rounding::kStochastic
               ? static_cast<std::int64_t>(mix({seed, layer, step, static_cast<std::uint64_t>(r) + 1}))
               : 0;
  }
  // The Hadamard transform's signs: one key (7) per layer and step, shared by dy_t and x_t.
  std::int64_t sign_mask() const { return static_cast<std::int64_t>(mix({seed, layer, step, 7}) & 0xFFFF); }
};

// A delayed cast's state: the history and scale buffers it reads and updates.
struct State {
  at::Tensor history, scale;
};

std::string format_name(const Cast& c) { return std::string(format_of(c.format).name); }
const char* scale_op_name(const Cast& c) { return c.scale_op == ScaleOp::kDivide ? "divide" : "multiply"; }

// t quantized with cast c, on granularity g (c's own, or the transposed one of a plan).
Quantized cast(const at::Tensor& t_in, const Cast& c, const Granularity& g, std::int64_t seed, const Recipe& r,
               const State* delayed, std::int64_t sign_mask = 0) {
  const std::string f = format_name(c);
  const at::Tensor t = c.hadamard ? hadamard16(t_in, sign_mask) : t_in;
  if (g.kind == GranularityKind::kNvfp4) {
    auto [codes, scales, global] = quantize_nvfp4(t, f, granularity_name(g), scale_op_name(c), 0, 0.0, c.power_of_two,
                                                  mx_scale_rule_name(c.mx_rule), rounding_name(c.rounding), "saturate",
                                                  "error", seed, 0);
    return {codes, scales, f, granularity_name(g), global};
  }
  if (g != Granularity::tensor()) {
    auto [codes, scales] = quantize(t, f, granularity_name(g), scale_op_name(c), 0, 0.0, c.power_of_two,
                                    mx_scale_rule_name(c.mx_rule), rounding_name(c.rounding), "saturate", "error", seed, 0);
    return {codes, scales, f, granularity_name(g)};
  }
  if (delayed == nullptr) {
    const at::Tensor scale = scale_from_amax(amax(t, "tensor").reshape({1}), f, "multiply", 0, 0.0, c.power_of_two);
    auto [codes, scale_inv, a] = quantize_scaled(t, f, scale, rounding_name(c.rounding), seed, 0);
    return {codes, scale_inv, f, "tensor"};
  }
  auto [codes, scale_inv, a] = quantize_scaled(t, f, delayed->scale, rounding_name(c.rounding), seed, 0);
  auto [history, scale] = delayed_update(delayed->history, delayed->scale, a.reshape({1}), f,
                                         amax_algorithm_name(r.amax_compute), r.margin, c.power_of_two);
  ::torch::NoGradGuard no_grad;
  delayed->history.copy_(history);
  delayed->scale.copy_(scale);
  return {codes, scale_inv, f, "tensor"};
}

// t^T's cast from t's (data movement): the codes and the scale grid transposed.
Quantized transposed(const Quantized& q) {
  return {q.codes.t().contiguous(), q.scales.t().contiguous(), q.format,
          granularity_name(transposed(granularity_named(q.granularity, "granularity"))), q.global_scale};
}

// Codes one a byte (packed e2m1 unpacked), so that a transpose moves whole codes.
at::Tensor unpacked(const at::Tensor& codes) {
  return codes.scalar_type() == at::ScalarType::Float4_e2m1fn_x2 ? unpack_fp4(codes) : codes;
}

// A backward GEMM's B: [K, N] quantized along K, which matmul takes as it is (is_b), or B^T
// [N, K], which linear lays out as B.
struct Operand {
  Quantized q;
  bool is_b;
};

// fp8q.linear: y = A (B^T)^T, A [M, K], B^T [N, K], both quantized along K.
at::Tensor linear(const Quantized& a, const Quantized& bt, const std::optional<at::Tensor>& bias, const Recipe& r,
                  at::ScalarType out_dtype) {
  const std::string bg = granularity_name(transposed(granularity_named(bt.granularity, "granularity")));
  const at::Tensor bscale = bt.scales.dim() == 2 ? bt.scales.t().contiguous() : bt.scales;
  return matmul(a.codes, unpacked(bt.codes).t().contiguous(), r.profile, a.format, bt.format, a.granularity, a.scales,
                bg, bscale, std::nullopt, bias, r.model, out_dtype, false, "epilogue", a.global(), bt.global());
}

at::Tensor gemm(const Quantized& a, const Operand& b, const Recipe& r, at::ScalarType out_dtype) {
  if (!b.is_b) return linear(a, b.q, std::nullopt, r, out_dtype);
  return matmul(a.codes, b.q.codes, r.profile, a.format, b.q.format, a.granularity, a.scales, b.q.granularity,
                b.q.scales, std::nullopt, std::nullopt, r.model, out_dtype, false, "epilogue", a.global(), b.q.global());
}

// A backward operand from t (W, x or dy) as the plan says: t's forward-side cast qa itself, the
// role's cast computed on t (laid out like t: B as it is, A transposed), or the cast of t^T.
Operand b_operand(const at::Tensor& t, const Quantized& qa, const OperandPlan& p, Role rb, const Keys& k,
                  const Recipe& r) {
  const Cast& b = r.cast(rb);
  switch (p.source) {
    case Source::kSameCast: return {qa, true};
    case Source::kCastOfT: return {cast(t, b, p.on_t, 0, r, nullptr), true};
    case Source::kCastOfTranspose: break;
  }
  return {cast(t.t().contiguous(), b, b.granularity, k.of(b, rb), r, nullptr, k.sign_mask()), false};
}

Quantized a_operand(const at::Tensor& t, const Quantized& qa, const OperandPlan& p, Role rb, const Keys& k,
                    const Recipe& r) {
  const Operand o = b_operand(t, qa, p, rb, k, r);
  return o.is_b ? transposed(o.q) : o.q;
}

// The recipe a forward hands its backward, held by reference count rather than re-read from JSON.
struct RecipeHolder : ::torch::CustomClassHolder {
  explicit RecipeHolder(Recipe r) : recipe(std::move(r)) {}
  Recipe recipe;
};

at::ScalarType out_dtype_of(const at::Tensor& t, const char* what) {
  TORCH_CHECK_TYPE(t.scalar_type() == at::kFloat || t.scalar_type() == at::kBFloat16, "Float8Linear: ", what,
                   " is ", t.scalar_type(), "; it computes in float32 or bfloat16");
  return t.scalar_type();
}

State state_of(Float8LinearImpl& layer, const char* role) {
  return {layer.named_buffers()[std::string("fp8_history_") + role], layer.named_buffers()[std::string("fp8_scale_") + role]};
}

struct Float8LinearFunction : ::torch::autograd::Function<Float8LinearFunction> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                            Float8LinearImpl* layer, std::int64_t step) {
    const Recipe& r = layer->options.recipe();
    const Keys keys{r.seed, layer->options.layer_id(), static_cast<std::uint64_t>(step)};
    const at::Tensor x2 = x.reshape({-1, x.size(-1)}).contiguous();
    std::optional<State> sx, sw, sdy;
    if (r.cast(Role::kX).scaling == Scaling::kDelayed) sx = state_of(*layer, "x");
    if (r.cast(Role::kW).scaling == Scaling::kDelayed) sw = state_of(*layer, "w");
    if (r.cast(Role::kDy).scaling == Scaling::kDelayed) sdy = state_of(*layer, "dy");
    const at::Tensor w = weight.contiguous();
    const Cast &cx = r.cast(Role::kX), &cw = r.cast(Role::kW);
    const Quantized xq = cast(x2, cx, cx.granularity, keys.of(cx, Role::kX), r, sx ? &*sx : nullptr,
                                keys.sign_mask());
    const Quantized wq = cast(w, cw, cw.granularity, keys.of(cw, Role::kW), r, sw ? &*sw : nullptr,
                                keys.sign_mask());
    std::optional<at::Tensor> b;
    if (bias.defined()) b = bias.to(at::kFloat);
    const at::Tensor y = linear(xq, wq, b, r, out_dtype_of(x, "the input"));
    // the backward's B operands: W (along N) for dx, x (along M) for dW
    const TrainingPlan plan = training_plan(r);
    const Operand wb = b_operand(w, wq, plan.w_t, Role::kWT, keys, r);
    const Operand xb = b_operand(x2, xq, plan.x_t, Role::kXT, keys, r);
    ctx->save_for_backward({wb.q.codes, wb.q.scales, wb.q.global_scale, xb.q.codes, xb.q.scales, xb.q.global_scale});
    ctx->saved_data["recipe"] = c10::IValue::make_capsule(c10::make_intrusive<RecipeHolder>(r));
    ctx->saved_data["formats"] =
        std::vector<std::string>{wb.q.format, wb.q.granularity, xb.q.format, xb.q.granularity};
    ctx->saved_data["is_b"] = std::vector<bool>{wb.is_b, xb.is_b};
    ctx->saved_data["keys"] = std::vector<std::int64_t>{static_cast<std::int64_t>(keys.seed),
                                                        static_cast<std::int64_t>(keys.layer), step};
    ctx->saved_data["x_shape"] = x.sizes().vec();
    ctx->saved_data["x_dtype"] = x.scalar_type();
    ctx->saved_data["w_dtype"] = weight.scalar_type();
    ctx->saved_data["has_bias"] = bias.defined();
    if (sdy) {
      ctx->saved_data["history_dy"] = sdy->history;
      ctx->saved_data["scale_dy"] = sdy->scale;
    }
    std::vector<std::int64_t> shape = x.sizes().vec();
    shape.back() = y.size(1);
    return y.reshape(shape);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const Recipe& r = static_cast<RecipeHolder*>(ctx->saved_data["recipe"].toCapsule().get())->recipe;
    const auto saved = ctx->get_saved_variables();
    const auto f = ctx->saved_data["formats"].to<std::vector<std::string>>();
    const auto is_b = ctx->saved_data["is_b"].toBoolList();
    const Operand wb{{saved[0], saved[1], f[0], f[1], saved[2]}, is_b[0]},
        xb{{saved[3], saved[4], f[2], f[3], saved[5]}, is_b[1]};
    const auto k = ctx->saved_data["keys"].toIntVector();
    const Keys keys{static_cast<std::uint64_t>(k[0]), static_cast<std::uint64_t>(k[1]), static_cast<std::uint64_t>(k[2])};
    std::optional<State> sdy;
    if (ctx->saved_data.count("history_dy") != 0)
      sdy = State{ctx->saved_data["history_dy"].toTensor(), ctx->saved_data["scale_dy"].toTensor()};
    const at::Tensor dy2 = grads[0].reshape({-1, grads[0].size(-1)}).contiguous();
    const Cast& cdy = r.cast(Role::kDy);
    const Quantized dyq = cast(dy2, cdy, cdy.granularity, keys.of(cdy, Role::kDy), r, sdy ? &*sdy : nullptr,
                                 keys.sign_mask());
    const auto x_dtype = ctx->saved_data["x_dtype"].toScalarType();
    const auto w_dtype = ctx->saved_data["w_dtype"].toScalarType();
    const at::Tensor dx = gemm(dyq, wb, r, x_dtype).reshape(ctx->saved_data["x_shape"].toIntVector());
    const at::Tensor dw = gemm(a_operand(dy2, dyq, training_plan(r).dy_t, Role::kDyT, keys, r), xb, r, w_dtype);
    at::Tensor db;
    if (ctx->saved_data["has_bias"].toBool()) db = dy2.sum(0).to(w_dtype);  // as fp8q::bias_grad: torch's sum
    return {dx, dw, db, at::Tensor(), at::Tensor()};
  }
};

}  // namespace

Float8LinearImpl::Float8LinearImpl(const Float8LinearOptions& o) : options(o) {
  options.recipe().validate();
  reset();
}

void Float8LinearImpl::reset() {
  weight = register_parameter("weight", ::torch::empty({options.out_features(), options.in_features()}));
  ::torch::nn::init::kaiming_uniform_(weight, std::sqrt(5.0));  // nn.Linear's initialisation
  if (options.bias()) {
    bias = register_parameter("bias", ::torch::empty({options.out_features()}));
    const double bound = options.in_features() > 0 ? 1.0 / std::sqrt(static_cast<double>(options.in_features())) : 0.0;
    ::torch::nn::init::uniform_(bias, -bound, bound);
  } else {
    bias = register_parameter("bias", {}, /*requires_grad=*/false);
  }
  register_buffer("fp8_step", ::torch::zeros({}, ::torch::kInt64));
  if (options.recipe().delayed())
    for (const char* role : {"x", "w", "dy"}) {
      register_buffer(std::string("fp8_history_") + role, ::torch::zeros({options.recipe().history_length}));
      register_buffer(std::string("fp8_scale_") + role, ::torch::ones({1}));
    }
}

at::Tensor Float8LinearImpl::forward(const at::Tensor& x) {
  at::Tensor step = named_buffers()["fp8_step"];
  const std::int64_t s = step.item<std::int64_t>();
  {
    ::torch::NoGradGuard no_grad;
    step.add_(1);
  }
  return Float8LinearFunction::apply(x, weight, bias, this, s);
}

}  // namespace fp8q::torch
