// numerics/convert.hpp + bulk.hpp, stochastic rounding: unbiased in expectation. With a fixed
// seed, N = 2^20 roundings of x (all with distinct counters) average to x within 5 standard
// errors, sigma = ulp * sqrt(p (1 - p) / N), p the exact up-probability. Deterministic: the
// seed is fixed, so this either always passes or always fails.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "fp8q/numerics/bulk.hpp"
#include "fp8q/numerics/convert.hpp"

namespace fp8q {
namespace {

void check_unbiased(const Format& f, float x, double lo, double hi) {
  constexpr std::size_t kN = 1u << 20;
  std::vector<float> in(kN, x);
  std::vector<std::uint8_t> out(kN);
  ConvertOptions o;
  o.rounding = Rounding::kStochastic;
  o.seed = 0xC0FFEE;
  convert(in, out, f, o, {2});
  double sum = 0;
  std::size_t ups = 0;
  for (std::uint8_t c : out) {
    const double v = decode_f64(c, f);
    ASSERT_TRUE(v == lo || v == hi) << "rounded to " << v << ", not a neighbour of " << x;
    sum += v;
    ups += v == hi;
  }
  const double p = (std::fabs(x) - std::fabs(lo)) / (std::fabs(hi) - std::fabs(lo));
  const double sigma = std::fabs(hi - lo) * std::sqrt(p * (1 - p) / kN);
  EXPECT_NEAR(sum / kN, x, 5 * sigma) << f.name << " x = " << x << ", up fraction " << double(ups) / kN;
}

TEST(StochasticRounding, UnbiasedInExpectation) {
  check_unbiased(kE4M3FN, 1.0f + 0.3f * 0.125f, 1.0, 1.125);           // normal range
  check_unbiased(kE4M3FN, -(2.0f + 0.9f * 0.25f), -2.0, -2.25);        // negative
  check_unbiased(kE4M3FN, std::ldexp(1.25f, -9), std::ldexp(1.0, -9), std::ldexp(2.0, -9));  // subnormal
  check_unbiased(kE5M2, 1000.0f, 896.0, 1024.0);
  check_unbiased(kE2M1, 2.5f, 2.0, 3.0);
}

TEST(StochasticRounding, ExactValuesNeverMove) {
  std::vector<float> in(4096, 1.5f);
  std::vector<std::uint8_t> out(in.size());
  ConvertOptions o;
  o.rounding = Rounding::kStochastic;
  convert(in, out, kE4M3FN, o);
  for (std::uint8_t c : out) ASSERT_EQ(c, encode_f32(1.5f, kE4M3FN));
}

TEST(StochasticRounding, DependsOnSeedAndOffset) {
  std::vector<float> in(4096, 1.0625f);  // p = 1/2
  std::vector<std::uint8_t> a(in.size()), b(in.size());
  ConvertOptions o;
  o.rounding = Rounding::kStochastic;
  o.seed = 1;
  convert(in, a, kE4M3FN, o);
  o.seed = 2;
  convert(in, b, kE4M3FN, o);
  EXPECT_NE(a, b);
}

}  // namespace
}  // namespace fp8q
