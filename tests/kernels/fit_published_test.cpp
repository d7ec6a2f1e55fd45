// The published NVIDIA tensor-core models (kernels/fit.hpp published_models; docs/validation.md,
// "Published models"): each is a point of fit's grid, and fit recovers each from vectors it
// generates with that model, FP8 and FP16/BF16 operands, C as accumulator input and as epilogue
// term; fit names the devices of the models it finds, and only for the operands published; and
// each real set of tests/data/published-tc (400 samples with C) gives its device's model first.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "fp8q/checkpoint/mma_text.hpp"
#include "fp8q/kernels/fit.hpp"
#include "fp8q/kernels/vectors.hpp"
#include "fp8q/numerics/convert.hpp"

namespace fp8q {
namespace {

Candidate candidate_of(const PublishedModel& p, CRole role) {
  const auto m = parse_model(p.model);
  EXPECT_TRUE(m.has_value()) << p.model;
  return {m.value_or(AccumulationModel{}), role};
}

TEST(PublishedModels, AreInTheGrid) {
  const std::vector<Candidate> space = model_space(true);
  ASSERT_EQ(published_models().size(), 9u);
  for (const PublishedModel& p : published_models())
    for (CRole role : {CRole::kAccumulator, CRole::kEpilogue})
      EXPECT_NE(std::find(space.begin(), space.end(), candidate_of(p, role)), space.end()) << p.model;
}

TEST(PublishedModels, NamedOnlyForTheirOperandsAndRole) {
  const Candidate hopper_fp8{*parse_model("fused:32:13:rtz")};
  ASSERT_EQ(published_as(hopper_fp8, FormatId::kE4M3FN, FormatId::kE5M2).size(), 1u);
  EXPECT_STREQ(published_as(hopper_fp8, FormatId::kE4M3FN, FormatId::kE5M2)[0].devices, "H100, H200");
  EXPECT_TRUE(published_as(hopper_fp8, FormatId::kF16, FormatId::kF16).empty());
  EXPECT_TRUE(published_as(hopper_fp8, FormatId::kE3M2, FormatId::kE3M2).empty());
  EXPECT_TRUE(published_as({hopper_fp8.model, CRole::kEpilogue}, FormatId::kE4M3FN, FormatId::kE4M3FN).empty());
  const Candidate hopper_fp16{*parse_model("fused:16:align25:result23:rtz")};
  EXPECT_EQ(published_as(hopper_fp16, FormatId::kBF16, FormatId::kBF16).size(), 2u);  // H100/H200, B200
  EXPECT_TRUE(published_as(hopper_fp16, FormatId::kF16, FormatId::kBF16).empty());
  const Candidate volta{*parse_model("fused:4:23:rtz")};
  EXPECT_EQ(published_as(volta, FormatId::kF16, FormatId::kF16).size(), 1u);
  EXPECT_TRUE(published_as(volta, FormatId::kBF16, FormatId::kBF16).empty());  // V100 has no bf16
}

struct Case {
  std::size_t model = 0;
  FormatId format = FormatId::kE4M3FN;
  CRole role = CRole::kAccumulator;
};

class FitPublished : public ::testing::TestWithParam<Case> {};

// Two steps per dot product (K = 2n), so the carried C and the step boundary both show.
TEST_P(FitPublished, RecoversTheModelFromItsVectors) {
  const Case t = GetParam();
  const PublishedModel& p = published_models()[t.model];
  const Candidate truth = candidate_of(p, t.role);
  DotSamples s = generate_inputs({.format_a = t.format, .format_b = t.format, .cases = 24,
                                  .k = 2 * static_cast<std::size_t>(truth.model.block), .with_c = true, .seed = 11});
  compute_expected(s, truth);
  const FitReport r = fit(s, {.nearest = 1, .separation_tries = 0});
  ASSERT_NE(std::find(r.consistent.begin(), r.consistent.end(), truth), r.consistent.end())
      << candidate_name(truth) << " on " << format_of(t.format).name;
  // what else survives differs from the truth nowhere on a second, independent set
  DotSamples second = generate_inputs({.format_a = t.format, .format_b = t.format, .cases = 24,
                                       .k = 2 * static_cast<std::size_t>(truth.model.block), .with_c = true, .seed = 99});
  for (std::size_t i = 0; i < second.count(); ++i) {
    const std::uint32_t want = predict(truth, second, i);
    for (const Candidate& c : r.consistent)
      if (c.model.kind == AccumKind::kFused && c.model.block == truth.model.block && c.c_role == truth.c_role &&
          c.model.rounding == truth.model.rounding && c.model.group == 1 && c.model.promote == 0)
        EXPECT_TRUE(same_result(want, predict(c, second, i))) << candidate_name(c) << " vs " << candidate_name(truth);
  }
  const bool named = t.role == CRole::kAccumulator && (p.fp8 || p.bf16 || t.format == FormatId::kF16);
  EXPECT_EQ(!published_as(truth, t.format, t.format).empty(), named);
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (std::size_t i = 0; i < published_models().size(); ++i) {
    const PublishedModel& p = published_models()[i];
    const std::vector<FormatId> formats = p.fp8 ? std::vector{FormatId::kE4M3FN, FormatId::kE5M2}
                                                : std::vector{FormatId::kF16, FormatId::kBF16};
    for (FormatId f : formats)
      for (CRole role : {CRole::kAccumulator, CRole::kEpilogue}) out.push_back({i, f, role});
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Published, FitPublished, ::testing::ValuesIn(cases()), [](const auto& info) {
  const Case& c = info.param;
  std::string name = std::to_string(c.model) + "_" + std::string(published_models()[c.model].model) + "_" + std::string(format_of(c.format).name) +
                     (c.role == CRole::kEpilogue ? "_epilogue" : "_accumulator");
  std::replace_if(name.begin(), name.end(), [](char ch) { return !std::isalnum(static_cast<unsigned char>(ch)); }, '_');
  return name;
});

struct RealSet {
  const char* device;  // file names: a_DEVICE_TAG.txt, b_DEVICE_TAG.txt, c_DEVICE_fp32.txt, d_DEVICE_fp32.txt
  const char* tag;
  FormatId format;
  const char* model;   // the published model, which fit must list first
  std::size_t class_size;
};

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + p.string());
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

class FitPublishedData : public ::testing::TestWithParam<RealSet> {};

TEST_P(FitPublishedData, GivesTheDevicesPublishedModelFirst) {
  const RealSet& t = GetParam();
  const std::filesystem::path dir = FP8Q_PUBLISHED_TC_DIR;
  const std::string dev = t.device, tag = t.tag;
  const auto a = dir / ("a_" + dev + "_" + tag + ".txt"), b = dir / ("b_" + dev + "_" + tag + ".txt"),
             c = dir / ("c_" + dev + "_fp32.txt"), d = dir / ("d_" + dev + "_fp32.txt");
  const checkpoint::MmaText m = checkpoint::parse_mma_text(slurp(a), slurp(b), slurp(d), a.string(), b.string(),
                                                           d.string(), slurp(c), c.string());
  DotSamples s{.format_a = t.format, .format_b = t.format, .m = m.samples(), .n = m.samples(), .k = m.k, .d = m.d,
               .diagonal = true};
  for (std::uint32_t u : m.a) s.a.push_back(float_of(u));
  for (std::uint32_t u : m.b) s.bt.push_back(float_of(u));
  for (std::uint32_t u : m.c) s.c.push_back(float_of(u));
  ASSERT_EQ(s.count(), 400u);
  const FitReport r = fit(s, {.nearest = 1, .separation_tries = 0});
  ASSERT_EQ(r.consistent.size(), t.class_size);
  EXPECT_EQ(r.consistent[0], (Candidate{*parse_model(t.model), CRole::kAccumulator}));
  const std::vector<PublishedModel> named = published_as(r.consistent[0], t.format, t.format);
  EXPECT_TRUE(std::any_of(named.begin(), named.end(),
                          [&](const PublishedModel& p) { return std::string(p.devices).find(dev) != std::string::npos; }));
  // the rest of the class differs only in a step size the set's K cannot show (n >= K)
  for (const Candidate& other : r.consistent) {
    AccumulationModel same = other.model;
    same.block = r.consistent[0].model.block;
    EXPECT_EQ(same, r.consistent[0].model) << candidate_name(other);
    EXPECT_EQ(other.c_role, CRole::kAccumulator);
    EXPECT_GE(other.model.block, std::min(r.consistent[0].model.block, static_cast<int>(s.k))) << candidate_name(other);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Sets, FitPublishedData,
    ::testing::Values(RealSet{"V100", "fp16", FormatId::kF16, "fused:4:23:rtz", 5},
                      RealSet{"A100", "bf16", FormatId::kBF16, "fused:8:align24:result23:rtz", 4},
                      RealSet{"Ada", "E4M3", FormatId::kE4M3FN, "fused:16:13:rtz", 1},
                      RealSet{"H100", "fp16", FormatId::kF16, "fused:16:align25:result23:rtz", 3},
                      RealSet{"B200", "bf16", FormatId::kBF16, "fused:16:align25:result23:rtz", 3}),
    [](const auto& info) { return std::string(info.param.device) + "_" + info.param.tag; });

}  // namespace
}  // namespace fp8q
