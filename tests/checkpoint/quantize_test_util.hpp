// Helpers for the checkpoint pipeline tests: small models built in scratch folders.
#pragma once

#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "fp8q/checkpoint/model_dir.hpp"
#include "fp8q/checkpoint/pipeline.hpp"
#include "fp8q/numerics/convert.hpp"
#include "safetensors_test_util.hpp"

namespace fp8q::checkpoint::testing {

// A tensor to store: values as doubles, stored in `dtype` (F32, BF16, F16: nearest-even).
struct HostTensor {
  std::string name;
  DType dtype;
  std::vector<std::uint64_t> shape;
  std::vector<std::byte> bytes;
};

inline HostTensor make_tensor(const std::string& name, DType dtype, std::vector<std::uint64_t> shape,
                              const std::vector<float>& values) {
  HostTensor t{name, dtype, std::move(shape), {}};
  const std::size_t w = dtype_bytes(dtype);
  t.bytes.resize(values.size() * w);
  for (std::size_t i = 0; i < values.size(); ++i) {
    std::uint32_t bits = dtype == DType::kF32 ? bits_of(values[i])
                                              : static_cast<std::uint32_t>(encode_f32(values[i], dtype == DType::kBF16 ? kBF16 : kF16));
    std::memcpy(t.bytes.data() + i * w, &bits, w);
  }
  return t;
}

// Normal values with a few large outliers, from a fixed seed (mt19937's output is specified).
inline std::vector<float> random_values(std::size_t n, std::uint32_t seed, float sigma = 0.05f) {
  std::mt19937 rng(seed);
  std::vector<float> v(n);
  for (auto& x : v) {
    // Box-Muller on raw 32-bit draws (std::normal_distribution is not portable bit for bit)
    const double u1 = (rng() + 1.0) / 4294967297.0, u2 = rng() / 4294967296.0;
    x = static_cast<float>(sigma * std::sqrt(-2 * std::log(u1)) * std::cos(6.283185307179586 * u2));
  }
  for (std::size_t i = 0; i < n; i += 997) v[i] *= 20;
  return v;
}

inline void write_model_file(const std::filesystem::path& path, const std::vector<HostTensor>& ts) {
  std::vector<TensorData> data;
  for (const auto& t : ts) data.push_back({{t.name, t.dtype, t.shape}, t.bytes});
  write_file(path, data);
}

// A small Llama-like model: embeddings, norms, attention and MLP projections (BF16, one F32,
// shapes that are and are not multiples of 32 / 128), a bias, an MoE router, lm_head.
inline std::vector<HostTensor> small_model() {
  std::vector<HostTensor> ts;
  auto add = [&](const std::string& name, DType d, std::vector<std::uint64_t> shape, std::uint32_t seed) {
    std::size_t n = 1;
    for (auto s : shape) n *= s;
    ts.push_back(make_tensor(name, d, shape, random_values(n, seed)));
  };
  add("model.embed_tokens.weight", DType::kBF16, {50, 160}, 1);
  add("model.layers.0.input_layernorm.weight", DType::kBF16, {160}, 2);
  add("model.layers.0.self_attn.q_proj.weight", DType::kBF16, {160, 160}, 3);
  add("model.layers.0.self_attn.o_proj.weight", DType::kF16, {160, 160}, 4);
  add("model.layers.0.mlp.gate_proj.weight", DType::kBF16, {300, 160}, 5);
  add("model.layers.0.mlp.down_proj.weight", DType::kF32, {160, 300}, 6);  // 300: not a multiple of 32
  add("model.layers.0.mlp.down_proj.bias", DType::kF32, {160}, 7);
  add("model.layers.0.mlp.gate.weight", DType::kBF16, {4, 160}, 8);        // MoE router
  add("model.norm.weight", DType::kBF16, {160}, 9);
  add("lm_head.weight", DType::kBF16, {50, 160}, 10);
  return ts;
}

inline void write_config(const std::filesystem::path& dir) {
  std::ofstream(dir / "config.json") << R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 160})";
}


}  // namespace fp8q::checkpoint::testing
