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
    for (double p : {1.0, 25.0, 50.0, 75.0, 99.0, 99.9, 99.99, 99.999}) {
      const double r = p / 100 * static_cast<double>(a.size());
      const float truth = a[static_cast<std::size_t>(std::ceil(r)) - 1];
      const float got = percentile_amax(h, p);
      if (r > static_cast<double>(a.size() - 256)) {
        EXPECT_EQ(got, truth) << bins << " bins, p " << p;
      } else {
        const int bin = h.bin_of(truth);
        EXPECT_GE(got, h.bin_edge(bin)) << bins << " bins, p " << p;
        EXPECT_LE(got, h.bin_edge(bin + 1)) << bins << " bins, p " << p;
      }
    }
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
