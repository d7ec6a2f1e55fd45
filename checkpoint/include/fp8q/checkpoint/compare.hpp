// fp8q/checkpoint/compare.hpp: two safetensors files compared tensor by tensor, bitwise and in
// ULPs (the rule of fp8q/numerics/compare.hpp), for `fp8q compare` (docs/validation.md).
//
// Tensors are matched by name. Each pair is checked for dtype and shape first (a mismatch is
// a result, `mismatch`, not an exception: the files were read, and they differ), then its
// elements are compared as codes of the dtype's format (element_format()), integers and BOOL
// bitwise. A tensor that only one file has, or a requested name that neither has, is bad input:
// std::invalid_argument naming the tensor and the file.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "fp8q/checkpoint/safetensors.hpp"
#include "fp8q/numerics/compare.hpp"

namespace fp8q::checkpoint {

struct TensorComparison {
  std::string name;
  DType dtype = DType::kU8;            // the actual file's
  std::vector<std::uint64_t> shape;    // the actual file's
  std::string mismatch;                // non-empty: "dtype F32 against BF16" / "shape [2, 3] against [3, 2]"
  CodeComparison codes;                // empty when `mismatch` is set
  bool within() const { return mismatch.empty() && codes.within(); }
};

// `names` empty: every tensor (both files must hold the same names); otherwise those tensors,
// in that order. Results are in the actual file's order when `names` is empty.
std::vector<TensorComparison> compare_files(const Reader& actual, const Reader& expected,
                                            std::span<const std::string> names, const CompareOptions& options);

// The flat row-major index i of `shape` as one index per dimension ({} for a 0-D tensor).
std::vector<std::uint64_t> unravel_index(std::uint64_t i, std::span<const std::uint64_t> shape);

}  // namespace fp8q::checkpoint
