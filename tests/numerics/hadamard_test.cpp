// numerics/hadamard.hpp: exact cases of the definition, the integer path against the fp64 one
// on blocks both hold, the caller's FP environment and the thread count, and the errors.
// (tests/python/test_hadamard.py checks it against the definition in exact rationals.)
#include "fp8q/numerics/hadamard.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

#include "hostile_fp_env.hpp"

namespace fp8q {
namespace {

std::vector<float> transform(const std::vector<float>& x, std::uint16_t mask, int threads = 1) {
  std::vector<float> y(x.size());
  hadamard16(x, y, mask, threads);
  return y;
}

TEST(Hadamard16, ExactCases) {
  std::vector<float> spike(16, 0.0f);
  spike[5] = 4.0f;  // column 5 of H / 4 times 4: the signs (-1)^popcount(5 & j)
  const auto y = transform(spike, 0);
  for (int j = 0; j < 16; ++j) EXPECT_EQ(y[j], (std::popcount(5u & j) % 2 != 0) ? -1.0f : 1.0f) << j;
  // sign bit 5 flips that column
  const auto yn = transform(spike, 1u << 5);
  for (int j = 0; j < 16; ++j) EXPECT_EQ(yn[j], -y[j]);
  // ones: only output 0 is nonzero (16 / 4); the others cancel exactly to +0
  const auto ones = transform(std::vector<float>(16, 1.0f), 0);
  EXPECT_EQ(ones[0], 4.0f);
  for (int j = 1; j < 16; ++j) EXPECT_EQ(std::bit_cast<std::uint32_t>(ones[j]), 0u) << j;
  // all -0: output 0 adds sixteen -0 terms (-0); the others negate some, whose +0 makes +0
  const auto zeros = transform(std::vector<float>(16, -0.0f), 0);
  EXPECT_EQ(std::bit_cast<std::uint32_t>(zeros[0]), 0x80000000u);
  for (int j = 1; j < 16; ++j) EXPECT_EQ(std::bit_cast<std::uint32_t>(zeros[j]), 0u) << j;
  // 1 + 2^-30 spread with -1: the sums need 31 bits and round once
  std::vector<float> x(16, 0.0f);
  x[0] = 1.0f, x[1] = std::ldexp(1.0f, -30), x[2] = 3.0f;
  const auto z = transform(x, 0);
  EXPECT_EQ(z[0], (4.0f + std::ldexp(1.0f, -30)) / 4);  // 1 + 2^-32 rounds to 1
  EXPECT_EQ(z[0], 1.0f);
}

// A block with 2^-149 beside O(1) values spans 150 binades and takes the integer path; its
// exact sums differ from those of the same block with a 0 there by 2^-151, so each result equals
// the fp64 path's result for that block, or (a tie broken by the tiny term) lies one ulp from it.
TEST(Hadamard16, IntegerPathAgreesWithTheFp64Path) {
  std::mt19937_64 rng(7);
  std::normal_distribution<float> normal;
  int moved = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<float> x(16);
    for (float& v : x) v = std::round(normal(rng) * 64) / 64;  // short significands: ties happen
    const std::size_t at = rng() % 16;
    x[at] = 0.0f;
    const auto mask = static_cast<std::uint16_t>(rng());
    const auto a = transform(x, mask);
    x[at] = std::ldexp(1.0f, -149);
    const auto b = transform(x, mask);
    for (int j = 0; j < 16; ++j) {
      if (a[j] == b[j]) continue;
      ++moved;
      EXPECT_TRUE(b[j] == std::nextafter(a[j], INFINITY) || b[j] == std::nextafter(a[j], -INFINITY))
          << trial << " " << j << ": " << a[j] << " vs " << b[j];
    }
  }
  EXPECT_EQ(moved, 0);  // short significands: every sum is exact in fp32, so no result moves
}

TEST(Hadamard16, SameBitsForEveryThreadCountAndFpEnvironment) {
  std::mt19937_64 rng(3);
  std::normal_distribution<float> normal;
  std::vector<float> x(16 * 1000);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = normal(rng) * std::ldexp(1.0f, static_cast<int>(rng() % 200) - 140);
  const auto want = transform(x, 0xA5A5);
  for (int threads : {2, 3, 7}) EXPECT_EQ(transform(x, 0xA5A5, threads), want) << threads;
  {
    test::ScopedHostileFpEnv env;
    const auto got = transform(x, 0xA5A5);
    for (std::size_t i = 0; i < got.size(); ++i)
      ASSERT_EQ(std::bit_cast<std::uint32_t>(got[i]), std::bit_cast<std::uint32_t>(want[i])) << i;
  }
}

TEST(Hadamard16, Errors) {
  std::vector<float> x(24), y(24), y16(16);
  EXPECT_THROW(hadamard16(x, y, 0), std::invalid_argument);
  EXPECT_THROW(hadamard16(std::span<const float>(x).first(16), y, 0), std::invalid_argument);
  try {
    hadamard16(x, y, 0);
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "hadamard16: 24 values, not a multiple of 16");
  }
  hadamard16(std::span<const float>(x).first(16), y16, 0);
}

}  // namespace
}  // namespace fp8q
