// fp8q::torch::Float8Linear in a LibTorch program: a two-layer MLP learns a fixed random teacher
// network with each recipe, every GEMM through the recipe's device model.
//
//   fp8q-train-libtorch [STEPS]        train with tensorwise, delayed, mxfp8_trn3, trn2_fp8; exit 1
//                                      unless every run ends below a fifth of its first loss
//   fp8q-train-libtorch recipes        the JSON of every named recipe, one a line
//   fp8q-train-libtorch step DIR NAME  one layer's step on DIR/{x,w,b,dy}.f32 (float32, shapes in
//                                      DIR/shape: M K N) with recipe NAME: writes DIR/{y,dx,dw,db}.f32
#include <fp8q/torch/training.hpp>

#include <torch/nn/functional/activation.h>
#include <torch/optim/adam.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

namespace {

using fp8q::torch::Float8Linear;
using fp8q::torch::Float8LinearOptions;
using fp8q::torch::Recipe;

struct Mlp : torch::nn::Module {
  Mlp(const Recipe& r) {
    a = register_module("a", Float8Linear(Float8LinearOptions(64, 128).recipe(r).layer_id(0)));
    b = register_module("b", Float8Linear(Float8LinearOptions(128, 32).recipe(r).layer_id(1)));
  }
  at::Tensor forward(const at::Tensor& x) { return b->forward(torch::relu(a->forward(x))); }
  Float8Linear a{nullptr}, b{nullptr};
};

int train(int steps) {
  torch::manual_seed(0);
  const at::Tensor t1 = torch::randn({128, 64}) * 0.2, t2 = torch::randn({32, 128}) * 0.2;
  auto teacher = [&](const at::Tensor& x) { return torch::tanh(x.matmul(t1.t())).matmul(t2.t()); };
  bool ok = true;
  for (const char* name : {"tensorwise", "delayed", "mxfp8_trn3", "trn2_fp8"}) {
    torch::manual_seed(1);
    Mlp model(Recipe::named(name));
    torch::optim::Adam opt(model.parameters(), torch::optim::AdamOptions(3e-3));
    double first = 0, last = 0;
    for (int s = 0; s < steps; ++s) {
      const at::Tensor x = torch::randn({64, 64});
      const at::Tensor loss = (model.forward(x) - teacher(x)).square().mean();
      opt.zero_grad();
      loss.backward();
      opt.step();
      (s == 0 ? first : last) = loss.item<double>();
    }
    const bool learned = last < first / 5;
    std::printf("%-12s loss %.4f -> %.4f after %d steps%s\n", name, first, last, steps, learned ? "" : "  NOT LEARNED");
    ok = ok && learned;
  }
  return ok ? 0 : 1;
}

at::Tensor read_f32(const std::string& path, std::vector<std::int64_t> shape) {
  at::Tensor t = torch::empty(shape);
  std::ifstream f(path, std::ios::binary);
  f.read(static_cast<char*>(t.data_ptr()), static_cast<std::streamsize>(t.nbytes()));
  if (!f) throw std::runtime_error("cannot read " + path);
  return t;
}

void write_f32(const std::string& path, const at::Tensor& t) {
  const at::Tensor c = t.to(at::kFloat).contiguous();
  std::ofstream f(path, std::ios::binary);
  f.write(static_cast<const char*>(c.data_ptr()), static_cast<std::streamsize>(c.nbytes()));
}

int step(const std::string& dir, const std::string& name) {
  std::int64_t m, k, n;
  std::ifstream(dir + "/shape") >> m >> k >> n;
  Float8Linear layer(Float8LinearOptions(k, n).recipe(Recipe::named(name)));
  {
    torch::NoGradGuard g;
    layer->weight.copy_(read_f32(dir + "/w.f32", {n, k}));
    layer->bias.copy_(read_f32(dir + "/b.f32", {n}));
  }
  const at::Tensor x = read_f32(dir + "/x.f32", {m, k}).requires_grad_();
  const at::Tensor y = layer->forward(x);
  y.backward(read_f32(dir + "/dy.f32", {m, n}));
  write_f32(dir + "/y.f32", y.detach());
  write_f32(dir + "/dx.f32", x.grad());
  write_f32(dir + "/dw.f32", layer->weight.grad());
  write_f32(dir + "/db.f32", layer->bias.grad());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc >= 2 && std::strcmp(argv[1], "recipes") == 0) {
      for (std::string_view n : fp8q::kRecipeNames) std::printf("%s\n", Recipe::named(n).to_json().c_str());
      return 0;
    }
    if (argc == 4 && std::strcmp(argv[1], "step") == 0) return step(argv[2], argv[3]);
    return train(argc >= 2 ? std::stoi(argv[1]) : 200);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fp8q-train-libtorch: %s\n", e.what());
    return 2;
  }
}
