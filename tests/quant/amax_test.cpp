// quant/amax.hpp: amax with NaN propagation and the same result for any thread count.
#include <gtest/gtest.h>

#include <cmath>
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

}  // namespace
}  // namespace fp8q
