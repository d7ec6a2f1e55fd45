// The fuzz target's body (tests/fuzz/safetensors_entry.hpp) over the seed corpus and 20000
// deterministic mutations of it, so that every build (GCC included, no libFuzzer) checks
// that parse_header() never crashes and rejects only with FormatError.
//
// Mutations, 1 to 4 per input, chosen by a fixed-seed splitmix64 stream: bit flips, byte
// overwrites, byte insertions and deletions, edits of the 8-byte length field (off by a few,
// 0, the exact remaining size, past the 100 MB limit, 2^64 - 1, random), JSON tokens spliced
// into the header with the length field kept consistent (so the mutation reaches the JSON
// and schema checks instead of failing the length check), digit edits, and data sections
// made shorter or longer.
#include <gtest/gtest.h>

#include "mutation_util.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include "safetensors_entry.hpp"

namespace fp8q::checkpoint {
namespace {

using testing::SplitMix64;

std::vector<std::pair<std::string, std::string>> load_corpus() { return testing::load_corpus(FP8Q_SAFETENSORS_CORPUS); }

std::uint64_t get_length(const std::string& f) {
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(f[static_cast<std::size_t>(i)]);
  return n;
}
void set_length(std::string& f, std::uint64_t n) {
  for (int i = 0; i < 8; ++i) f[static_cast<std::size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xFF);
}
// True when the length field is intact enough to locate the header.
bool header_ok(const std::string& f) { return f.size() >= 8 && get_length(f) <= f.size() - 8; }

const std::string kTokens[] = {
    "-1", "0", "7", "1e400", "2.5", "18446744073709551615", "18446744073709551616", "4294967296",
    "\"", "{", "}", "[", "]", ",", ":", " ", "null", "true", "\"F32\"", "\"F8_E4M3\"", "\"BF16\"", "\"Q9\"",
    "\"dtype\"", "\"shape\"", "\"data_offsets\"", "\"__metadata__\":{\"a\":\"b\"},", "\"__metadata__\":[],",
    "\"e\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]},", "\"w\":{\"dtype\":\"U8\",\"shape\":[1]},",
    "\\u0000", "\\ud800", "\xC3\xA9", "\xFF", "\xED\xA0\x80", "/*x*/",
};

std::string mutate(std::string f, SplitMix64& rng) {
  const int steps = 1 + static_cast<int>(rng.below(4));
  for (int s = 0; s < steps; ++s) {
    switch (rng.below(9)) {
      case 0:  // flip one bit
        if (!f.empty()) f[rng.below(f.size())] ^= static_cast<char>(1u << rng.below(8));
        break;
      case 1:  // overwrite one byte
        if (!f.empty()) f[rng.below(f.size())] = static_cast<char>(rng.below(256));
        break;
      case 2: {  // insert 1..4 random bytes
        std::string ins(1 + rng.below(4), '\0');
        for (char& c : ins) c = static_cast<char>(rng.below(256));
        f.insert(rng.below(f.size() + 1), ins);
        break;
      }
      case 3: {  // delete 1..8 bytes
        if (f.empty()) break;
        const std::size_t at = rng.below(f.size());
        f.erase(at, 1 + rng.below(8));
        break;
      }
      case 4: {  // edit the length field
        if (f.size() < 8) break;
        const std::uint64_t n = get_length(f);
        const std::uint64_t choices[] = {n + rng.below(19) - 9, 0, f.size() - 8, kMaxHeaderBytes + 1,
                                         ~std::uint64_t{0}, rng.next(), n + 1, n - 1};
        set_length(f, choices[rng.below(std::size(choices))]);
        break;
      }
      case 5:
      case 6: {  // splice a JSON token into the header, keeping the length field consistent
        if (!header_ok(f)) break;
        const std::uint64_t n = get_length(f);
        const std::string& tok = kTokens[rng.below(std::size(kTokens))];
        f.insert(8 + rng.below(n + 1), tok);
        set_length(f, n + tok.size());
        break;
      }
      case 7: {  // change a digit in the header (sizes and offsets)
        if (!header_ok(f) || get_length(f) == 0) break;
        const std::size_t at = 8 + rng.below(get_length(f));
        for (std::size_t k = 0; k < 64; ++k) {  // the next digit at or after `at`, if any nearby
          const std::size_t i = at + k;
          if (i >= 8 + get_length(f)) break;
          if (f[i] >= '0' && f[i] <= '9') {
            f[i] = "0123456789-"[rng.below(11)];
            break;
          }
        }
        break;
      }
      default: {  // shorten or lengthen the data section
        const std::size_t delta = 1 + rng.below(16);
        if (rng.below(2) == 0) {
          f.resize(f.size() > delta ? f.size() - delta : 0);
        } else {
          f.append(delta, static_cast<char>(rng.below(256)));
        }
        break;
      }
    }
  }
  return f;
}

std::string hex_head(const std::string& f) {
  std::string out;
  char buf[4];
  for (std::size_t i = 0; i < std::min<std::size_t>(f.size(), 96); ++i) {
    std::snprintf(buf, sizeof buf, "%02X", static_cast<unsigned char>(f[i]));
    out += buf;
  }
  return out + (f.size() > 96 ? "..." : "");
}

// A message with numbers and quoted names blanked: which check fired, not on what.
std::string message_kind(std::string m) {
  std::string out;
  bool in_quote = false;
  for (std::size_t i = 0; i < m.size(); ++i) {
    const char c = m[i];
    if (in_quote) {
      if (c == '\\') ++i;
      else if (c == '"') in_quote = false;
      continue;
    }
    if (c == '"') {
      in_quote = true;
      out += "Q";
    } else if (c >= '0' && c <= '9') {
      if (out.empty() || out.back() != '#') out += '#';
    } else {
      out += c;
    }
  }
  // JSON syntax errors are one kind however nlohmann words them.
  if (const auto p = out.find("invalid JSON"); p != std::string::npos) out.resize(p + 12);
  return out;
}

std::span<const std::byte> bytes_of(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

TEST(SafetensorsMutation, SeedCorpusIsAccepted) {
  const auto seeds = load_corpus();
  ASSERT_GE(seeds.size(), 5u) << FP8Q_SAFETENSORS_CORPUS;
  for (const auto& [name, blob] : seeds) {
    EXPECT_TRUE(fuzz::safetensors_one_input(bytes_of(blob))) << name;
  }
}

TEST(SafetensorsMutation, TwentyThousandMutationsNeverCrashAndOnlyFormatErrors) {
  const auto seeds = load_corpus();
  ASSERT_FALSE(seeds.empty());
  SplitMix64 rng{0x5AFE7E45025EEDull};
  constexpr int kIterations = 20000;
  int accepted = 0, rejected = 0, failures = 0;
  std::set<std::string> kinds;
  for (int i = 0; i < kIterations && failures < 5; ++i) {
    const std::string input = mutate(seeds[static_cast<std::size_t>(i) % seeds.size()].second, rng);
    try {
      if (fuzz::safetensors_one_input(bytes_of(input))) {
        ++accepted;
      } else {
        ++rejected;
        try {
          (void)parse_header(bytes_of(input), "fuzz-input");
        } catch (const FormatError& e) {
          kinds.insert(message_kind(e.what()));
        }
      }
    } catch (const std::exception& e) {
      ++failures;
      ADD_FAILURE() << "mutation " << i << " threw a non-FormatError: " << e.what() << "\ninput: " << hex_head(input);
    }
  }
  // The mutations must exercise both outcomes and reach many different checks; the floors
  // are well under what this seed gives (printed below), so that they only catch a mutator
  // that stopped reaching past the length field.
  std::printf("accepted %d, rejected %d, distinct rejection kinds %zu\n", accepted, rejected, kinds.size());
  EXPECT_GT(accepted, kIterations / 100);
  EXPECT_GT(rejected, kIterations / 2);
  EXPECT_GE(kinds.size(), 30u);
}

}  // namespace
}  // namespace fp8q::checkpoint
