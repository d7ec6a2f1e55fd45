// The vector generator and fit (kernels/vectors.hpp, fit.hpp): the generator is deterministic
// and its patterns do what they say; fit recovers every model kind of its grid from vectors
// generated under that model, with C as accumulator input, as epilogue term, or absent, and
// whatever else survives agrees with the generator on a second, independently seeded set.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "fp8q/kernels/fit.hpp"
#include "fp8q/kernels/vectors.hpp"
#include "fp8q/numerics/convert.hpp"

namespace fp8q {
namespace {

using M = AccumulationModel;

TEST(Vectors, SameSeedSameVectors) {
  const VectorSpec spec{.format_a = FormatId::kE4M3FN, .format_b = FormatId::kE5M2, .cases = 20, .k = 40, .with_c = true, .seed = 7};
  const DotSamples x = generate_inputs(spec), y = generate_inputs(spec);
  auto bits = [](const std::vector<float>& v) {
    std::vector<std::uint32_t> u;
    for (float f : v) u.push_back(bits_of(f));
    return u;
  };
  EXPECT_EQ(bits(x.a), bits(y.a));
  EXPECT_EQ(bits(x.bt), bits(y.bt));
  EXPECT_EQ(bits(x.c), bits(y.c));
  VectorSpec other = spec;
  other.seed = 8;
  EXPECT_NE(bits(generate_inputs(other).a), bits(x.a));
  DotSamples z = x;
  compute_expected(z, {M::hopper()});
  EXPECT_NO_THROW(z.check());  // every value is one of its format's
}

// Case i follows pattern (i + seed) mod 10: the zeros case has only zero products, the
// specials case a NaN or infinite product, the subnormal case subnormal operands.
TEST(Vectors, PatternsHaveTheirShape) {
  const VectorSpec spec{.format_a = FormatId::kE5M2, .format_b = FormatId::kE5M2, .cases = 30, .k = 64, .seed = 0};
  const DotSamples s = generate_inputs(spec);
  const Format& f = format_of(FormatId::kE5M2);
  int zero_cases = 0, special_cases = 0, subnormal_cases = 0;
  for (std::size_t i = 0; i < s.m; ++i) {
    bool all_zero = true, special = false, subnormal = false;
    for (std::size_t k = 0; k < s.k; ++k) {
      const double p = static_cast<double>(s.a[i * s.k + k]) * s.bt[i * s.k + k];
      all_zero = all_zero && p == 0.0;
      special = special || !std::isfinite(p);
      subnormal = subnormal || (s.a[i * s.k + k] != 0.0f && std::fabs(s.a[i * s.k + k]) < f.min_normal());
    }
    const int pattern = static_cast<int>(i % kVectorPatterns);
    EXPECT_EQ(all_zero, pattern == 5) << "case " << i;
    zero_cases += all_zero, special_cases += special, subnormal_cases += subnormal && pattern == 4;
  }
  EXPECT_EQ(zero_cases, 3);
  EXPECT_GE(special_cases, 2);
  EXPECT_EQ(subnormal_cases, 3);
}

TEST(Vectors, BadSpecsNameTheField) {
  EXPECT_THROW(generate_inputs({.format_a = FormatId::kE8M0}), std::invalid_argument);
  EXPECT_THROW(generate_inputs({.format_b = FormatId::kF32}), std::invalid_argument);
  EXPECT_NO_THROW(generate_inputs({.format_b = FormatId::kBF16}));  // f16 and bf16 are operand formats
  EXPECT_THROW(generate_inputs({.cases = 0}), std::invalid_argument);
  EXPECT_THROW(generate_inputs({.k = 0}), std::invalid_argument);
}

TEST(FitSamples, CheckNamesTheField) {
  DotSamples s = generate_inputs({.cases = 2, .k = 4});
  compute_expected(s, {M::fp32_sequential()});
  auto message = [](const DotSamples& x) {
    try {
      x.check();
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  EXPECT_EQ(message(s), "(accepted)");
  DotSamples bad = s;
  bad.d.pop_back();
  EXPECT_EQ(message(bad), "samples: d has 3 values, expected 4");
  bad = s, bad.a[1] = 0.3f;
  EXPECT_NE(message(bad).find("a value 1 "), std::string::npos) << message(bad);
  bad = s, bad.c = {1.0f};
  EXPECT_EQ(message(bad), "samples: c has 1 values, expected 4");
}

TEST(ModelSpace, EveryCandidateIsValidAndNamed) {
  const auto space = model_space(true);
  EXPECT_EQ(space.size(), 2u * 3373u);
  for (const Candidate& c : space) {
    EXPECT_NO_THROW(validate(c.model));
    EXPECT_EQ(parse_model(model_name(c.model)), c.model);
  }
  EXPECT_EQ(model_space(false).size(), 3373u);
  EXPECT_NE(std::find(space.begin(), space.end(), Candidate{M::hopper()}), space.end());
}

// ---- recovery: vectors(model X) -> fit finds X ------------------------------------------------------
struct Recovery {
  M model;
  bool with_c;
  CRole role;
};

class FitRecovers : public ::testing::TestWithParam<Recovery> {};

TEST_P(FitRecovers, TheGeneratingModel) {
  const Candidate truth{GetParam().model, GetParam().role};
  DotSamples s = generate_inputs({.format_a = FormatId::kE4M3FN, .format_b = FormatId::kE5M2, .cases = 20, .k = 256,
                                  .with_c = GetParam().with_c, .seed = 3});
  compute_expected(s, truth);
  const FitReport r = fit(s, {.nearest = 3, .screen = 8, .separation_tries = 40});
  ASSERT_NE(std::find(r.consistent.begin(), r.consistent.end(), truth), r.consistent.end()) << candidate_name(truth);
  std::string names;
  for (const Candidate& c : r.consistent) names += candidate_name(c) + "; ";
  RecordProperty("consistent", names);
  EXPECT_LE(r.consistent.size(), 12u) << names;
  // the survivors agree with X on vectors of another seed: equivalent as far as these show
  DotSamples fresh = generate_inputs({.format_a = FormatId::kE4M3FN, .format_b = FormatId::kE5M2, .cases = 16, .k = 256,
                                      .with_c = GetParam().with_c, .seed = 11});
  compute_expected(fresh, truth);
  for (const Candidate& c : r.consistent)
    for (std::size_t i = 0; i < fresh.count(); ++i)
      ASSERT_TRUE(same_result(fresh.d[i], predict(c, fresh, i)))
          << candidate_name(c) << " survived fit for " << candidate_name(truth) << " but differs on fresh sample " << i;
  ASSERT_EQ(r.nearest.size(), 3u);
  for (const Miss& m : r.nearest) {
    EXPECT_GT(m.misses, 0u);
    EXPECT_EQ(predict(m.candidate, s, m.first.sample), m.first.got);
    EXPECT_EQ(s.d[m.first.sample], m.first.expected);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Models, FitRecovers,
    ::testing::Values(Recovery{M::fp32_sequential(), false, CRole::kAccumulator},
                      Recovery{M::exact_block(32), false, CRole::kAccumulator},
                      Recovery{M::systolic(128), true, CRole::kAccumulator},
                      Recovery{M::systolic(16), true, CRole::kEpilogue},
                      Recovery{M::hopper(), false, CRole::kAccumulator},
                      Recovery{M::hopper(), true, CRole::kAccumulator},
                      Recovery{M::fused(32, 13, Rounding::kTowardZero, 128), true, CRole::kEpilogue},
                      Recovery{M::fused_widths(16, 26, 23, Rounding::kNearestEven), true, CRole::kAccumulator},
                      Recovery{M::fused_widths(8, 12, 10, Rounding::kTowardZero, 4), false, CRole::kAccumulator},
                      Recovery{M::fused_widths(64, 17, 16, Rounding::kNearestEven, 2, 128), true, CRole::kAccumulator}),
    [](const auto& info) {
      std::string n = model_name(info.param.model) + (info.param.with_c ? (info.param.role == CRole::kEpilogue ? "_c_epilogue" : "_c_accumulator") : "");
      for (char& ch : n)
        if (ch == ':') ch = '_';
      return n;
    });

// Two models that K = 32 samples cannot tell apart (steps of 32 and 64) are separated by a
// generated input of K = 64; two that no input of the tried sizes separates say so.
TEST(FitSeparates, StepsOf32And64) {
  DotSamples like = generate_inputs({.cases = 1, .k = 32});
  const Separation sep = separate({M::hopper()}, {M::fused(64, 13, Rounding::kTowardZero)}, like, 200, 1);
  ASSERT_TRUE(sep.k.has_value());
  EXPECT_GT(*sep.k, 32u);
  DotSamples again = generate_inputs({.cases = 1, .k = *sep.k, .seed = sep.seed});
  EXPECT_EQ(predict({M::hopper()}, again, 0), sep.first_gives);
  EXPECT_EQ(predict({M::fused(64, 13, Rounding::kTowardZero)}, again, 0), sep.other_gives);
  EXPECT_NE(sep.first_gives, sep.other_gives);
  // without C, fp32_sequential and exact_block:2 agree on every K <= 2 (one rounding of p0 + p1
  // either way): two tries (K = 1, 2) find nothing, and say so
  DotSamples one = generate_inputs({.cases = 1, .k = 1});
  const Separation none = separate({M::fp32_sequential()}, {M::exact_block(2)}, one, 2, 5);
  EXPECT_FALSE(none.k.has_value());
  EXPECT_EQ(none.tries, 2u);
}

}  // namespace
}  // namespace fp8q
