// parse_mma_text() (fp8q/checkpoint/mma_text.hpp): hand-written inputs with the message each
// error must carry, then the fuzz target's body (tests/fuzz/mma_text_entry.hpp) over its seed
// corpus and 20000 deterministic mutations, so every build checks that the parser rejects only
// with FormatError naming the file.
#include <gtest/gtest.h>

#include "mutation_util.hpp"

#include <iterator>
#include <string>

#include "mma_text_entry.hpp"

namespace fp8q::checkpoint {
namespace {

std::string error_of(std::string_view a, std::string_view b, std::string_view d) {
  try {
    parse_mma_text(a, b, d, "a.txt", "b.txt", "d.txt");
  } catch (const FormatError& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(MmaText, ParsesSamples) {
  const MmaText t = parse_mma_text("3f800000 40000000\n\n3F700000\t0\r\n", "3f800000 3f800000\nbf800000 1\n",
                                   "00111111100000000000000000000000\n01000000010000000000000000000000\n", "a", "b", "d");
  EXPECT_EQ(t.k, 2u);
  ASSERT_EQ(t.samples(), 2u);
  EXPECT_EQ(t.a, (std::vector<std::uint32_t>{0x3f800000u, 0x40000000u, 0x3f700000u, 0u}));
  EXPECT_EQ(t.b, (std::vector<std::uint32_t>{0x3f800000u, 0x3f800000u, 0xbf800000u, 1u}));
  EXPECT_EQ(t.d, (std::vector<std::uint32_t>{0x3f800000u, 0x40400000u}));
}

TEST(MmaText, ErrorsNameTheFileLineAndValue) {
  const std::string d1 = "00111111100000000000000000000000\n";
  EXPECT_EQ(error_of("3f800000 3f80000g\n", "1 2\n", d1),
            "a.txt: line 1: value 2 '3f80000g' is not an fp32 bit pattern (1 to 8 hex digits)");
  EXPECT_EQ(error_of("1\n", "123456789\n", d1), "b.txt: line 1: value 1 '123456789' is not an fp32 bit pattern (1 to 8 hex digits)");
  EXPECT_EQ(error_of("1 2\n\n3\n", "1 2\n1 2\n", d1), "a.txt: line 3: has 1 values, the lines before have 2");
  EXPECT_EQ(error_of("1\n", "1\n", "0011\n"), "d.txt: line 1: '0011' is not an fp32 bit pattern (32 binary digits)");
  EXPECT_EQ(error_of("1\n2\n", "1\n", d1), "b.txt: 1 lines, a.txt has 2");
  EXPECT_EQ(error_of("1 2\n", "1\n", d1), "b.txt: lines of 1 values, a.txt has 2 (K must agree)");
  EXPECT_EQ(error_of("1\n", "1\n", d1 + d1), "d.txt: 2 lines, a.txt has 1");
  EXPECT_EQ(error_of("", "", ""), "a.txt: no samples (no non-empty line)");
}

TEST(MmaText, ParsesTheCFile) {
  const std::string one = "00111111100000000000000000000000\n", half = "00111111000000000000000000000000\n";
  const MmaText t = parse_mma_text("1 2\n3 4\n", "5 6\n7 8\n", one + one, "a", "b", "d", half + "\n" + one, "c");
  EXPECT_EQ(t.c, (std::vector<std::uint32_t>{0x3f000000u, 0x3f800000u}));
  EXPECT_TRUE(parse_mma_text("1\n", "1\n", one, "a", "b", "d").c.empty());
  const auto error = [&](std::string_view c) {
    try {
      parse_mma_text("1\n2\n", "1\n2\n", one + one, "a.txt", "b.txt", "d.txt", c, "c.txt");
    } catch (const FormatError& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  EXPECT_EQ(error(one), "c.txt: 1 lines, a.txt has 2");
  EXPECT_EQ(error(one + "2\n"), "c.txt: line 2: '2' is not an fp32 bit pattern (32 binary digits)");
  EXPECT_EQ(error(""), "c.txt: 0 lines, a.txt has 2");
}

using testing::SplitMix64;

const char* const kTokens[] = {" ", "\t", "\n", "\r\n", "0", "1", "f", "ffffffff", "123456789", "x", "-"};

std::string mutate(std::string s, SplitMix64& rng) {
  const int n = 1 + static_cast<int>(rng.below(4));
  for (int i = 0; i < n; ++i) {
    const std::size_t at = s.empty() ? 0 : rng.below(s.size());
    switch (rng.below(6)) {
      case 0: if (!s.empty()) s[at] = static_cast<char>(s[at] ^ (1 << rng.below(8))); break;
      case 1: s.insert(at, 1, static_cast<char>(rng.below(256))); break;
      case 2: if (!s.empty()) s.erase(at, 1 + rng.below(4)); break;
      case 3: s.insert(at, kTokens[rng.below(std::size(kTokens))]); break;
      case 4: s.resize(at); break;
      default: s.insert(at, s.substr(at, rng.below(40))); break;
    }
  }
  return s;
}

TEST(MmaTextMutation, SeedsBehave) {
  const auto seeds = testing::load_corpus(FP8Q_MMA_TEXT_CORPUS);
  ASSERT_GE(seeds.size(), 4u);
  for (const auto& [name, text] : seeds) {
    SCOPED_TRACE(name);
    EXPECT_EQ(fuzz::mma_text_one_input(text), name == "two_samples" || name == "crlf" || name == "with_c");
  }
}

TEST(MmaTextMutation, TwentyThousandMutationsOnlyFormatErrors) {
  SplitMix64 rng{0x3A7Eull};
  const auto seeds = testing::load_corpus(FP8Q_MMA_TEXT_CORPUS);
  const auto [accepted, rejected] = testing::run_mutations(
      seeds, rng, 20000, mutate, [](const std::string& s) { return fuzz::mma_text_one_input(s); });
  // Both outcomes occur: the mutations reach past the first check.
  EXPECT_GT(accepted, 100u);
  EXPECT_GT(rejected, 1000u);
}

}  // namespace
}  // namespace fp8q::checkpoint
