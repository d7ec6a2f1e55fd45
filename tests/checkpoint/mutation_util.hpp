// Test helper shared by the mutation tests of the checkpoint parsers: a fixed-seed random
// stream and the seed corpus of a fuzz target.
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
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

}  // namespace fp8q::checkpoint::testing
