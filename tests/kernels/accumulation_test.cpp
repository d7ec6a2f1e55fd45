// Tests of the accumulation models (numerics/accumulation.hpp): names, hand-worked cases that
// separate the models, special values, FP-environment independence, and random FP8 inputs
// against the independent implementation in model_oracle.hpp.
#include "fp8q/numerics/accumulation.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "fp8q/numerics/arith.hpp"
#include "fp8q/numerics/convert.hpp"
#include "fp8q/numerics/format.hpp"
#include "model_oracle.hpp"
#include "hostile_fp_env.hpp"

namespace fp8q {
namespace {

using M = AccumulationModel;

float dot(const M& m, const std::vector<float>& a, const std::vector<float>& b) {
  return reference_dot(m, {.a = a, .b = b});
}
std::uint32_t bits(float x) { return bits_of(x); }

// ---- names ---------------------------------------------------------------------------------------
TEST(ModelNames, RoundTrip) {
  for (const char* name : {"fp32_sequential", "exact_block:32", "systolic:128", "systolic:256", "fused:32:13:rtz",
                           "fused:32:13:rne", "fused:32:13:rtz:promote128", "trainium3_mx:wrapx", "trainium3_mx:1x32",
                           "trainium3_mx:1x32:rounded_partition_sum", "trainium3_mx:wrapx:round_then_add",
                           "fused:32:align24:result23:rtz", "fused:16:align14:result13:rne:group2",
                           "fused:32:13:rtz:group4:promote128", "fused:8:align60:result1:rtz:group8"}) {
    const auto m = parse_model(name);
    ASSERT_TRUE(m.has_value()) << name;
    EXPECT_EQ(model_name(*m), name);
  }
  EXPECT_EQ(*parse_model("fused:32:13:rtz"), M::hopper());
  EXPECT_EQ(*parse_model("exact_block:32"), M::exact_block(32));
  // equal widths have one name: fused:n:f; group 1 is not named
  EXPECT_EQ(*parse_model("fused:32:align13:result13:rtz:group1"), M::hopper());
  EXPECT_EQ(*parse_model("fused:32:align24:result23:rne:group4:promote128"),
            M::fused_widths(32, 24, 23, Rounding::kNearestEven, 4, 128));
  EXPECT_EQ(M::hopper().align_bits, 13);
  EXPECT_EQ(M::hopper().result_bits, 13);
  EXPECT_EQ(M::hopper().group, 1);
}

// parse_model(model_name(m)) == m over a grid of every fused parameter.
TEST(ModelNames, FusedRoundTripGrid) {
  int checked = 0;
  for (int n : {1, 4, 32, 4096})
    for (int align : {1, 13, 24, 60})
      for (int result : {1, 13, 23})
        for (Rounding r : {Rounding::kTowardZero, Rounding::kNearestEven})
          for (int group : {1, 2, 4})
            for (int promote : {0, 1, 4096}) {
              const M m = M::fused_widths(n, align, result, r, group, promote * n);
              if (group > n) {
                EXPECT_THROW(validate(m), std::invalid_argument);
                continue;
              }
              const auto back = parse_model(model_name(m));
              ASSERT_TRUE(back.has_value()) << model_name(m);
              EXPECT_EQ(*back, m) << model_name(m);
              ++checked;
            }
  EXPECT_EQ(checked, 4 * 4 * 3 * 2 * 3 * 3 - 2 * 4 * 3 * 2 * 3);  // less n = 1 with groups of 2 and 4
}

// validate() names the field that is out of range.
TEST(ModelNames, ValidateNamesTheField) {
  auto message = [](const M& m) {
    try {
      validate(m);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  EXPECT_NE(message(M::fused_widths(32, 0, 13, Rounding::kTowardZero)).find("align_bits"), std::string::npos);
  EXPECT_NE(message(M::fused_widths(32, 61, 13, Rounding::kTowardZero)).find("align_bits"), std::string::npos);
  EXPECT_NE(message(M::fused_widths(32, 13, 24, Rounding::kTowardZero)).find("result_bits"), std::string::npos);
  EXPECT_NE(message(M::fused_widths(32, 13, 13, Rounding::kTowardZero, 0)).find("group"), std::string::npos);
  EXPECT_NE(message(M::fused_widths(4, 13, 13, Rounding::kTowardZero, 8)).find("group"), std::string::npos);
  EXPECT_EQ(message(M::fused_widths(4, 60, 1, Rounding::kNearestEven, 4, 8)), "(accepted)");
}

TEST(ModelNames, RejectsMalformedAndOutOfRange) {
  for (const char* bad : {"", "fp32", "fp32_sequential:1", "exact_block", "exact_block:x", "systolic:12a",
                          "fused:32:13", "fused:32:13:up", "fused:32:13:rtz:every128", "trainium3_mx",
                          "trainium3_mx:wrap", "trainium3_mx:1x32:round_then_add:round_then_add",
                          "fused:32:align24:rtz", "fused:32:result23:align24:rtz", "fused:32:align24:result23",
                          "fused:32:13:rtz:promote128:group4", "fused:32:13:rtz:groupx", "fused:32:13:rtz:group4:x"})
    EXPECT_FALSE(parse_model(bad).has_value()) << bad;
  EXPECT_THROW(parse_model("exact_block:0"), std::invalid_argument);
  EXPECT_THROW(parse_model("fused:32:24:rtz"), std::invalid_argument);
  EXPECT_THROW(parse_model("fused:32:13:rup"), std::invalid_argument);  // a rounding, but not rtz/rne
  EXPECT_THROW(parse_model("fused:32:13:rtz:promote100"), std::invalid_argument);  // not a multiple of 32
  EXPECT_THROW(parse_model("fused:32:align24:result24:rtz"), std::invalid_argument);
  EXPECT_THROW(parse_model("fused:4:13:rtz:group8"), std::invalid_argument);  // a group longer than a step
}

// ---- hand-worked cases: each pair of models differs on one of these -------------------------------
// 1 + 2^-24 + 2^-24: sequential rounds each addition to even (1); an exact block sees 1 + 2^-23.
TEST(ModelCases, SequentialVsExactBlock) {
  const std::vector<float> a = {1.0f, 0x1p-24f, 0x1p-24f}, one = {1, 1, 1};
  EXPECT_EQ(dot(M::fp32_sequential(), a, one), 1.0f);
  EXPECT_EQ(dot(M::exact_block(32), a, one), 1.0f + 0x1p-23f);
  EXPECT_EQ(dot(M::exact_block(1), a, one), 1.0f);  // B = 1 is sequential
  // systolic:2: tiles {1, 2^-24} -> 1, {2^-24} -> 2^-24; 1 + 2^-24 -> 1
  EXPECT_EQ(dot(M::systolic(2), a, one), 1.0f);
  // systolic:1 tiles the other way round: {2^-24, 2^-24} first gives 2^-23, then 1 + 2^-23
  const std::vector<float> r = {0x1p-24f, 0x1p-24f, 1.0f};
  EXPECT_EQ(dot(M::systolic(2), r, one), 1.0f + 0x1p-23f);
  EXPECT_EQ(dot(M::fp32_sequential(), r, one), 1.0f + 0x1p-23f);
}

// fused:32:13: 1 + 2^-14 loses the 2^-14 (truncated to multiples of 2^-13 below 2^0);
// 1 + 2^-13 keeps it; rne rounds 1 + 3 * 2^-14 (truncated to 1 + 2^-13) as exact.
TEST(ModelCases, FusedTruncatesBelowTheLargestExponent) {
  const M hopper = M::hopper();
  EXPECT_EQ(dot(hopper, {1.0f, 0x1p-14f}, {1, 1}), 1.0f);
  EXPECT_EQ(dot(hopper, {1.0f, 0x1p-13f}, {1, 1}), 1.0f + 0x1p-13f);
  EXPECT_EQ(dot(M::fp32_sequential(), {1.0f, 0x1p-14f}, {1, 1}), 1.0f + 0x1p-14f);
  // the result keeps 13 mantissa bits: 1.5 + (1 + 3 * 2^-13) = 2.5 + 3 * 2^-13 has exponent 1, so
  // its last unit is 2^-12: rtz drops 2^-13; rne sees a tie and goes to the even 2.5 + 2^-11
  const std::vector<float> carry = {1.5f, 1.0f + 3 * 0x1p-13f}, one = {1, 1};
  EXPECT_EQ(dot(hopper, carry, one), 2.5f + 0x1p-12f);
  EXPECT_EQ(dot(M::fused(32, 13, Rounding::kNearestEven), carry, one), 2.5f + 0x1p-11f);
  // negative terms truncate toward zero: 1 - 2^-14 -> 1 - 0 = 1
  EXPECT_EQ(dot(hopper, {1.0f, -0x1p-14f}, {1, 1}), 1.0f);
  // the product's exponent is e_a + e_b, not renormalised: 1.5 * 1.5 = 2.25 has exponent 0,
  // so 2^-13 is kept (after -1 cancels the carry); with E = 1 it would be truncated
  EXPECT_EQ(dot(hopper, {1.5f, 0x1p-13f, -1.0f}, {1.5f, 1.0f, 1.0f}), 1.25f + 0x1p-13f);
}

// The carried C: after the first step of n, C joins the next step's alignment.
TEST(ModelCases, FusedCarriesCAcrossSteps) {
  // n = 2: step 1: 1 + 2^-13 -> 1 + 2^-13; step 2: C = 1 + 2^-13, plus 2^-13 + 2^-13 -> 1 + 3 * 2^-13
  EXPECT_EQ(dot(M::fused(2, 13, Rounding::kTowardZero), {1.0f, 0x1p-13f, 0x1p-13f, 0x1p-13f}, {1, 1, 1, 1}),
            1.0f + 3 * 0x1p-13f);
  // n = 1: C = 1, then each 2^-14 is lost against E = 0
  EXPECT_EQ(dot(M::fused(1, 13, Rounding::kTowardZero), {1.0f, 0x1p-14f, 0x1p-14f}, {1, 1, 1}), 1.0f);
  // n = 2: the small terms sum exactly in step 1 (E = -14), and C = 2^-13 survives 1 in step 2;
  // n = 4 puts all three in one step, where E = 0 truncates both 2^-14
  EXPECT_EQ(dot(M::fused(2, 13, Rounding::kTowardZero), {0x1p-14f, 0x1p-14f, 1.0f}, {1, 1, 1}), 1.0f + 0x1p-13f);
  EXPECT_EQ(dot(M::fused(4, 13, Rounding::kTowardZero), {0x1p-14f, 0x1p-14f, 1.0f}, {1, 1, 1}), 1.0f);
}

// The alignment width A and the result width R apart: with A = 16 the two 2^-14 survive the
// alignment that A = 13 truncates away; with R = 13 below A, rne sees the kept bits as a tie
// (1 + 2^-14: even, 1) or above one (1 + 1.5 * 2^-14: up).
TEST(ModelCases, FusedAlignmentAndResultWidths) {
  const std::vector<float> one = {1, 1, 1};
  EXPECT_EQ(dot(M::hopper(), {1.0f, 0x1p-14f, 0x1p-14f}, one), 1.0f);
  EXPECT_EQ(dot(M::fused_widths(32, 16, 13, Rounding::kTowardZero), {1.0f, 0x1p-14f, 0x1p-14f}, one), 1.0f + 0x1p-13f);
  EXPECT_EQ(dot(M::fused_widths(32, 16, 13, Rounding::kNearestEven), {1.0f, 0x1p-14f}, {1, 1}), 1.0f);
  EXPECT_EQ(dot(M::fused_widths(32, 16, 13, Rounding::kNearestEven), {1.0f, 0x1.8p-14f}, {1, 1}), 1.0f + 0x1p-13f);
  // R wider than A: the sum of truncated terms is kept whole
  EXPECT_EQ(dot(M::fused_widths(32, 13, 23, Rounding::kTowardZero), {1.5f, 1.5f, 0x1p-13f}, one), 3.0f + 0x1p-13f);
}

// Product groups: {1, -1} cancels inside its group, so the step's E comes from 2^-19 and the
// 2^-20 products survive; a group's exponent is that of its sum (3 = 1.5 + 1.5: 2^1), which
// moves the quantum to 2^-12.
TEST(ModelCases, FusedProductGroups) {
  const std::vector<float> one = {1, 1, 1, 1};
  EXPECT_EQ(bits(dot(M::hopper(), {1.0f, -1.0f, 0x1p-20f, 0x1p-20f}, one)), 0u);
  EXPECT_EQ(dot(M::fused_widths(32, 13, 13, Rounding::kTowardZero, 2), {1.0f, -1.0f, 0x1p-20f, 0x1p-20f}, one), 0x1p-19f);
  EXPECT_EQ(dot(M::fused_widths(4, 13, 20, Rounding::kTowardZero, 1), {1.5f, 1.5f, 0x1p-13f, 0.0f}, one), 3.0f + 0x1p-13f);
  EXPECT_EQ(dot(M::fused_widths(4, 13, 20, Rounding::kTowardZero, 2), {1.5f, 1.5f, 0x1p-13f, 0.0f}, one), 3.0f);
  // specials in a group decide the result; groups of -0 products with C = -0 are -0, one +0 is +0
  const M grouped = M::fused_widths(4, 13, 13, Rounding::kTowardZero, 2);
  EXPECT_TRUE(std::isnan(dot(grouped, {1.0f, NAN, 2.0f, 0.0f}, one)));
  const std::vector<float> negative = {-0.0f, -0.0f, -0.0f, -0.0f}, mixed = {-0.0f, -0.0f, 0.0f, -0.0f};
  EXPECT_EQ(bits(reference_dot(grouped, {.a = negative, .b = one, .c = -0.0f})), 0x80000000u);
  EXPECT_EQ(bits(reference_dot(grouped, {.a = mixed, .b = one, .c = -0.0f})), 0u);
}

// Subnormal operands take their format's emin as exponent, which raises E.
TEST(ModelCases, FusedSubnormalOperandExponent) {
  // e4m3fn 2^-9 is subnormal (emin -6): product 2^-9 * 2^-9 has model exponent -12, so
  // E = -12 and the 2^-30 product (from 2^-15 * 2^-15 as fp32 operands) is truncated away;
  // with fp32's emin both are normal and everything is exact.
  const std::vector<float> a = {0x1p-9f, 0x1p-9f}, b = {0x1p-9f, 0x1p-21f};
  const float exact = 0x1p-18f + 0x1p-30f;
  EXPECT_EQ(reference_dot(M::hopper(), {.a = a, .b = b}), exact);
  EXPECT_EQ(reference_dot(M::hopper(), {.a = a, .b = b, .emin_a = -6, .emin_b = -6}), 0x1p-18f);
}

TEST(ModelCases, FusedPromotion) {
  // 64 products of 2^-14 after a 1: without promotion they are all lost against E = 0; with
  // promote32 each block of 32 starts from 0 and is exact (32 * 2^-14 = 2^-9) before the fp32 add.
  std::vector<float> a(65, 0x1p-14f), one(65, 1.0f);
  a[0] = 1.0f;
  EXPECT_EQ(dot(M::hopper(), a, one), 1.0f);
  // block 1 (k < 32): each 2^-14 truncates to 0 against E = 0, so it is 1; blocks 2 and 3 hold
  // 32 and 1 products of 2^-14, exact: 1 + 2^-9 + 2^-14
  EXPECT_EQ(dot(M::fused(32, 13, Rounding::kTowardZero, 32), a, one), 1.0f + 0x1p-9f + 0x1p-14f);
}

TEST(ModelCases, Trainium3Layouts) {
  // K = 512, all products 0 except k = 1 (1.0) and k = 128 (2^-24) and k = 129 (2^-24).
  // wrapx: partition 0 holds k = 0, 128, 256, 384; partition 1 holds 1, 129, ...: order of
  // additions t: p0 gives 2^-24, p1 gives fp32(2^-24 + 1 + 2^-24) = 1 + 2^-23 (one rounding).
  // 1x32: partition 0 holds k = 0..3 (1.0), partition 32 holds 128..131 (2^-23 exact) -> 1 + 2^-23.
  std::vector<float> a(512, 0.0f), one(512, 1.0f);
  a[1] = 1.0f, a[128] = 0x1p-24f, a[129] = 0x1p-24f;
  EXPECT_EQ(dot(M::trainium3_mx(Trn3Layout::kWrapX), a, one), 1.0f + 0x1p-23f);
  EXPECT_EQ(dot(M::trainium3_mx(Trn3Layout::k1x32), a, one), 1.0f + 0x1p-23f);
  // A2 false (round the partition sum first): wrapx p1: fp32(1 + 2^-24) = 1 then 2^-24 + 1 -> 1.
  EXPECT_EQ(dot(M::trainium3_mx(Trn3Layout::kWrapX, {.single_rounding_add = false}), a, one), 1.0f);
  // A1 false: partition 32 in 1x32 adds 2^-24 + 2^-24 sequentially: still 2^-23 exact.
  EXPECT_EQ(dot(M::trainium3_mx(Trn3Layout::k1x32, {.exact_partition_sum = false}), a, one), 1.0f + 0x1p-23f);
  // sequential over k: 1 + 2^-24 -> 1, + 2^-24 -> 1
  EXPECT_EQ(dot(M::fp32_sequential(), a, one), 1.0f);
}

TEST(ModelCases, MxScalesMultiplyEachGroup) {
  std::vector<float> a(64, 1.0f), b(64, 1.0f);
  const std::vector<std::uint8_t> sa = {127 + 3, 127 - 2}, sb = {127, 127 + 1};
  // group 0: 32 * 2^3; group 1: 32 * 2^-1
  for (const M& m : {M::fp32_sequential(), M::exact_block(32), M::systolic(128), M::hopper(),
                     M::trainium3_mx(Trn3Layout::k1x32)})
    EXPECT_EQ(reference_dot(m, {.a = a, .b = b, .mx_scale_a = sa, .mx_scale_b = sb}), 256.0f + 16.0f) << model_name(m);
  const std::vector<std::uint8_t> nan_scale = {127, 0xFF};
  EXPECT_TRUE(std::isnan(reference_dot(M::exact_block(32), {.a = a, .b = b, .mx_scale_a = nan_scale})));
  const std::vector<std::uint8_t> short_scale = {127};
  EXPECT_THROW(reference_dot(M::exact_block(32), {.a = a, .b = b, .mx_scale_a = short_scale}), std::invalid_argument);
  EXPECT_THROW(reference_dot(M::exact_block(32), {.a = a, .b = std::span<const float>(b).first(3)}), std::invalid_argument);
}

// ---- special values --------------------------------------------------------------------------------
TEST(ModelSpecials, NanInfZeroOverflow) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const M all[] = {M::fp32_sequential(), M::exact_block(2), M::systolic(2), M::hopper(),
                   M::trainium3_mx(Trn3Layout::kWrapX)};
  for (const M& m : all) {
    SCOPED_TRACE(model_name(m));
    EXPECT_EQ(bits(dot(m, {1, nan, 2}, {1, 1, 1})), 0x7FC00000u);
    EXPECT_EQ(bits(dot(m, {1, -nan, 2}, {1, 1, 1})), 0x7FC00000u);       // canonical, sign dropped
    EXPECT_EQ(bits(dot(m, {inf, 1}, {0, 1})), 0x7FC00000u);              // Inf * 0
    EXPECT_EQ(bits(dot(m, {inf, 1, -inf}, {1, 1, 1})), 0x7FC00000u);     // Inf - Inf
    EXPECT_EQ(dot(m, {1, -inf, 2}, {1, 1, 1}), -inf);
    EXPECT_EQ(bits(dot(m, {-0.0f, -0.0f}, {1, 1})), 0u);                 // +0 start: never -0
    EXPECT_EQ(bits(dot(m, {}, {})), 0u);
    EXPECT_EQ(bits(dot(m, {1, -1}, {1, 1})), 0u);
  }
  const float big = 0x1p127f;
  EXPECT_EQ(dot(M::fp32_sequential(), {big, big}, {1.5f, 1.5f}), inf);  // rne overflow
  EXPECT_EQ(dot(M::exact_block(32), {big, big, -big}, {1.5f, 1.5f, -1.5f}), inf);  // exact 4.5 * 2^127 -> Inf
  // rtz overflow: the largest value with 13 mantissa bits
  EXPECT_EQ(dot(M::hopper(), {big, big}, {1.5f, 1.5f}), (2.0f - 0x1p-13f) * 0x1p127f);
  // exactness beyond fp32's range inside a block: 2^127 * 4 - 2^127 * 4 + 1 = 1
  EXPECT_EQ(dot(M::exact_block(32), {big, big, 1}, {4.0f, -4.0f, 1}), 1.0f);
  // subnormal results kept
  EXPECT_EQ(dot(M::fp32_sequential(), {0x1p-75f, 0x1p-75f}, {0x1p-74f, 0x1p-74f}), 0x1p-148f);
}

TEST(ModelSpecials, F32Arithmetic) {
  EXPECT_EQ(add_f32_rne(1.0f, 0x1p-24f), 1.0f);
  EXPECT_EQ(add_f32_rne(1.0f, 0x1.8p-24f), 1.0f + 0x1p-23f);
  EXPECT_EQ(bits(add_f32_rne(-0.0f, -0.0f)), 0x80000000u);
  EXPECT_EQ(bits(add_f32_rne(-0.0f, 0.0f)), 0u);
  EXPECT_EQ(bits(mul_f32_rne(-0.0f, 5.0f)), 0x80000000u);
  EXPECT_EQ(mul_f32_rne(0x1p-100f, 0x1p-49f), 0x1p-149f);
  EXPECT_EQ(mul_f32_rne(0x1p-100f, 0x1p-50f), 0.0f);  // tie 2^-150 to even 0
  EXPECT_EQ(mul_f32_rne(0x1p100f, 0x1p100f), std::numeric_limits<float>::infinity());
  std::mt19937 rng(7);
  for (int i = 0; i < 20000; ++i) {  // against the host (default MXCSR in tests)
    const float x = float_of(rng()), y = float_of(rng());
    const float s = x + y, p = x * y;
    EXPECT_EQ(bits(add_f32_rne(x, y)), std::isnan(s) ? 0x7FC00000u : bits(s)) << x << " " << y;
    EXPECT_EQ(bits(mul_f32_rne(x, y)), std::isnan(p) ? 0x7FC00000u : bits(p)) << x << " " << y;
  }
}

// ---- the caller's FP environment changes nothing ----------------------------------------------------
TEST(ModelEnvironment, MxcsrDoesNotMatter) {
  std::mt19937 rng(11);
  std::vector<float> a(300), b(300);
  for (auto& x : a) x = decode_f32((rng() % 0x78) | (rng() & 0x80), kE4M3);  // finite e4m3 codes
  for (auto& x : b) x = decode_f32((rng() % 0x78) | (rng() & 0x80), kE4M3);
  const M all[] = {M::fp32_sequential(), M::exact_block(32), M::systolic(128), M::hopper(),
                   M::trainium3_mx(Trn3Layout::kWrapX)};
  std::vector<std::uint32_t> expected;
  for (const M& m : all) expected.push_back(bits(dot(m, a, b)));
  std::vector<std::uint32_t> got;
  {
    test::ScopedHostileFpEnv env;  // toward zero, flush-to-zero
    for (const M& m : all) got.push_back(bits(dot(m, a, b)));
  }
  EXPECT_EQ(got, expected);
}

// ---- random FP8 inputs against the independent oracle -------------------------------------------------
struct RandomCase {
  const Format* format;
  bool mx;
  bool sparse;  // many zeros and a few large values: deep cancellations, long carries
};

oracle::Input random_input(std::mt19937_64& rng, const RandomCase& c, std::size_t K) {
  oracle::Input in;
  in.emin_a = in.emin_b = c.format->emin();
  auto value = [&] {
    for (;;) {
      const float v = decode_f32(rng() & 0xFF, *c.format);
      if (!std::isfinite(v)) continue;
      if (c.sparse && rng() % 4 != 0) return 0.0f;
      return v;
    }
  };
  for (std::size_t k = 0; k < K; ++k) in.a.push_back(value()), in.b.push_back(value());
  if (c.mx)
    for (std::size_t g = 0; g < (K + 31) / 32; ++g) in.scale_exp.push_back(static_cast<int>(rng() % 13) - 6);
  return in;
}

TEST(ModelRandom, EqualsIndependentOracle) {
  std::mt19937_64 rng(20240601);
  const RandomCase cases[] = {{&kE4M3FN, false, false}, {&kE5M2, false, false}, {&kE4M3, true, false},
                              {&kE5M2, true, true},     {&kE4M3FN, false, true}};
  int checked = 0;
  for (const RandomCase& c : cases)
    for (std::size_t K : {1, 7, 31, 32, 33, 100, 257, 513, 1100}) {
      for (int rep = 0; rep < 6; ++rep) {
        const oracle::Input in = random_input(rng, c, K);
        std::vector<std::uint8_t> sa, sb;
        for (int e : in.scale_exp) sa.push_back(static_cast<std::uint8_t>(127 + e / 2)), sb.push_back(static_cast<std::uint8_t>(127 + e - e / 2));
        const DotInput d{.a = in.a, .b = in.b, .mx_scale_a = sa, .mx_scale_b = sb,
                         .emin_a = in.emin_a, .emin_b = in.emin_b};
        const std::string where = std::string(c.format->name) + " K=" + std::to_string(K) + " rep " + std::to_string(rep);
        EXPECT_EQ(bits(reference_dot(M::fp32_sequential(), d)), bits(oracle::sequential(in, 0, K, in.c))) << where;
        for (int B : {1, 5, 32})
          EXPECT_EQ(bits(reference_dot(M::exact_block(B), d)), bits(oracle::exact_block(in, B))) << where << " B=" << B;
        for (int T : {3, 128, 256})
          EXPECT_EQ(bits(reference_dot(M::systolic(T), d)), bits(oracle::systolic(in, T))) << where << " T=" << T;
        for (int n : {1, 16, 32})
          for (int f : {10, 13, 23})
            for (Rounding r : {Rounding::kTowardZero, Rounding::kNearestEven})
              EXPECT_EQ(bits(reference_dot(M::fused(n, f, r), d)),
                        bits(oracle::fused(in, n, f, r == Rounding::kNearestEven)))
                  << where << " fused " << n << ":" << f << ":" << rounding_name(r);
        // the general fused model: alignment wider or narrower than the result, product groups
        for (const auto& [n, align, result, group] : {std::array{32, 16, 13, 1}, std::array{16, 25, 23, 1},
                                                      std::array{32, 13, 13, 2}, std::array{8, 24, 10, 4},
                                                      std::array{32, 10, 14, 32}})
          for (Rounding r : {Rounding::kTowardZero, Rounding::kNearestEven}) {
            const M m = M::fused_widths(n, align, result, r, group);
            EXPECT_EQ(bits(reference_dot(m, d)), bits(oracle::fused(in, n, align, result, group, r == Rounding::kNearestEven)))
                << where << " " << model_name(m);
          }
        EXPECT_EQ(bits(reference_dot(M::trainium3_mx(Trn3Layout::kWrapX), d)), bits(oracle::trainium3_mx(in, true))) << where;
        EXPECT_EQ(bits(reference_dot(M::trainium3_mx(Trn3Layout::k1x32), d)), bits(oracle::trainium3_mx(in, false))) << where;
        ++checked;
      }
    }
  EXPECT_EQ(checked, 5 * 9 * 6);
}

}  // namespace
}  // namespace fp8q
