// Helpers for the safetensors tests: scratch folders, hand-built file images.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "fp8q/checkpoint/safetensors.hpp"

namespace fp8q::checkpoint::testing {

// A fresh folder per test (mkdtemp: safe when ctest runs tests in parallel), removed after.
class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "fp8q-ckpt-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(std::string_view name) const { return path_ / name; }
  // Every entry of the folder, hidden ones included, sorted.
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(path_)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }

 private:
  std::filesystem::path path_;
};

inline std::span<const std::byte> as_bytes(std::string_view s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

// The 8-byte little-endian length field.
inline std::string length_field(std::uint64_t n) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[static_cast<std::size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xFF);
  return out;
}

// A file image: length field, `json` as is (no padding), then `data`.
inline std::string image(std::string_view json, std::string_view data = {}) {
  return length_field(json.size()) + std::string(json) + std::string(data);
}

// A file image whose data section is `data_bytes` bytes of a recognisable pattern.
inline std::string image_with_data(std::string_view json, std::size_t data_bytes) {
  std::string data(data_bytes, '\0');
  for (std::size_t i = 0; i < data_bytes; ++i) data[i] = static_cast<char>((i * 37 + 11) & 0xFF);
  return image(json, data);
}

inline void write_raw(const std::filesystem::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

inline std::string read_raw(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline std::vector<std::byte> pattern_bytes(std::size_t n, unsigned seed) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::byte>((i * 131 + seed * 29 + (i >> 8)) & 0xFF);
  return v;
}

inline constexpr DType kAllDTypes[] = {
    DType::kBool, DType::kU8,  DType::kI8,  DType::kF8_E4M3, DType::kF8_E5M2, DType::kF8_E8M0,
    DType::kI16,  DType::kU16, DType::kF16, DType::kBF16,    DType::kI32,     DType::kU32,
    DType::kF32,  DType::kF64, DType::kI64, DType::kU64,
};
static_assert(std::size(kAllDTypes) == kDTypeCount);

}  // namespace fp8q::checkpoint::testing
