// quant/amax.hpp: amax with NaN propagation and the same result for any thread count.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "fp8q/numerics/convert.hpp"
#include "fp8q/quant/amax.hpp"
#include "thread_counts.hpp"

namespace fp8q {
namespace {

std::vector<float> normal_data(std::size_t n, float sigma, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, sigma);
  std::vector<float> x(n);
  for (float& v : x) v = d(rng);
  return x;
}

TEST(Amax, IsTheLargestMagnitudeForAnyThreadCount) {
  auto x = normal_data(300001, 3.0f, 1);
  x[123456] = -1000.5f;
  for (int t : test::kThreadCounts) EXPECT_EQ(amax(x, t), 1000.5f) << t << " threads";
  std::vector<std::uint16_t> b(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) b[i] = static_cast<std::uint16_t>(bits_of(x[i]) >> 16);
  EXPECT_EQ(amax_bf16(b, 2), 1000.0f);  // -1000.5 truncated to bf16 is -1000
  EXPECT_EQ(amax(std::span<const float>{}), 0.0f);
  EXPECT_EQ(bits_of(amax(std::vector<float>{-0.0f, 0.0f})), 0u);
}

TEST(Amax, NanAnywhereMakesItNan) {
  auto x = normal_data(100000, 1.0f, 2);
  x[99999] = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(std::isinf(amax(x, 2)));
  x[7] = -std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(std::isnan(amax(x, 2)));
  EXPECT_THROW(amax(x, 0), std::invalid_argument);
}

// block_amax against a plain loop over each block's elements, for f32, bf16 and fp16 sources,
// grids of narrow (1 x 1, 128 x 1, 2 x 7), NVFP4 (1 x 16, with and without a ragged last block)
// and wide blocks, any thread count; NaN and Inf where they are the largest.
TEST(BlockAmax, IsEachBlocksLargestMagnitude) {
  struct Case {
    std::size_t rows, cols, br, bc;
  };
  const Case cases[] = {{5, 37, 1, 1},  {130, 9, 128, 1},  {9, 50, 2, 7},    {7, 64, 1, 16}, {6, 53, 1, 16},
                        {3, 16, 1, 16}, {4, 15, 1, 16},     {33, 70, 16, 16}, {9, 300, 4, 32}, {260, 260, 128, 128}};
  std::mt19937 rng(5);
  for (const Case& k : cases)
    for (const Format* from : {&kF32, &kBF16, &kF16}) {
      const BlockGrid g{k.rows, k.cols, k.br, k.bc};
      const std::size_t n = k.rows * k.cols, ib = static_cast<std::size_t>(from->storage_bytes());
      std::vector<float> v(n);
      for (auto& e : v) e = std::ldexp(static_cast<float>(rng() % 2000) - 1000.0f, -9);
      v[rng() % n] = std::numeric_limits<float>::infinity();
      v[rng() % n] = -std::numeric_limits<float>::quiet_NaN();  // its block's amax is NaN
      v[rng() % n] = -16384.0f;
      std::vector<std::byte> bytes(n * ib);
      std::vector<std::uint32_t> x(n);  // the stored elements' fp32 patterns
      for (std::size_t i = 0; i < n; ++i) {
        if (from == &kF32) {
          std::memcpy(bytes.data() + i * 4, &v[i], 4);
          x[i] = bits_of(v[i]);
          continue;
        }
        ConvertOptions keep_inf;
        keep_inf.overflow = Overflow::kInfOrNan;
        const std::uint64_t code = encode_f32(v[i], *from, keep_inf);
        std::memcpy(bytes.data() + i * ib, &code, ib);
        x[i] = bits_of(decode_f32(code, *from));
      }
      std::vector<std::uint32_t> want(g.grid_size(), 0);  // |x| patterns in fp32 order
      for (std::size_t r = 0; r < k.rows; ++r)
        for (std::size_t c = 0; c < k.cols; ++c) {
          std::uint32_t& w = want[(r / k.br) * g.grid_cols() + c / k.bc];
          w = std::max(w, x[r * k.cols + c] & 0x7FFFFFFFu);
        }
      for (int t : test::kThreadCounts) {
        std::vector<float> got(g.grid_size(), -1.0f);
        block_amax(bytes, *from, g, got, t);
        for (std::size_t b = 0; b < want.size(); ++b) {
          const bool nan = want[b] > 0x7F800000u;
          ASSERT_TRUE(nan ? std::isnan(got[b]) : bits_of(got[b]) == want[b])
              << from->name << " " << k.rows << " x " << k.cols << " in " << k.br << " x " << k.bc << ", block " << b
              << ", " << t << " threads: " << got[b] << " vs " << float_of(want[b]);
        }
      }
    }
}

}  // namespace
}  // namespace fp8q
