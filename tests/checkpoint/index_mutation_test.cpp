// The index fuzz target's body (tests/fuzz/index_entry.hpp) over its seed corpus and 20000
// deterministic mutations, so that every build (GCC included, no libFuzzer) checks that
// parse_index() never crashes and rejects only with FormatError naming the file.
// Mutations, 1 to 4 per input from a fixed-seed splitmix64 stream: bit flips, byte
// overwrites, insertions and deletions, JSON tokens spliced in (quotes, braces, separators,
// path pieces, huge and negative numbers, escapes), truncation and duplication of a slice.
#include <gtest/gtest.h>

#include "mutation_util.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "index_entry.hpp"

namespace fp8q::checkpoint {
namespace {

using testing::SplitMix64;

std::vector<std::pair<std::string, std::string>> load_corpus() { return testing::load_corpus(FP8Q_INDEX_CORPUS); }

const char* const kTokens[] = {"\"",   "{",    "}",      "[",       "]",    ":",   ",",  "null", "true",
                               "-1",   "1e3",  "18446744073709551616", "\"../x\"", "\"a/b\"", "\"\\u0000\"",
                               "\"weight_map\"", "\"metadata\"", "\"total_size\"", "\xff", "\xc0\x80", "{}"};

std::string mutate(std::string s, SplitMix64& rng) { return testing::mutate_text(std::move(s), rng, kTokens); }

TEST(IndexMutation, SeedsBehave) {
  const auto seeds = load_corpus();
  ASSERT_GE(seeds.size(), 4u);
  for (const auto& [name, text] : seeds) {
    SCOPED_TRACE(name);
    const bool accepted = fuzz::index_one_input(text);
    EXPECT_EQ(accepted, name != "escape_path") << "escape_path names a file outside the directory";
  }
}

TEST(IndexMutation, TwentyThousandMutationsOnlyFormatErrors) {
  SplitMix64 rng{0x1D3Eull};
  const auto [accepted, rejected] = testing::run_mutations(
      load_corpus(), rng, 20000, mutate, [](const std::string& s) { return fuzz::index_one_input(s); });
  // Both outcomes occur: the mutations reach past the first check.
  EXPECT_GT(accepted, 100u);
  EXPECT_GT(rejected, 1000u);
}

}  // namespace
}  // namespace fp8q::checkpoint
