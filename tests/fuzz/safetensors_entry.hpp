// The body of the safetensors fuzz target, shared by the libFuzzer binary
// (safetensors_fuzz.cpp) and the deterministic mutation test that runs under every compiler
// (tests/checkpoint/safetensors_mutation_test.cpp).
//
// Contract checked on every input:
//   - parse_header() either returns or throws FormatError; any other exception escapes
//     (libFuzzer reports it as a crash, the GTest as a failure), and memory errors are
//     caught by the sanitizers of the fuzz build;
//   - an accepted header is consistent: tensors sorted by begin, tiling the data section
//     exactly, each holding numel * dtype_bytes bytes; every byte of every tensor is read;
//   - serialize_header() of the accepted tensors (in file order) followed by the same data
//     section parses back to the same tensors and metadata.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "fp8q/checkpoint/safetensors.hpp"

namespace fp8q::checkpoint::fuzz {

// Written with a sum of every tensor byte, so that the reads cannot be optimised away.
inline volatile unsigned checksum_sink = 0;

inline void require(bool ok, const char* what) {
  if (!ok) throw std::logic_error(std::string("safetensors fuzz invariant violated: ") + what);
}

// Returns true when the input is accepted, false when it is rejected with a FormatError.
inline bool safetensors_one_input(std::span<const std::byte> file) {
  Header h;
  try {
    h = parse_header(file, "fuzz-input");
  } catch (const FormatError& e) {
    require(std::string_view(e.what()).starts_with("fuzz-input: "), "the message names the file");
    return false;
  }

  // Consistency, and every byte touched (an out-of-bounds span shows up under ASan).
  require(h.data_start >= 8 && h.data_start <= file.size(), "data_start inside the file");
  const std::span<const std::byte> data = file.subspan(static_cast<std::size_t>(h.data_start));
  std::uint64_t expected = 0;
  unsigned checksum = 0;
  for (const TensorInfo& t : h.tensors) {
    require(t.begin == expected, "tensors tile the data section");
    require(t.end - t.begin == t.numel() * dtype_bytes(t.dtype), "byte size matches the shape");
    for (const std::byte b : data.subspan(static_cast<std::size_t>(t.begin), static_cast<std::size_t>(t.byte_size()))) {
      checksum += std::to_integer<unsigned>(b);
    }
    if (t.end > expected) expected = t.end;
  }
  require(expected == data.size(), "no trailing bytes");

  // Round trip through the writer's header encoding.
  std::vector<TensorSpec> specs;
  for (const TensorInfo& t : h.tensors) specs.push_back({t.name, t.dtype, t.shape});
  std::string again = serialize_header(specs, h.metadata);
  again.append(reinterpret_cast<const char*>(data.data()), data.size());
  const Header h2 = parse_header({reinterpret_cast<const std::byte*>(again.data()), again.size()}, "re-encoded");
  require(h2.metadata == h.metadata && h2.tensors.size() == h.tensors.size(), "round trip: same entries");
  for (std::size_t i = 0; i < h.tensors.size(); ++i) {
    const TensorInfo &a = h.tensors[i], &b = h2.tensors[i];
    require(a.name == b.name && a.dtype == b.dtype && a.shape == b.shape && a.begin == b.begin && a.end == b.end,
            "round trip: same tensor");
  }
  checksum_sink = checksum;
  return true;
}

}  // namespace fp8q::checkpoint::fuzz
