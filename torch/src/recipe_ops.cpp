// torch/src/recipe_ops.cpp: the training recipes (quant/recipes/recipe.hpp) as JSON for Python,
// and the per-tensor delayed-scaling step (quant/recipes/delayed_scaling.hpp) on tensors: the
// cast with a given scale and its amax in one pass, and the state update.
#include <ATen/ops/empty.h>

#include <cstring>

#include "fp8q/numerics/arith.hpp"
#include "fp8q/numerics/bulk.hpp"
#include "fp8q/quant/recipes/delayed_scaling.hpp"
#include "fp8q/quant/recipes/recipe.hpp"
#include "fp8q/quant/scale_rules.hpp"
#include "fp8q/torch/ops.hpp"
#include "tensor_args.hpp"

namespace fp8q::torch {

using namespace detail;

std::tuple<at::Tensor, at::Tensor, at::Tensor> quantize_scaled(const at::Tensor& x_in, std::string_view format,
                                                                const at::Tensor& scale, std::string_view rounding,
                                                                std::int64_t seed, std::int64_t offset) {
  return guarded("quantize_scaled", [&] {
    const at::Tensor x = dense(x_in, "x");
    check_same_device(dense(scale, "scale"), x, "scale", "x");
    const Format& from = source_format(x, "x");
    const FormatId to = parse_format_arg(format, "format");
    TORCH_CHECK_VALUE(is_narrow(to) && to != FormatId::kE8M0 && to != FormatId::kE2M1, "format: ",
                      std::string(format_of(to).name), " is not an 8-bit element format");
    ConvertOptions o = convert_options(rounding, "saturate", "error", seed, offset);
    at::Tensor codes = new_output(x.sizes(), x.options().dtype(dtype_of(to)));
    at::Tensor scale_inv = grid_tensor(1, 1, x, at::kFloat);
    at::Tensor amax = at::empty({}, x.options().dtype(at::kFloat));
    o.scale = scalar_scale(scale, "scale");
    if (!compute(x)) return std::make_tuple(codes, scale_inv, amax);
    BulkOptions bulk;
    bulk.threads = threads();
    *amax.mutable_data_ptr<float>() = convert_with_amax(bytes(x), from, mutable_bytes(codes), format_of(to), o, bulk);
    *scale_inv.mutable_data_ptr<float>() = divide_rne(1.0f, *o.scale);  // DelayedScaling::scale_inv()
    return std::make_tuple(codes, scale_inv, amax);
  });
}

std::tuple<at::Tensor, at::Tensor> delayed_update(const at::Tensor& history_in, const at::Tensor& scale_in,
                                                  const at::Tensor& amax_in, std::string_view format,
                                                  std::string_view algorithm, std::int64_t margin, bool power_of_two) {
  return guarded("delayed_update", [&] {
    const at::Tensor history = dense(history_in, "history"), scale = dense(scale_in, "scale"),
                     amax = dense(amax_in, "amax");
    check_dtype(history, at::kFloat, "history");
    check_dtype(scale, at::kFloat, "scale");
    check_dtype(amax, at::kFloat, "amax");
    check_same_device(scale, history, "scale", "history");
    check_same_device(amax, history, "amax", "history");
    check_dims(history, 1, "history");
    TORCH_CHECK_VALUE(history.numel() >= 1, "history: a delayed-scaling history holds at least one amax");
    TORCH_CHECK_VALUE(scale.numel() == 1, "scale has ", scale.numel(), " elements; it is one value");
    TORCH_CHECK_VALUE(amax.numel() == 1, "amax has ", amax.numel(), " elements; it is one value");
    DelayedScalingConfig c;
    c.format = parse_format_arg(format, "format");
    const auto a = parse_amax_algorithm(algorithm);
    TORCH_CHECK_VALUE(a.has_value(), "algorithm: unknown '", std::string(algorithm), "' (one of: max most_recent)");
    c.algorithm = *a;
    TORCH_CHECK_VALUE(margin >= -kMaxMargin && margin <= kMaxMargin, "margin: must be in [-", kMaxMargin, ", ",
                      kMaxMargin, "], got ", margin);
    c.margin = static_cast<int>(margin);
    c.power_of_two = power_of_two;
    TORCH_CHECK_VALUE(history.numel() <= (std::int64_t{1} << 24), "history: at most 2^24 amaxes, got ", history.numel());
    c.history_length = static_cast<int>(history.numel());
    DelayedScaling d(c);  // checks the format (on meta tensors too)
    at::Tensor new_history = at::empty(history.sizes(), history.options());
    at::Tensor new_scale = at::empty(scale.sizes(), scale.options());
    if (!compute(history)) return std::make_tuple(new_history, new_scale);
    d = DelayedScaling(c, f32(history), f32(scale)[0]);
    d.update(f32(amax)[0]);
    std::memcpy(new_history.mutable_data_ptr(), d.history().data(), 4 * d.history().size());
    *new_scale.mutable_data_ptr<float>() = d.scale();
    return std::make_tuple(new_history, new_scale);
  });
}

std::string recipe(std::string_view name, bool stochastic_gradients) {
  return guarded("recipe", [&] {
    const Recipe r = Recipe::named(name);
    return (stochastic_gradients ? r.with_stochastic_gradients() : r).to_json();
  });
}

std::vector<std::string> recipe_names() { return {std::begin(kRecipeNames), std::end(kRecipeNames)}; }

std::string recipe_check(std::string_view json) {
  return guarded("recipe_check", [&] { return Recipe::from_json(json).to_json(); });
}

std::string recipe_plan(std::string_view json) {
  return guarded("recipe_plan", [&] { return training_plan_json(training_plan(Recipe::from_json(json))); });
}

std::string cast_check(std::string_view json, std::string_view role) {
  return guarded("cast_check", [&] { return Cast::from_json(json, role).to_json(); });
}

}  // namespace fp8q::torch
