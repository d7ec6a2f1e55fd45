// model_files.hpp: a Hugging Face-style model directory opened for reading: config.json and
// model.safetensors, or the shards that model.safetensors.index.json names ("weight_map":
// tensor name -> shard file in the same directory). A bare .safetensors file works too (its
// config is then empty). Files are read with fp8q::checkpoint::Reader (memory-mapped,
// validated).
#pragma once

#include <fp8q/checkpoint/safetensors.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace digits {

struct Tensor {
  std::string name;
  std::string file;  // the shard it came from (for messages)
  fp8q::checkpoint::DType dtype;
  std::vector<std::uint64_t> shape;
  std::span<const std::byte> bytes;
  std::uint64_t numel() const;
};

class ModelFiles {
 public:
  // Throws std::runtime_error naming the file for a missing or malformed config/index, a
  // shard outside the directory, or a tensor that two shards both hold.
  explicit ModelFiles(const std::filesystem::path& path);

  const nlohmann::json& config() const { return config_; }
  bool has(std::string_view name) const { return where_.contains(std::string(name)); }
  Tensor at(std::string_view name) const;  // throws naming the tensor when absent
  std::vector<std::string> names() const;

 private:
  nlohmann::json config_ = nlohmann::json::object();
  std::vector<std::unique_ptr<fp8q::checkpoint::Reader>> readers_;
  std::map<std::string, std::size_t> where_;  // tensor name -> reader
};

// The tensor's values as fp32 (F32, BF16 and F16 only; exact). Throws naming the tensor.
std::vector<float> float_values(const Tensor& t);

// Throws naming the tensor unless its shape is exactly `shape`.
void expect_shape(const Tensor& t, const std::vector<std::uint64_t>& shape);
std::string shape_string(const std::vector<std::uint64_t>& shape);

}  // namespace digits
