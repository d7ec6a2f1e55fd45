// The percentile and max calibrators.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "fp8q/calib/calibrators.hpp"
#include "samples.hpp"

namespace fp8q::calib {
namespace {

std::vector<float> sorted_abs(const std::vector<float>& x) {
  std::vector<float> a;
  for (float v : x) a.push_back(std::fabs(v));
  std::sort(a.begin(), a.end());
  return a;
}

TEST(Percentile, HundredIsTheMax) {
  const auto x = testing::student_t(30000, 2.0, 1.0, 41);
  HistogramObserver h;
  h.observe(x);
  EXPECT_EQ(percentile_amax(h, 100.0), h.amax());
  EXPECT_EQ(max_amax(h), sorted_abs(x).back());
}

TEST(Percentile, KnownQuantilesOfUniformData) {
  // |U(-1, 1)| is U(0, 1): the p-th percentile is p / 100 (sampling error ~ 1e-3 at 1e6)
  const auto x = testing::uniform(1000000, -1.0f, 1.0f, 42);
  HistogramObserver h;
  h.observe(x);
  for (double p : {10.0, 50.0, 90.0, 99.0, 99.9, 99.99, 99.999})
    EXPECT_NEAR(percentile_amax(h, p), p / 100, 2e-3) << p;
}

TEST(Percentile, SharesABinWithTheSampleOfThatRankOrIsIt) {
  // documented: in the exact tail, the sample of rank ceil(r); elsewhere a value in the bin
  // that holds that sample
  for (int bins : {64, 2048}) {
    const auto x = testing::laplace(50000, 1.0, 43);
    HistogramObserver h({bins, 256, std::nullopt});
    h.observe(x);
    const auto a = sorted_abs(x);
    // p in thousandths of a percent, so that the rank ceil(p / 100 * N) is computed exactly, in
    // integers (the decimal p the user means, not its nearest double)
    for (std::uint64_t p1000 : {1000u, 25000u, 50000u, 75000u, 99000u, 99900u, 99990u, 99999u}) {
      const double p = static_cast<double>(p1000) / 1000;
      const std::uint64_t rank = (p1000 * a.size() + 99999) / 100000;
      const float truth = a[rank - 1];
      const float got = percentile_amax(h, p);
      if (rank > a.size() - 256) {
        EXPECT_EQ(got, truth) << bins << " bins, p " << p;
      } else {
        const int bin = h.bin_of(truth);
        EXPECT_GE(got, h.bin_edge(bin)) << bins << " bins, p " << p;
        EXPECT_LE(got, h.bin_edge(bin + 1)) << bins << " bins, p " << p;
      }
    }
  }
}

// 99.9 is not exact in binary: p / 100 * N lands a few ulps above the integer rank (999 for
// N = 1000), which must not move the result to the next sample.
TEST(Percentile, DecimalPercentilesOnExactIntegerRanks) {
  for (std::size_t tail : {std::size_t{256}, std::size_t{0}})  // in the exact tail; from the bins
    for (std::size_t n : {std::size_t{1000}, std::size_t{10000}, std::size_t{100000}}) {
      std::vector<float> x(n, 1.0f);
      x[n / 2] = 2.0f;  // one sample above: rank n, everything up to rank n - 1 is 1.0
      HistogramObserver h({2048, static_cast<int>(tail), std::nullopt});
      h.observe(x);
      const double p = 100.0 * static_cast<double>(n - 1) / static_cast<double>(n);  // 99.9, 99.99, 99.999
      const float got = percentile_amax(h, p);
      if (tail > 0) {
        EXPECT_EQ(got, 1.0f) << "n " << n << " tail " << tail;
      } else {  // a value in the bin of 1.0 (the bin path interpolates inside it)
        EXPECT_GE(got, h.bin_edge(h.bin_of(1.0f))) << "n " << n;
        EXPECT_LE(got, h.bin_edge(h.bin_of(1.0f) + 1)) << "n " << n;
      }
      EXPECT_EQ(percentile_amax(h, 100.0), 2.0f);
    }
}

TEST(Percentile, ZerosAndEmptyAndBadArguments) {
  HistogramObserver h;
  EXPECT_EQ(percentile_amax(h, 99.9), 0.0f);
  std::vector<float> x(1000, 0.0f);
  x[0] = 5.0f;
  h.observe(x);
  EXPECT_EQ(percentile_amax(h, 50.0), 0.0f);  // half the samples are exact zeros
  EXPECT_EQ(percentile_amax(h, 100.0), 5.0f);
  EXPECT_THROW(percentile_amax(h, 0.0), std::invalid_argument);
  EXPECT_THROW(percentile_amax(h, 100.5), std::invalid_argument);
  EXPECT_THROW(percentile_amax(h, std::nan("")), std::invalid_argument);
}

TEST(Methods, NamesRoundTrip) {
  for (Method m : {Method::kMax, Method::kPercentile, Method::kMse, Method::kEntropy})
    EXPECT_EQ(parse_method(method_name(m)), m);
  EXPECT_FALSE(parse_method("kl"));
}

}  // namespace
}  // namespace fp8q::calib
