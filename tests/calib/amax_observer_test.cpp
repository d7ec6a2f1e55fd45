// Amax observers: merge exactness, NaN/Inf accounting, the moving average's formula and its
// lockstep merge.
#include "fp8q/calib/amax_observer.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <random>

#include "fp8q/numerics/convert.hpp"
#include "samples.hpp"

namespace fp8q::calib {
namespace {

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(AmaxObserver, MaxOfFiniteValuesNonFiniteCounted) {
  AmaxObserver a;
  const std::vector<float> x = {1.0f, -3.5f, kNan, kInf, -kInf, -kInf, 2.0f, -0.0f};
  a.observe(x);
  EXPECT_EQ(a.amax(), 3.5f);
  EXPECT_EQ(a.count(), 4u);  // 1, -3.5, 2, -0
  EXPECT_EQ(a.non_finite().nan, 1u);
  EXPECT_EQ(a.non_finite().pos_inf, 1u);
  EXPECT_EQ(a.non_finite().neg_inf, 2u);
}

TEST(AmaxObserver, Bf16PatternsAreExactValues) {
  AmaxObserver a;
  // 0xC0A0 = -5.0, 0x3F80 = 1.0, 0x7FC0 = NaN, 0xFF80 = -Inf
  const std::vector<std::uint16_t> x = {0x3F80, 0xC0A0, 0x7FC0, 0xFF80};
  a.observe_bf16(x);
  EXPECT_EQ(a.amax(), 5.0f);
  EXPECT_EQ(a.count(), 2u);
  EXPECT_EQ(a.non_finite().nan, 1u);
  EXPECT_EQ(a.non_finite().neg_inf, 1u);
}

// All finite: the vector path (max_abs_bits) against a plain loop, for lengths through the
// vector widths and past them, with the largest |x| negative, subnormal or zero.
TEST(AmaxObserver, AllFiniteTakesTheVectorPathAndEqualsPlainMax) {
  std::mt19937 rng(5);
  for (std::size_t n : {0, 1, 7, 8, 15, 16, 17, 31, 33, 64, 100, 1001}) {
    std::vector<float> x(n);
    for (float& v : x) v = std::ldexp(static_cast<float>(rng() % 1000) - 500.0f, -140);  // subnormals and zeros
    if (n > 0) x[rng() % n] = -std::ldexp(1.0f, -126) * 3.0f;  // the largest, negative
    float expect = 0.0f;
    for (float v : x) expect = std::max(expect, std::fabs(v));
    AmaxObserver a;
    a.observe(x);
    EXPECT_EQ(a.amax(), expect) << n;
    EXPECT_EQ(a.count(), n);
    EXPECT_EQ(a.non_finite().nan + a.non_finite().pos_inf + a.non_finite().neg_inf, 0u);
    std::vector<std::uint16_t> b(n);
    for (std::size_t i = 0; i < n; ++i) b[i] = static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(x[i]) >> 16);
    float expect_b = 0.0f;
    for (std::uint16_t v : b) expect_b = std::max(expect_b, std::fabs(std::bit_cast<float>(std::uint32_t{v} << 16)));
    AmaxObserver ab;
    ab.observe_bf16(b);
    EXPECT_EQ(ab.amax(), expect_b) << n;
    EXPECT_EQ(ab.count(), n);
  }
}

TEST(AmaxObserver, MergeOfAnySplitEqualsTheWhole) {
  auto x = testing::student_t(10007, 2.0, 1.0, 11);
  x[17] = kNan, x[5000] = -kInf;
  AmaxObserver whole;
  whole.observe(x);
  std::mt19937 rng(3);
  for (int trial = 0; trial < 20; ++trial) {
    const std::size_t cut = rng() % (x.size() + 1);
    AmaxObserver a, b;
    a.observe(std::span<const float>(x).first(cut));
    b.observe(std::span<const float>(x).subspan(cut));
    b.merge(a);  // either order
    EXPECT_EQ(b, whole) << "cut " << cut;
  }
}

TEST(MovingAverageAmax, FollowsTheRecurrence) {
  MovingAverageAmaxObserver m(0.25);
  EXPECT_EQ(m.amax(), 0.0f);
  const std::vector<std::vector<float>> batches = {{1, -2}, {8}, {-4, 0.5f}, {kNan, 2}};
  double ref = 0;
  for (std::size_t t = 0; t < batches.size(); ++t) {
    m.observe(batches[t]);
    AmaxObserver a;
    a.observe(batches[t]);
    ref = t == 0 ? a.amax() : ref + 0.25 * (a.amax() - ref);
    EXPECT_EQ(m.amax(), static_cast<float>(ref)) << "step " << t;
  }
  EXPECT_EQ(m.steps(), 4u);
  EXPECT_EQ(m.non_finite().nan, 1u);  // the NaN never reached the average
}

TEST(MovingAverageAmax, LockstepMergeIsTheObserverOfEachStepsUnion) {
  const auto x = testing::laplace(4000, 1.0, 5);
  MovingAverageAmaxObserver whole(0.1), left(0.1), right(0.1);
  for (std::size_t step = 0; step < 8; ++step) {
    const auto batch = std::span<const float>(x).subspan(step * 500, 500);
    whole.observe(batch);
    left.observe(batch.first(100 + step * 37));  // every step split differently
    right.observe(batch.subspan(100 + step * 37));
  }
  left.merge(right);
  EXPECT_EQ(left, whole);
}

TEST(MovingAverageAmax, RejectsWhatCannotMerge) {
  EXPECT_THROW(MovingAverageAmaxObserver(0.0), std::invalid_argument);
  EXPECT_THROW(MovingAverageAmaxObserver(1.5), std::invalid_argument);
  MovingAverageAmaxObserver a(0.5), b(0.5), c(0.25);
  const std::vector<float> x = {1, 2};
  a.observe(x);
  a.observe(x);
  b.observe(x);
  EXPECT_THROW(a.merge(b), std::invalid_argument);  // 2 steps vs 1: order has no union
  EXPECT_THROW(b.merge(c), std::invalid_argument);  // different factors
}

}  // namespace
}  // namespace fp8q::calib
