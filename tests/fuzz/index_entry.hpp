// The body of the index fuzz target, shared by the libFuzzer binary (index_fuzz.cpp) and the
// deterministic mutation test (tests/checkpoint/index_mutation_test.cpp).
//
// Contract checked on every input: parse_index() returns or throws FormatError whose message
// names the file (anything else escapes: a crash for libFuzzer, a failure for GTest); an
// accepted index has a non-empty weight_map whose every shard is a plain file name (no '/',
// '\\', NUL, "." or ".."), and total_size, if present, came from metadata.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

#include "fp8q/checkpoint/model_dir.hpp"

namespace fp8q::checkpoint::fuzz {

inline void index_require(bool ok, const char* what) {
  if (!ok) throw std::logic_error(std::string("index fuzz invariant violated: ") + what);
}

inline bool index_one_input(std::string_view text) {
  IndexFile f;
  try {
    f = parse_index(text, "fuzz-index");
  } catch (const FormatError& e) {
    index_require(std::string_view(e.what()).starts_with("fuzz-index: "), "the message names the file");
    return false;
  }
  index_require(!f.weight_map.empty(), "a weight_map with tensors");
  for (const auto& [name, shard] : f.weight_map) {
    index_require(!shard.empty() && shard != "." && shard != "..", "shard is a file name");
    index_require(shard.find_first_of(std::string_view("/\\\0", 3)) == std::string::npos, "shard has no separator");
  }
  if (f.total_size) index_require(f.metadata.count("total_size") == 1, "total_size comes from metadata");
  index_require(!f.shards().empty(), "shards listed");
  return true;
}

}  // namespace fp8q::checkpoint::fuzz
