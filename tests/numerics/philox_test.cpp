// numerics/philox.hpp: the published known-answer vectors of Philox4x32-10 (Random123's
// kat_vectors), and the per-element word of stochastic rounding.
#include "fp8q/numerics/philox.hpp"

#include <gtest/gtest.h>

namespace fp8q {
namespace {

using W4 = std::array<std::uint32_t, 4>;

TEST(Philox, KnownAnswerVectors) {
  EXPECT_EQ(philox4x32_10({0, 0, 0, 0}, {0, 0}), (W4{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(philox4x32_10({~0u, ~0u, ~0u, ~0u}, {~0u, ~0u}), (W4{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}),
            (W4{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(Philox, ComputesAtCompileTime) {
  static_assert(philox4x32_10({0, 0, 0, 0}, {0, 0})[0] == 0x6627e8d5u);
  static_assert(sr_random(0, 0) == 0x6627e8d5u);
}

TEST(Philox, SrWordIsKeyedBySeedAndCounterOnly) {
  const std::uint64_t seed = 0x0123456789ABCDEFull, n = 0x1'0000'0005ull;
  EXPECT_EQ(sr_random(seed, n), philox4x32_10({5, 1, 0, 0}, {0x89ABCDEF, 0x01234567})[0]);
  EXPECT_NE(sr_random(seed, n), sr_random(seed + 1, n));
  EXPECT_NE(sr_random(seed, n), sr_random(seed, n + 1));
}

}  // namespace
}  // namespace fp8q
