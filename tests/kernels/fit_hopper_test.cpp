// fit on the real H100 vectors (tests/data/hopper-fp8-mma, read with checkpoint/mma_text.hpp):
// Hopper's model fused:32:13:rtz is consistent with all 5000 samples per format, and so are
// only models that K = 32, C = 0 samples cannot tell from it (steps of 64 hold one K = 32
// instruction's products as steps of 32 do; promotion every 128 changes nothing below K = 128),
// each of which a generated input of larger K separates.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "fp8q/checkpoint/mma_text.hpp"
#include "fp8q/kernels/fit.hpp"
#include "fp8q/numerics/convert.hpp"

namespace fp8q {
namespace {

using M = AccumulationModel;

std::filesystem::path data_dir() {
  if (const char* env = std::getenv("FP8Q_HOPPER_DATA")) return env;
  return FP8Q_HOPPER_DATA_DIR;
}

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + p.string());
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

DotSamples load(const std::string& tag, FormatId format) {
  const auto dir = data_dir();
  const auto a = dir / ("a_H100_" + tag + ".txt"), b = dir / ("b_H100_" + tag + ".txt"), d = dir / ("d_H100_" + tag + ".txt");
  const checkpoint::MmaText t = checkpoint::parse_mma_text(slurp(a), slurp(b), slurp(d), a.string(), b.string(), d.string());
  DotSamples s{.format_a = format, .format_b = format, .m = t.samples(), .n = t.samples(), .k = t.k, .d = t.d, .diagonal = true};
  for (std::uint32_t u : t.a) s.a.push_back(float_of(u));
  for (std::uint32_t u : t.b) s.bt.push_back(float_of(u));
  return s;
}

class FitHopper : public ::testing::TestWithParam<FormatId> {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(data_dir() / "d_H100_E4M3.txt"))
      GTEST_SKIP() << "H100 vectors not found in " << data_dir() << " (set FP8Q_HOPPER_DATA to their folder)";
  }
};

TEST_P(FitHopper, FindsHoppersModelAndOnlyItsEquivalents) {
  const FormatId f = GetParam();
  const DotSamples s = load(f == FormatId::kE4M3FN ? "E4M3" : "E5M2", f);
  ASSERT_EQ(s.count(), 5000u);
  const FitReport r = fit(s, {.nearest = 5, .separation_tries = 200});
  ASSERT_FALSE(r.consistent.empty());
  EXPECT_EQ(r.consistent[0], Candidate{M::hopper()});
  std::string names;
  for (const Candidate& c : r.consistent) {
    names += candidate_name(c) + "; ";
    // the survivors differ from Hopper's model only where K = 32 cannot show it
    EXPECT_EQ(c.model.kind, AccumKind::kFused);
    EXPECT_EQ(c.model.align_bits, 13);
    EXPECT_EQ(c.model.result_bits, 13);
    EXPECT_EQ(c.model.rounding, Rounding::kTowardZero);
    EXPECT_EQ(c.model.group, 1);
    EXPECT_GE(c.model.block, 32);
  }
  RecordProperty("consistent", names);
  std::printf("%s: consistent %s\n", std::string(format_of(f).name).c_str(), names.c_str());
  ASSERT_EQ(r.separations.size(), r.consistent.size() - 1);
  for (const Separation& sep : r.separations) {
    ASSERT_TRUE(sep.k.has_value()) << candidate_name(sep.other);
    EXPECT_GT(*sep.k, 32u);
  }
  // the nearest misses fail many samples (the data separates them), and say where
  ASSERT_EQ(r.nearest.size(), 5u);
  for (const Miss& m : r.nearest) {
    EXPECT_GT(m.misses, 0u) << candidate_name(m.candidate);
    EXPECT_EQ(s.d[m.first.sample], m.first.expected);
    EXPECT_EQ(predict(m.candidate, s, m.first.sample), m.first.got);
    std::printf("  nearest miss %s: %zu of 5000\n", candidate_name(m.candidate).c_str(), m.misses);
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, FitHopper, ::testing::Values(FormatId::kE4M3FN, FormatId::kE5M2),
                         [](const auto& info) { return std::string(format_of(info.param).name); });

}  // namespace
}  // namespace fp8q
