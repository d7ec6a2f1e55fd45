// fp8q/torch/training.hpp: FP8 / MXFP8 training in LibTorch, the C++ side of fp8q.training
// (docs/training.md). Float8Linear is a torch::nn::Module computing y = x W^T + b whose three
// GEMMs (forward, input gradient, weight gradient) run through the recipe's device model on
// operands cast as the recipe says; the recipes and their JSON are those of the Python package.
//
//   fp8q::torch::Float8Linear layer(fp8q::torch::Float8LinearOptions(256, 128)
//                                       .recipe(fp8q::torch::Recipe::named("mxfp8_trn3")));
//   at::Tensor y = layer->forward(x);  // y.backward(...) runs the two gradient GEMMs
#pragma once

#include <torch/nn/cloneable.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace fp8q::torch {

// One operand's cast: element format, granularity along its GEMM's contraction axis (tensor,
// row, block1x128, block128x128, mx), scaling (current, or delayed: per tensor only), and the
// options of quantize(). rounding "rne" or "sr".
struct Cast {
  std::string format;
  std::string granularity = "tensor";
  std::string scaling = "current";
  std::string scale_op = "multiply";
  bool power_of_two = false;
  std::string mx_rule = "floor";
  std::string rounding = "rne";
  bool operator==(const Cast&) const = default;
};

// The six casts (x, w forward; dy, w_t input gradient; dy_t, x_t weight gradient), the device
// profile and model, Transformer Engine's delayed-scaling settings, the stochastic-rounding seed.
struct Recipe {
  std::string name;
  Cast x, w, dy, w_t, dy_t, x_t;
  std::string profile = "trn3";
  std::string model;  // empty: the profile's
  std::int64_t history_length = 1024;
  std::string amax_compute = "max";
  std::int64_t margin = 0;
  std::uint64_t seed = 0;

  // tensorwise delayed rowwise blockwise mxfp8_trn3 mxfp8_rceil trn2_fp8; std::invalid_argument otherwise.
  static Recipe named(std::string_view name);
  // The JSON of fp8q.training.Recipe.to_json() (keys sorted); from_json refuses unknown or
  // missing fields and invalid recipes with std::invalid_argument naming the field.
  std::string to_json() const;
  static Recipe from_json(std::string_view json);
  bool delayed() const;
  void validate() const;  // the checks of fp8q.training.Recipe
  bool operator==(const Recipe&) const = default;
};

struct Float8LinearOptions {
  Float8LinearOptions(std::int64_t in_features, std::int64_t out_features)
      : in_features_(in_features), out_features_(out_features) {}
  TORCH_ARG(std::int64_t, in_features);
  TORCH_ARG(std::int64_t, out_features);
  TORCH_ARG(bool, bias) = true;
  TORCH_ARG(Recipe, recipe) = Recipe::named("tensorwise");
  TORCH_ARG(std::uint64_t, layer_id) = 0;  // keys stochastic rounding with the step
};

// Parameters weight [out, in] and bias [out] (nn::Linear's initialisation); buffers fp8_step and,
// for a delayed recipe, fp8_history_{x,w,dy} [L] and fp8_scale_{x,w,dy} [1]: the state a
// checkpoint saves. Inputs float32 or bfloat16, [..., in]; no process group (single process).
class Float8LinearImpl : public ::torch::nn::Cloneable<Float8LinearImpl> {
 public:
  explicit Float8LinearImpl(const Float8LinearOptions& options);
  void reset() override;
  at::Tensor forward(const at::Tensor& x);

  Float8LinearOptions options;
  at::Tensor weight, bias;
};
// The module holder, as TORCH_MODULE(Float8Linear) would declare it (the macro names torch::
// unqualified, which inside fp8q::torch means this namespace).
class Float8Linear : public ::torch::nn::ModuleHolder<Float8LinearImpl> {
 public:
  using ::torch::nn::ModuleHolder<Float8LinearImpl>::ModuleHolder;
  using Impl = Float8LinearImpl;
};

}  // namespace fp8q::torch
