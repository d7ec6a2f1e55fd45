// mlp.hpp: the example model (config.json's input_size, hidden_sizes, num_labels, layers) with
// every weight dequantized to fp32, and its forward pass with Eigen:
//   h_0 = x;  h_l = relu(h_{l-1} W_l^T + b_l) for hidden layers;  logits = h_{L-1} W_L^T + b_L
// computed in fp32. The prediction is the first index of the largest logit.
// A layer with a static activation scale (`<module>.input_scale`, one value s: ct-fp8 written
// with --calib-data) sees its input as an FP8 engine would: a = fp32(e4m3fn(fp32(x / s)) * s),
// nearest-even, saturating at +/-448 (compressed-tensors' static per-tensor input scheme).
#pragma once

#include "layout.hpp"
#include "model_files.hpp"

#include <Eigen/Dense>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace digits {

using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

struct Linear {
  std::string module;   // e.g. "mlp.fc1"
  Matrix weight;        // [out, in]
  Eigen::VectorXf bias; // [out]
  std::string how;      // how the weight was stored (Weight::how)
  std::string bias_dtype;
  std::optional<float> input_scale;  // static activation scale, when the checkpoint has one
};

struct Mlp {
  std::vector<Linear> layers;
  std::uint64_t input_size = 0;
};

// Throws std::runtime_error naming the field or tensor for a config or tensor that does not
// describe this model.
Mlp load_mlp(const ModelFiles& files, const Layout& layout);

Matrix logits(const Mlp& mlp, const Matrix& inputs);                 // [n, num_labels]
std::vector<std::int64_t> predict(const Matrix& logits);  // first index of each row's maximum

}  // namespace digits
