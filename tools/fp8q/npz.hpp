// NumPy .npz output (numpy.lib.format, version 1.0 .npy members in an uncompressed zip), for
// `fp8q vectors --npz`: np.load(path) gives each array by name.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace fp8q::cli {

struct NpyArray {
  std::string name;   // the member is name + ".npy"
  std::string descr;  // "<f4", "|u1", ...
  std::vector<std::uint64_t> shape;
  std::span<const std::byte> bytes;  // row-major (C order), product(shape) elements
};

// Writes the arrays to `path` atomically (files.hpp). Throws UsageError naming the file.
void write_npz(const std::string& path, std::span<const NpyArray> arrays);

}  // namespace fp8q::cli
