// Test helper shared by the mutation tests of the checkpoint parsers: a fixed-seed random
// stream and the seed corpus of a fuzz target.
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace fp8q::checkpoint::testing {

// splitmix64 (Steele, Lea, Flood 2014): a fixed seed gives the same mutations on every
// platform and standard library (no std::*_distribution, whose output is unspecified).
struct SplitMix64 {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  std::uint64_t below(std::uint64_t n) { return n == 0 ? 0 : next() % n; }
};

// 1 to 4 mutations of a text: bit flips, byte overwrites, insertions and deletions, a token of
// `tokens` spliced in, truncation, duplication of a slice of up to 15 bytes.
inline std::string mutate_text(std::string s, SplitMix64& rng, std::span<const char* const> tokens) {
  const int n = 1 + static_cast<int>(rng.below(4));
  for (int i = 0; i < n; ++i) {
    const std::size_t at = s.empty() ? 0 : rng.below(s.size());
    switch (rng.below(7)) {
      case 0: if (!s.empty()) s[at] = static_cast<char>(s[at] ^ (1 << rng.below(8))); break;
      case 1: if (!s.empty()) s[at] = static_cast<char>(rng.below(256)); break;
      case 2: s.insert(at, 1, static_cast<char>(rng.below(256))); break;
      case 3: if (!s.empty()) s.erase(at, 1 + rng.below(4)); break;
      case 4: s.insert(at, tokens[rng.below(tokens.size())]); break;
      case 5: s.resize(at); break;
      default: s.insert(at, s.substr(at, rng.below(16))); break;
    }
  }
  return s;
}

// (file name, bytes) of every file in `dir`, sorted by name (directory order is not
// deterministic).
inline std::vector<std::pair<std::string, std::string>> load_corpus(const std::filesystem::path& dir) {
  std::vector<std::pair<std::string, std::string>> seeds;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    std::ifstream in(e.path(), std::ios::binary);
    seeds.emplace_back(e.path().filename().string(),
                       std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()));
  }
  std::sort(seeds.begin(), seeds.end());
  return seeds;
}

// Runs `one_input` (a fuzz body: true when accepted, false when rejected with the expected
// error, anything else thrown is a failure) on `count` mutations of randomly chosen seeds;
// returns (accepted, rejected), or throws std::runtime_error naming the mutation that failed.
template <class Mutate, class OneInput>
std::pair<std::size_t, std::size_t> run_mutations(const std::vector<std::pair<std::string, std::string>>& seeds,
                                                  SplitMix64& rng, int count, Mutate&& mutate, OneInput&& one_input) {
  std::size_t accepted = 0, rejected = 0;
  for (int i = 0; i < count; ++i) {
    const std::string input = mutate(seeds[rng.below(seeds.size())].second, rng);
    try {
      (one_input(input) ? accepted : rejected)++;
    } catch (const std::exception& e) {
      throw std::runtime_error("mutation " + std::to_string(i) + ": " + e.what());
    }
  }
  return {accepted, rejected};
}

}  // namespace fp8q::checkpoint::testing
