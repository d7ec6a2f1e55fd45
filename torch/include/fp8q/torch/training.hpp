// fp8q/torch/training.hpp: FP8 / MXFP8 training in LibTorch, the C++ side of fp8q.training
// (docs/training.md). Float8Linear is a torch::nn::Module computing y = x W^T + b whose three
// GEMMs (forward, input gradient, weight gradient) run through the recipe's device model on
// operands cast as the recipe says (the recipes of quant/recipes/recipe.hpp, as in the Python package).
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

#include "fp8q/quant/recipes/recipe.hpp"

namespace fp8q::torch {

// The recipe (quant/recipes/recipe.hpp): the six casts, the device profile and model, the
// delayed-scaling settings and the stochastic-rounding seed; the one implementation that
// fp8q.training's Python recipes also come from.
using ::fp8q::Cast;
using ::fp8q::Recipe;

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
