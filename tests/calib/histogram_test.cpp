// The |x| histogram: the bins against a double-arithmetic reference, growth, merge exactness
// for any split (fp32 and bf16, with NaN, Inf, zeros and values far apart), thread-count
// invariance, the exact tail, and every compiled kernel against the generic one.
#include "fp8q/calib/histogram.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>

#include "fp8q/calib/channels.hpp"
#include "fp8q/numerics/convert.hpp"
#include "samples.hpp"

namespace fp8q::calib {
namespace {

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// A mix that exercises every path: heavy tails, exact zeros, subnormals, NaN, +/-Inf.
std::vector<float> mixed(std::size_t n, unsigned seed) {
  auto x = testing::student_t(n, 1.5, 0.01, seed);
  std::mt19937 rng(seed);
  for (std::size_t i = 0; i < n / 50; ++i) x[rng() % n] = 0.0f;
  x[rng() % n] = -0.0f;
  x[rng() % n] = 1e-40f;  // subnormal
  x[n / 3] = kNan;
  x[n / 2] = -kInf;
  x[2 * n / 3] = kInf;
  return x;
}

std::vector<std::uint16_t> to_bf16(const std::vector<float>& x) {
  std::vector<std::uint16_t> b(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) b[i] = static_cast<std::uint16_t>(convert_one(bits_of(x[i]), kF32, kBF16, {}).code);
  return b;
}

// The definition, in double arithmetic on values (not bits): E = max(31, floor(log2 amax) + 127),
// S = bins / 32 sub-bins per binade, position of v = (floor(log2 v) + 127) S +
// floor((v / 2^floor(log2 v) - 1) S) (or floor(v 2^(126 + log2 S)) below 2^-126), bin =
// max(position - (E - 31) S, 0).
std::vector<std::uint64_t> reference_bins(const std::vector<float>& x, int bins, int* k_out) {
  const int sub = bins / 32;
  double amax = 0;
  for (float v : x)
    if (std::isfinite(v)) amax = std::max(amax, std::fabs(static_cast<double>(v)));
  const int top = std::max(31, amax > 0 ? static_cast<int>(std::floor(std::log2(amax))) + 127 : 0);
  const long base = static_cast<long>(top - 31) * sub;
  std::vector<std::uint64_t> c(static_cast<std::size_t>(bins), 0);
  for (float f : x) {
    if (!std::isfinite(f)) continue;
    const double v = std::fabs(static_cast<double>(f));
    long pos = 0;
    if (v >= std::ldexp(1.0, -126)) {
      const int e = static_cast<int>(std::floor(std::log2(v)));
      pos = static_cast<long>(e + 127) * sub + static_cast<long>(std::floor((v / std::ldexp(1.0, e) - 1) * sub));
    } else {
      pos = static_cast<long>(std::floor(v * std::ldexp(1.0, 126) * sub));
    }
    ++c[static_cast<std::size_t>(std::max(pos - base, 0L))];
  }
  *k_out = top - 126;
  return c;
}

std::vector<Isa> compiled_isas() {
  std::vector<Isa> v;
  for (Isa i : kAllIsas)
    if (isa_supported(i)) v.push_back(i);
  return v;
}

TEST(Histogram, BinsMatchTheDefinitionOnEveryKernel) {
  const auto x = mixed(100000, 1);
  for (int bins : {64, 2048, 65536})
    for (Isa isa : compiled_isas()) {
      HistogramObserver h({bins, 256, isa});
      h.observe(x);
      int k = 0;
      EXPECT_EQ(h.counts(), reference_bins(x, bins, &k)) << bins << " bins, " << isa_name(isa);
      EXPECT_EQ(h.range_exponent(), k);
      EXPECT_EQ(h.count(), x.size() - 3);
      EXPECT_EQ(h.non_finite().nan, 1u);
      EXPECT_EQ(h.non_finite().pos_inf, 1u);
      EXPECT_EQ(h.non_finite().neg_inf, 1u);
    }
}

TEST(Histogram, KernelsAgreeBitForBit) {
  // blocks without non-finite values take the fast kernels; all must give the generic's state
  const auto x = testing::student_t(1 << 18, 3.0, 2.0, 2);
  const auto xb = to_bf16(x);
  HistogramObserver ref({2048, 256, Isa::kGeneric}), ref_b({2048, 256, Isa::kGeneric});
  ref.observe(x);
  ref_b.observe_bf16(xb);
  for (Isa isa : compiled_isas()) {
    HistogramObserver h({2048, 256, isa}), hb({2048, 256, isa});
    h.observe(x);
    hb.observe_bf16(xb);
    EXPECT_EQ(h, ref) << isa_name(isa);
    EXPECT_EQ(hb, ref_b) << isa_name(isa);
  }
}

TEST(Histogram, GrowthKeepsEveryCount) {
  // small values first, then ever larger ones: each growth merges bins, none are lost, and the
  // result is the histogram the data gives with the final range from the start
  std::vector<float> x = testing::uniform(50000, 0.0f, 1.0f, 3);
  HistogramObserver grown, direct;
  grown.observe(x);
  const int k0 = grown.range_exponent();
  for (float big : {3.0f, 1000.0f, 1e12f, 1e30f}) {  // the last pushes [0, 1) into bin 0
    x.push_back(big);
    grown.observe(std::span<const float>(&x.back(), 1));
    std::uint64_t total = 0;
    for (auto c : grown.counts()) total += c;
    EXPECT_EQ(total, x.size());
  }
  EXPECT_GT(grown.range_exponent(), k0);
  std::vector<float> reversed(x.rbegin(), x.rend());  // the largest first: no growth at all
  direct.observe(reversed);
  EXPECT_EQ(grown, direct);
}

TEST(Histogram, MergeOfAnySplitEqualsTheWhole) {
  const auto x = mixed(60000, 4);
  const auto xb = to_bf16(x);
  HistogramObserver whole, whole_b;
  whole.observe(x);
  whole_b.observe_bf16(xb);
  std::mt19937 rng(9);
  for (int trial = 0; trial < 12; ++trial) {
    // 1 to 5 pieces at random cuts, merged in a random order
    std::vector<std::size_t> cuts = {0, x.size()};
    for (int c = 0, m = static_cast<int>(rng() % 5); c < m; ++c) cuts.push_back(rng() % x.size());
    std::sort(cuts.begin(), cuts.end());
    std::vector<HistogramObserver> parts, parts_b;
    for (std::size_t p = 0; p + 1 < cuts.size(); ++p) {
      parts.emplace_back(), parts_b.emplace_back();
      parts.back().observe(std::span<const float>(x).subspan(cuts[p], cuts[p + 1] - cuts[p]));
      parts_b.back().observe_bf16(std::span<const std::uint16_t>(xb).subspan(cuts[p], cuts[p + 1] - cuts[p]));
    }
    std::vector<std::size_t> order(parts.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), rng);
    HistogramObserver m, mb;
    for (std::size_t i : order) m.merge(parts[i]), mb.merge(parts_b[i]);
    EXPECT_EQ(m, whole) << "trial " << trial;
    EXPECT_EQ(mb, whole_b) << "trial " << trial;
  }
}

TEST(Histogram, MergeWithItselfEqualsObservingTwice) {
  for (std::size_t n : {std::size_t{5}, std::size_t{300}, std::size_t{5000}}) {  // tail not full; full
    const auto x = mixed(n, 7);
    HistogramObserver self, twice;
    self.observe(x);
    twice.observe(x);
    twice.observe(x);
    self.merge(self);
    EXPECT_EQ(self, twice) << n << " samples";
  }
}

TEST(Histogram, MergeOfDifferentRangesIsExact) {
  // one half far smaller than the other: the smaller range grows before the counts add
  const auto small = testing::uniform(3000, -1e-3f, 1e-3f, 5);
  const auto large = testing::uniform(3000, -500.0f, 500.0f, 6);
  std::vector<float> all = small;
  all.insert(all.end(), large.begin(), large.end());
  HistogramObserver a, b, whole;
  a.observe(small);
  b.observe(large);
  whole.observe(all);
  HistogramObserver ab = a, ba = b;
  ab.merge(b);
  ba.merge(a);
  EXPECT_EQ(ab, whole);
  EXPECT_EQ(ba, whole);
}

TEST(Histogram, ThreadCountDoesNotChangeTheState) {
  const auto x = mixed(300000, 7);
  HistogramObserver one;
  one.observe(x, 1);
  for (int t : {2, 3, 8}) {
    HistogramObserver h;
    h.observe(x, t);
    EXPECT_EQ(h, one) << t << " threads";
  }
}

TEST(Histogram, TailHoldsTheLargestValuesExactly) {
  auto x = testing::laplace(20000, 1.0, 8);
  x[100] = x[200] = 7.25f;  // duplicates count twice
  HistogramObserver h({2048, 64, std::nullopt});
  h.observe(x);
  std::vector<float> a;
  for (float v : x) a.push_back(std::fabs(v));
  std::sort(a.begin(), a.end(), std::greater<>());
  a.resize(64);
  EXPECT_EQ(h.tail(), a);
  EXPECT_EQ(h.amax(), a[0]);
  // fewer samples than the tail: the tail is all of them
  HistogramObserver s({2048, 64, std::nullopt});
  s.observe(std::span<const float>(x).first(10));
  EXPECT_EQ(s.tail().size(), 10u);
}

TEST(Histogram, ZerosAndEmpty) {
  HistogramObserver h;
  EXPECT_EQ(h.amax(), 0.0f);
  EXPECT_EQ(h.count(), 0u);
  const std::vector<float> z = {0.0f, -0.0f, 0.0f};
  h.observe(z);
  EXPECT_EQ(h.zeros(), 3u);
  EXPECT_EQ(h.counts()[0], 3u);
  EXPECT_EQ(h.amax(), 0.0f);
}

TEST(Histogram, RejectsBadOptions) {
  EXPECT_THROW(HistogramObserver({1000, 256, std::nullopt}), std::invalid_argument);  // not a power of two
  EXPECT_THROW(HistogramObserver({32, 256, std::nullopt}), std::invalid_argument);
  EXPECT_THROW(HistogramObserver({2048, -1, std::nullopt}), std::invalid_argument);
  HistogramObserver a({2048, 256, std::nullopt}), b({1024, 256, std::nullopt});
  EXPECT_THROW(a.merge(b), std::invalid_argument);
  EXPECT_THROW(a.observe(std::vector<float>{1.0f}, 0), std::invalid_argument);
}

TEST(PerChannelHistogram, RowBatchesMergeIntoTheWhole) {
  // a [rows, 3, 5] tensor observed along axis 1, in two batches of rows
  const std::size_t shape[] = {40, 3, 5};
  const auto layout = ChannelLayout::along(shape, 1);
  EXPECT_EQ(layout.outer, 40u);
  EXPECT_EQ(layout.channels, 3u);
  EXPECT_EQ(layout.inner, 5u);
  const auto x = mixed(600, 10);
  PerChannel<HistogramObserver> whole(layout, HistogramObserver()), a(layout, HistogramObserver()),
      b(layout, HistogramObserver());
  whole.observe(x);
  a.observe(std::span<const float>(x).first(15 * 15));
  b.observe(std::span<const float>(x).subspan(15 * 15));
  a.merge(b);
  EXPECT_EQ(a, whole);
  // channel 2 holds elements (o * 3 + 2) * 5 + i
  HistogramObserver ref;
  for (std::size_t o = 0; o < 40; ++o) ref.observe(std::span<const float>(x).subspan((o * 3 + 2) * 5, 5));
  EXPECT_EQ(whole[2], ref);
  EXPECT_THROW(whole.observe(std::span<const float>(x).first(7)), std::invalid_argument);
  EXPECT_THROW(ChannelLayout::along(shape, 3), std::invalid_argument);
}

}  // namespace
}  // namespace fp8q::calib
