#include "model_files.hpp"

#include "codes.hpp"

#include <cstring>
#include <fstream>
#include <set>
#include <stdexcept>

namespace digits {
namespace fs = std::filesystem;
using fp8q::checkpoint::DType;

namespace {

nlohmann::json read_json(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path.string() + ": cannot open");
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(path.string() + ": invalid JSON: " + e.what());
  }
}

}  // namespace

std::uint64_t Tensor::numel() const {
  std::uint64_t n = 1;
  for (auto d : shape) n *= d;  // the Reader has checked that the byte size fits
  return n;
}

ModelFiles::ModelFiles(const fs::path& path) {
  std::vector<fs::path> shards;
  if (fs::is_directory(path)) {
    if (fs::exists(path / "config.json")) config_ = read_json(path / "config.json");
    if (!config_.is_object()) throw std::runtime_error((path / "config.json").string() + ": not a JSON object");
    const fs::path index = path / "model.safetensors.index.json";
    if (fs::exists(index)) {
      const nlohmann::json j = read_json(index);
      if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
        throw std::runtime_error(index.string() + ": no \"weight_map\" object");
      std::set<std::string> files;
      for (const auto& [tensor, file] : j["weight_map"].items()) {
        if (!file.is_string()) throw std::runtime_error(index.string() + ": weight_map[\"" + tensor + "\"] is not a string");
        const std::string f = file.get<std::string>();
        // A shard is a plain file name in the model directory: nothing else is read.
        if (f.empty() || f.find('/') != std::string::npos || f == "." || f == "..")
          throw std::runtime_error(index.string() + ": weight_map[\"" + tensor + "\"]: \"" + f +
                                   "\" is not a file in the model directory");
        files.insert(f);
      }
      for (const auto& f : files) shards.push_back(path / f);
    } else {
      shards.push_back(path / "model.safetensors");
    }
  } else {
    shards.push_back(path);
  }
  for (const auto& shard : shards) {
    try {
      readers_.push_back(std::make_unique<fp8q::checkpoint::Reader>(shard));
    } catch (const std::system_error& e) {
      throw std::runtime_error(e.what());
    }
    for (const auto& t : readers_.back()->tensors()) {
      if (!where_.emplace(t.name, readers_.size() - 1).second)
        throw std::runtime_error(shard.string() + ": tensor \"" + t.name + "\" is also in another shard");
    }
  }
}

Tensor ModelFiles::at(std::string_view name) const {
  const auto it = where_.find(std::string(name));
  if (it == where_.end()) throw std::runtime_error("tensor \"" + std::string(name) + "\" is not in the model");
  const auto& r = *readers_[it->second];
  const auto& info = r.at(name);
  return Tensor{info.name, r.path().filename().string(), info.dtype, info.shape, r.bytes(info)};
}

std::vector<std::string> ModelFiles::names() const {
  std::vector<std::string> out;
  for (const auto& [name, _] : where_) out.push_back(name);
  return out;
}

std::vector<float> float_values(const Tensor& t) {
  const std::size_t n = t.numel();
  std::vector<float> out(n);
  const std::byte* p = t.bytes.data();
  switch (t.dtype) {
    case DType::kF32:
      std::memcpy(out.data(), p, n * 4);  // little-endian host (x86-64, AArch64)
      break;
    case DType::kBF16:
    case DType::kF16:
      for (std::size_t i = 0; i < n; ++i) {
        std::uint16_t bits;
        std::memcpy(&bits, p + 2 * i, 2);
        out[i] = t.dtype == DType::kBF16 ? bf16_value(bits) : f16_value(bits);
      }
      break;
    default:
      throw std::runtime_error("tensor \"" + t.name + "\": dtype " +
                               std::string(fp8q::checkpoint::dtype_name(t.dtype)) +
                               " is not a floating-point type (F32, BF16, F16)");
  }
  return out;
}

std::string shape_string(const std::vector<std::uint64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

void expect_shape(const Tensor& t, const std::vector<std::uint64_t>& shape) {
  if (t.shape != shape)
    throw std::runtime_error("tensor \"" + t.name + "\": shape " + shape_string(t.shape) + ", expected " +
                             shape_string(shape));
}

}  // namespace digits
