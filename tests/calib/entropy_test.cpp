// The entropy calibrator: its divergence against a direct implementation of the definition
// (bins assigned to grid cells by converting their centres with fp8q's conversion), its choice
// against every candidate, and its documented behaviour on uniform and heavy-tailed data.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>

#include "fp8q/calib/calibrators.hpp"
#include "fp8q/numerics/convert.hpp"
#include "samples.hpp"

namespace fp8q::calib {
namespace {

// KL(P || Q) as documented, straight from the definition, O(bins) per threshold.
double reference_kl(const HistogramObserver& h, float threshold, const Format& f) {
  const float s = scale_from_amax(threshold, f);
  const auto& c = h.counts();
  std::size_t i = 0;
  while (i < c.size() && h.bin_edge(static_cast<int>(i)) < threshold) ++i;
  i = std::max<std::size_t>(i, 1);
  std::vector<double> p(c.begin(), c.begin() + static_cast<std::ptrdiff_t>(i));
  double o = 0, n = 0;
  for (std::size_t k = 0; k < c.size(); ++k) n += static_cast<double>(c[k]), o += k >= i ? static_cast<double>(c[k]) : 0;
  p[i - 1] += o;
  // cell of each bin: the code its centre converts to (saturating)
  ConvertOptions co;
  co.scale = s;
  std::map<std::uint64_t, std::vector<std::size_t>> cells;
  for (std::size_t k = 0; k < i; ++k) {
    const auto centre = static_cast<float>((h.bin_edge(static_cast<int>(k)) + h.bin_edge(static_cast<int>(k) + 1)) / 2);
    cells[convert_one(bits_of(centre), kF32, f, co).code].push_back(k);
  }
  double kl = 0;
  for (const auto& [code, bins] : cells) {
    double mass = 0, width = 0;
    for (std::size_t k : bins) {
      mass += static_cast<double>(c[k]);  // Q: the original counts
      if (p[k] > 0) width += h.bin_edge(static_cast<int>(k) + 1) - h.bin_edge(static_cast<int>(k));
    }
    for (std::size_t k : bins) {
      if (p[k] == 0) continue;
      const double q = mass * (h.bin_edge(static_cast<int>(k) + 1) - h.bin_edge(static_cast<int>(k))) / width / (n - o);
      if (q == 0) return std::numeric_limits<double>::infinity();
      kl += p[k] / n * std::log(p[k] / n / q);
    }
  }
  return kl;
}

TEST(Entropy, DivergenceMatchesTheDefinition) {
  HistogramOptions o;
  o.bins = 512;
  HistogramObserver h(o);
  h.observe(testing::laplace(40000, 1.0, 51));
  for (const Format* f : {&kE4M3FN, &kE5M2, &kE4M3})
    for (double frac : {1.0, 0.7, 0.3, 0.1, 0.01}) {
      const auto t = frac == 1.0 ? h.amax() : static_cast<float>(h.bin_edge(h.bin_of(static_cast<float>(h.amax() * frac))));
      const double want = reference_kl(h, t, *f), got = entropy_divergence(h, t, *f);
      EXPECT_NEAR(got, want, 1e-9 + 1e-9 * std::fabs(want)) << f->name << " threshold " << t;
    }
}

TEST(Entropy, ChoosesTheSmallestDivergence) {
  HistogramObserver h;
  h.observe(testing::student_t(50000, 2.0, 1.0, 52));
  for (const Format* f : {&kE4M3FN, &kE5M2}) {
    const float a = entropy_amax(h, *f);
    const double best = entropy_divergence(h, a, *f);
    for (int i = h.bin_of_value(h.amax() / 1048576.0); i <= h.bin_of(h.amax()); ++i) {
      std::uint64_t kept = 0;  // candidates keep at least half of the samples below them
      for (int k = 0; k < i; ++k) kept += h.counts()[static_cast<std::size_t>(k)];
      if (2 * kept < h.count()) continue;
      const auto t = static_cast<float>(h.bin_edge(i));
      if (t > 0 && t < h.amax()) EXPECT_GE(entropy_divergence(h, t, *f), best) << f->name << " edge " << i;
    }
    EXPECT_GE(entropy_divergence(h, h.amax(), *f), best);
  }
}

// The chosen threshold keeps at least half of the samples below it, also when the mass sits in
// the lowest bins (where a search that skipped bin 1 ran past the end of the counts).
TEST(Entropy, KeepsAtLeastHalfOfTheSamples) {
  const std::vector<std::vector<float>> cases = {
      {1.0f + 0x1p-7f, 1.0f + 0x1p-6f + 0x1p-7f, 1.5f},
      [] {
        std::vector<float> v(100, 0x1p-31f * 1.02f);
        v.push_back(1.0f);
        return v;
      }(),
      [] {
        std::vector<float> v(1000, 1e-20f);
        for (int i = 0; i < 999; ++i) v.push_back(1.0f + static_cast<float>(i) / 999.0f);
        return v;
      }(),
      testing::student_t(20000, 2.0, 1.0, 55),
  };
  for (std::size_t c = 0; c < cases.size(); ++c)
    for (const Format* f : {&kE4M3FN, &kE5M2, &kE2M1}) {
      HistogramObserver h;
      h.observe(cases[c]);
      const float t = entropy_amax(h, *f);
      std::size_t kept = 0;
      for (float v : cases[c]) kept += std::fabs(v) < t ? 1 : 0;
      EXPECT_TRUE(t == h.amax() || 2 * kept >= cases[c].size())
          << "case " << c << " " << f->name << ": threshold " << t << " keeps " << kept << " of " << cases[c].size();
    }
}

TEST(Entropy, UniformDataKeepsTheMax) {
  // every cell's density is flat, so Q == P up to sampling noise without clipping, and any
  // clipping costs more
  HistogramObserver h;
  h.observe(testing::uniform(200000, -3.0f, 3.0f, 53));
  for (const Format* f : {&kE4M3FN, &kE5M2}) {
    EXPECT_EQ(entropy_amax(h, *f), h.amax()) << f->name;
    EXPECT_LT(entropy_divergence(h, h.amax(), *f), 0.01);  // sampling noise only
  }
}

TEST(Entropy, ClipsRareOutliers) {
  auto x = testing::normal(200000, 1.0, 54);
  x[7] = 4000.0f, x[77] = -3000.0f;  // two samples far from everything else
  HistogramObserver h;
  h.observe(x);
  const float a = entropy_amax(h, kE4M3FN);
  EXPECT_LT(a, 100.0f);
  EXPECT_GT(a, 1.0f);
}

TEST(Entropy, EmptyAndInvalid) {
  HistogramObserver h;
  EXPECT_EQ(entropy_amax(h, kE4M3FN), 0.0f);
  EXPECT_THROW(entropy_amax(h, kE8M0), std::invalid_argument);
}

}  // namespace
}  // namespace fp8q::calib
