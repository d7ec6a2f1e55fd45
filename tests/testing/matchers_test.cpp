// fp8q/testing/matchers.hpp: BitEqual and WithinUlps accept what they should and fail on the
// prepared pairs (1 ULP, NaN payloads, signed zeros, a NaN against a number, sizes), with the
// indices and the bits in hex in the explanation.
#include "fp8q/testing/matchers.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace fp8q::testing {
namespace {

using ::testing::ExplainMatchResult;
using ::testing::HasSubstr;
using ::testing::Matches;
using ::testing::Not;

float f32(std::uint32_t bits) { return std::bit_cast<float>(bits); }

// The explanation a failing match prints.
template <class M, class T>
std::string explain(const M& matcher, const T& actual) {
  ::testing::StringMatchResultListener listener;
  EXPECT_FALSE(ExplainMatchResult(matcher, actual, &listener));
  return listener.str();
}

TEST(BitEqual, AcceptsEqualScalarsVectorsSpansAndArrays) {
  const std::vector<float> v = {1.0f, -0.0f, std::nanf(""), 448.0f};
  EXPECT_THAT(v, BitEqual(v));
  EXPECT_THAT(std::span<const float>(v), BitEqual(v));
  EXPECT_THAT(0.1, BitEqual(0.1));
  EXPECT_THAT((std::array<double, 2>{0.5, -2.0}), BitEqual(std::vector<double>{0.5, -2.0}));
  EXPECT_TRUE(Matches(WithinUlps(v, 0))(v));
}

TEST(BitEqual, FailsOnOneUlpAndNamesTheIndexAndTheBits) {
  const std::vector<float> want = {1.0f, 2.0f, 3.0f};
  std::vector<float> got = want;
  got[2] = f32(0x40400001);  // 3.0f plus one step
  EXPECT_FALSE(Matches(BitEqual(want))(got));
  const std::string why = explain(BitEqual(want), got);
  EXPECT_THAT(why, HasSubstr("1 of 3 elements"));
  EXPECT_THAT(why, HasSubstr("[2] 0x40400001 (3.0000002384185791) vs expected 0x40400000 (3): 1 ULP"));
  EXPECT_TRUE(Matches(WithinUlps(want, 1))(got));
  EXPECT_THAT(got, Not(WithinUlps(want, 0)));
}

TEST(BitEqual, FailsOnSignedZerosAndNanPayloads) {
  EXPECT_FALSE(Matches(BitEqual(0.0f))(-0.0f));
  EXPECT_THAT(explain(BitEqual(0.0f), -0.0f), HasSubstr("0x80000000 (-0) vs expected 0x00000000 (0): 0 ULP (signed zero)"));
  const float quiet = f32(0x7FC00000), payload = f32(0x7FC00001);
  EXPECT_FALSE(Matches(BitEqual(quiet))(payload));
  EXPECT_THAT(explain(BitEqual(quiet), payload), HasSubstr("0x7FC00001 (nan) vs expected 0x7FC00000 (nan): 0 ULP (NaN payload differs)"));
  // both are 0 ULP apart: within any tolerance of at least one ULP
  EXPECT_TRUE(Matches(WithinUlps(quiet, 1))(payload));
  EXPECT_TRUE(Matches(WithinUlps(0.0f, 1))(-0.0f));
}

TEST(WithinUlps, ANanAgainstANumberIsBeyondEveryTolerance) {
  EXPECT_FALSE(Matches(WithinUlps(1.0f, 1000000))(std::nanf("")));
  EXPECT_THAT(explain(WithinUlps(1.0f, 5), std::nanf("")), HasSubstr("NaN against a number"));
  EXPECT_THAT(explain(WithinUlps(1.0f, 5), std::nanf("")), HasSubstr("max inf ULP"));
}

TEST(WithinUlps, CountsStepsOnTheOrderedLine) {
  // -denorm_min to +denorm_min is two steps, across both zeros
  EXPECT_TRUE(Matches(WithinUlps(f32(0x00000001), 2))(f32(0x80000001)));
  EXPECT_FALSE(Matches(WithinUlps(f32(0x00000001), 1))(f32(0x80000001)));
  // FLT_MAX to +Inf is one step
  EXPECT_TRUE(Matches(WithinUlps(f32(0x7F7FFFFF), 1))(INFINITY));
}

TEST(CodeMatchers, Fp8CodesWithTheirFormat) {
  const std::vector<std::uint8_t> want = {0x38, 0x7E, 0x00};  // e4m3fn 1, 448, +0
  const std::vector<std::uint8_t> got = {0x38, 0x7D, 0x80};   // 1, 416, -0
  EXPECT_THAT(want, BitEqual(want, kE4M3FN));
  EXPECT_FALSE(Matches(BitEqual(want, kE4M3FN))(got));
  EXPECT_TRUE(Matches(WithinUlps(want, 1, kE4M3FN))(got));
  const std::string why = explain(BitEqual(want, kE4M3FN), got);
  EXPECT_THAT(why, HasSubstr("[1] 0x7D (416) vs expected 0x7E (448): 1 ULP"));
  EXPECT_THAT(why, HasSubstr("[2] 0x80 (-0) vs expected 0x00 (0): 0 ULP (signed zero)"));
  const std::vector<std::uint16_t> bf16 = {0x3F80}, bf16_next = {0x3F81};
  EXPECT_THAT(bf16_next, WithinUlps(bf16, 1, kBF16));
  EXPECT_THAT(bf16_next, Not(BitEqual(bf16, kBF16)));
  EXPECT_THROW(BitEqual(bf16, kE4M3FN), std::invalid_argument);  // 2-byte codes are no e4m3fn
}

TEST(BitEqual, SizesThatDifferFail) {
  const std::vector<float> want = {1.0f, 2.0f};
  EXPECT_THAT(explain(BitEqual(want), std::vector<float>{1.0f}), HasSubstr("which has 1 elements, not 2"));
  EXPECT_THAT(explain(BitEqual(want), std::vector<double>{1.0, 2.0}), HasSubstr("elements are 8 bytes, not 4"));
}

TEST(BitEqual, DescribesItself) {
  EXPECT_EQ(::testing::DescribeMatcher<std::vector<float>>(BitEqual(std::vector<float>(3))),
            "is bit-equal to 3 expected f32 element(s)");
  EXPECT_EQ(::testing::DescribeMatcher<float>(WithinUlps(1.0f, 2), true), "is not within 2 ULP of 1 expected f32 element(s)");
}

}  // namespace
}  // namespace fp8q::testing
