// The published NVIDIA tensor-core models (kernels/fit.hpp published_models; docs/validation.md,
// "Published models"): each is a point of fit's grid, and fit recovers each from vectors it
// generates with that model, FP8 and FP16/BF16 operands, C as accumulator input and as epilogue
// term; fit names the devices of the models it finds, and only for the operands published.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <string>

#include "fp8q/kernels/fit.hpp"
#include "fp8q/kernels/vectors.hpp"

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

}  // namespace
}  // namespace fp8q
