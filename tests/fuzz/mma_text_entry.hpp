// The body of the tensor-core text-format fuzz target (mma_text_fuzz.cpp), shared with the
// deterministic test (tests/checkpoint/mma_text_test.cpp). One input holds the files' contents
// separated by NUL bytes: A \0 B \0 D, then \0 C where a C file is given (a missing part of
// A, B or D is an empty file).
//
// Contract checked on every input: parse_mma_text() returns or throws FormatError whose
// message names one of the files; an accepted input has samples, K >= 1, and K values per
// sample in A and B.
#pragma once

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "fp8q/checkpoint/mma_text.hpp"
#include "fp8q/checkpoint/safetensors.hpp"

namespace fp8q::checkpoint::fuzz {

inline void mma_text_require(bool ok, const char* what) {
  if (!ok) throw std::logic_error(std::string("mma_text fuzz invariant violated: ") + what);
}

inline bool mma_text_one_input(std::string_view data) {
  std::string_view parts[3];
  std::optional<std::string_view> c;
  for (int i = 0; i < 3; ++i) {
    const std::size_t nul = data.find('\0');
    parts[i] = data.substr(0, nul);
    data = nul == std::string_view::npos ? std::string_view() : data.substr(nul + 1);
    if (i == 2 && nul != std::string_view::npos) c = data;
  }
  MmaText t;
  try {
    t = parse_mma_text(parts[0], parts[1], parts[2], "fuzz-a", "fuzz-b", "fuzz-d", c, "fuzz-c");
  } catch (const FormatError& e) {
    const std::string_view m = e.what();
    mma_text_require(m.starts_with("fuzz-a: ") || m.starts_with("fuzz-b: ") || m.starts_with("fuzz-d: ") ||
                         m.starts_with("fuzz-c: "),
                     "the message names the file");
    return false;
  }
  mma_text_require(t.samples() > 0 && t.k > 0, "samples and K");
  mma_text_require(t.c.size() == (c ? t.samples() : 0), "one C per sample, or none");
  mma_text_require(t.a.size() == t.samples() * t.k && t.b.size() == t.samples() * t.k, "K values per sample");
  return true;
}

}  // namespace fp8q::checkpoint::fuzz
