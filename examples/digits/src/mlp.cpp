#include "mlp.hpp"

#include <cmath>
#include <stdexcept>

namespace digits {
using nlohmann::json;

namespace {

std::uint64_t positive(const json& config, const char* key) {
  if (!config.contains(key) || !config[key].is_number_unsigned() || config[key].get<std::uint64_t>() == 0)
    throw std::runtime_error(std::string("config.json: \"") + key + "\" is not a positive integer");
  return config[key].get<std::uint64_t>();
}

}  // namespace

Mlp load_mlp(const ModelFiles& files, const Layout& layout) {
  const json& c = files.config();
  Mlp mlp;
  mlp.input_size = positive(c, "input_size");
  std::vector<std::uint64_t> sizes{mlp.input_size};
  if (!c.contains("hidden_sizes") || !c["hidden_sizes"].is_array())
    throw std::runtime_error("config.json: \"hidden_sizes\" is not an array");
  for (const auto& h : c["hidden_sizes"]) {
    if (!h.is_number_unsigned() || h.get<std::uint64_t>() == 0)
      throw std::runtime_error("config.json: \"hidden_sizes\" holds a value that is not a positive integer");
    sizes.push_back(h.get<std::uint64_t>());
  }
  sizes.push_back(positive(c, "num_labels"));
  const std::size_t n_layers = sizes.size() - 1;

  std::vector<std::string> modules;
  if (c.contains("layers")) {
    if (!c["layers"].is_array() || c["layers"].size() != n_layers)
      throw std::runtime_error("config.json: \"layers\" is not an array of " + std::to_string(n_layers) + " names");
    for (const auto& m : c["layers"]) {
      if (!m.is_string()) throw std::runtime_error("config.json: \"layers\" holds a value that is not a string");
      modules.push_back(m.get<std::string>());
    }
  } else {
    for (std::size_t i = 1; i <= n_layers; ++i) modules.push_back("mlp.fc" + std::to_string(i));
  }

  for (std::size_t l = 0; l < n_layers; ++l) {
    const std::uint64_t in = sizes[l], out = sizes[l + 1];
    Weight w = dequantize_weight(files, layout, modules[l], out, in);
    Linear lin;
    lin.module = modules[l];
    lin.weight = Eigen::Map<const Matrix>(w.values.data(), static_cast<Eigen::Index>(out), static_cast<Eigen::Index>(in));
    lin.how = std::move(w.how);
    const Tensor b = files.at(modules[l] + ".bias");
    expect_shape(b, {out});
    const std::vector<float> bv = float_values(b);
    lin.bias = Eigen::Map<const Eigen::VectorXf>(bv.data(), static_cast<Eigen::Index>(out));
    lin.bias_dtype = fp8q::checkpoint::dtype_name(b.dtype);
    for (Eigen::Index r = 0; r < lin.weight.rows(); ++r)
      for (Eigen::Index c = 0; c < lin.weight.cols(); ++c)
        if (!std::isfinite(lin.weight(r, c)))
          throw std::runtime_error("tensor \"" + modules[l] + ".weight\": element [" + std::to_string(r) + ", " +
                                   std::to_string(c) + "] dequantizes to " + std::to_string(lin.weight(r, c)));
    if (files.has(modules[l] + ".input_scale")) {
      const Tensor s = files.at(modules[l] + ".input_scale");
      const std::vector<float> sv = float_values(s);
      if (sv.size() != 1 || !std::isfinite(sv[0]) || !(sv[0] > 0.0f))
        throw std::runtime_error("tensor \"" + s.name + "\": not one positive finite value (shape " +
                                 shape_string(s.shape) + ")");
      lin.input_scale = sv[0];
    }
    mlp.layers.push_back(std::move(lin));
  }
  return mlp;
}

Matrix logits(const Mlp& mlp, const Matrix& inputs) {
  Matrix h = inputs;
  for (std::size_t l = 0; l < mlp.layers.size(); ++l) {
    const Linear& lin = mlp.layers[l];
    if (lin.input_scale) {
      const float s = *lin.input_scale;
      const auto& table = fp8_table(Fp8::kE4M3FN);
      h = h.unaryExpr([s, &table](float x) { return table[encode_e4m3fn(x / s)] * s; }).eval();
    }
    Matrix next = h * lin.weight.transpose();
    next.rowwise() += lin.bias.transpose();
    if (l + 1 < mlp.layers.size()) next = next.cwiseMax(0.0f);  // ReLU
    h = std::move(next);
  }
  return h;
}

std::vector<std::int64_t> predict(const Matrix& z) {
  std::vector<std::int64_t> out(static_cast<std::size_t>(z.rows()));
  for (Eigen::Index i = 0; i < z.rows(); ++i) {
    Eigen::Index best = 0;
    for (Eigen::Index j = 1; j < z.cols(); ++j)
      if (z(i, j) > z(i, best)) best = j;
    out[static_cast<std::size_t>(i)] = best;
  }
  return out;
}

}  // namespace digits
