// Two safetensors files compared tensor by tensor (fp8q/checkpoint/compare.hpp).
#include "fp8q/checkpoint/compare.hpp"

#include <stdexcept>

#include "safetensors/text.hpp"

namespace fp8q::checkpoint {
namespace {

std::string shape_text(std::span<const std::uint64_t> s) {
  std::string t = "[";
  for (std::size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + "]";
}

const TensorInfo& find_in(const Reader& r, const std::string& name, const Reader& other) {
  const TensorInfo* t = r.find(name);
  if (t == nullptr) {
    const bool elsewhere = other.find(name) != nullptr;
    throw std::invalid_argument(r.path().string() + ": no tensor " + detail::quote(name) +
                                (elsewhere ? " (" + other.path().string() + " has it)" : " (in neither file)"));
  }
  return *t;
}

TensorComparison compare_pair(const Reader& actual, const TensorInfo& a, const Reader& expected,
                              const TensorInfo& e, const CompareOptions& options) {
  TensorComparison r{.name = a.name, .dtype = a.dtype, .shape = a.shape, .mismatch = {}, .codes = {}};
  if (a.dtype != e.dtype) {
    r.mismatch = "dtype " + std::string(dtype_name(a.dtype)) + " against " + std::string(dtype_name(e.dtype));
  } else if (a.shape != e.shape) {
    r.mismatch = "shape " + shape_text(a.shape) + " against " + shape_text(e.shape);
  } else {
    r.codes = compare_codes(actual.bytes(a), expected.bytes(e), element_format(a.dtype),
                            static_cast<int>(dtype_bytes(a.dtype)), options);
  }
  return r;
}

}  // namespace

std::vector<TensorComparison> compare_files(const Reader& actual, const Reader& expected,
                                            std::span<const std::string> names, const CompareOptions& options) {
  std::vector<TensorComparison> out;
  if (names.empty()) {
    for (const TensorInfo& e : expected.tensors()) find_in(actual, e.name, expected);  // only in `expected`
    for (const TensorInfo& a : actual.tensors())
      out.push_back(compare_pair(actual, a, expected, find_in(expected, a.name, actual), options));
  } else {
    for (const std::string& name : names)
      out.push_back(compare_pair(actual, find_in(actual, name, expected), expected,
                                 find_in(expected, name, actual), options));
  }
  return out;
}

std::vector<std::uint64_t> unravel_index(std::uint64_t i, std::span<const std::uint64_t> shape) {
  std::vector<std::uint64_t> idx(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    if (shape[d] == 0) throw std::invalid_argument("unravel_index: extent 0 in dimension " + std::to_string(d));
    idx[d] = i % shape[d];
    i /= shape[d];
  }
  return idx;
}

}  // namespace fp8q::checkpoint
