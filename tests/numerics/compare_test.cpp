// numerics/compare.hpp: the ULP distance on every format's ordered line, checked against the
// decoded values (every code of the 8-bit formats, every bf16 and f16 code), and the counts
// of compare_codes() on prepared pairs (equal, 1 ULP, signed zeros, NaN payloads, integers).
#include "fp8q/numerics/compare.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "format_types.hpp"
#include "fp8q/numerics/convert.hpp"

namespace fp8q {
namespace {

// The non-NaN codes of f sorted by value, -0 just before +0: stepping along this list is one
// ULP per step except across the two zeros.
std::vector<std::uint64_t> codes_by_value(const Format& f) {
  std::vector<std::uint64_t> codes;
  for (std::uint64_t c = 0; c < (std::uint64_t{1} << f.bits()); ++c)
    if (!is_nan_code(c, f)) codes.push_back(c);
  std::stable_sort(codes.begin(), codes.end(), [&](std::uint64_t a, std::uint64_t b) {
    const double x = decode_f64(a, f), y = decode_f64(b, f);
    return x != y ? x < y : std::signbit(x) > std::signbit(y);
  });
  return codes;
}

void expect_ordered_line(const Format& f) {
  const std::vector<std::uint64_t> codes = codes_by_value(f);
  for (std::size_t i = 1; i < codes.size(); ++i) {
    const std::uint64_t a = codes[i - 1], b = codes[i];
    const bool zeros = decode_f64(a, f) == 0 && decode_f64(b, f) == 0;
    ASSERT_EQ(ulp_distance(a, b, f), zeros ? 0u : 1u) << f.name << " codes " << a << ", " << b;
    ASSERT_LT(code_ordinal(a, f) - (zeros ? 1 : 0), code_ordinal(b, f)) << f.name;
  }
  // the whole line: from the lowest to the highest value, one step per distinct value
  const std::size_t steps = codes.size() - 1 - (f.has_negative_zero() ? 1 : 0);
  EXPECT_EQ(ulp_distance(codes.front(), codes.back(), f), steps) << f.name;
  // NaN against NaN is 0 ULP, against any number infinitely far
  if (f.has_nan()) {
    for (std::uint64_t c = 0; c < (std::uint64_t{1} << f.bits()); ++c) {
      if (!is_nan_code(c, f)) continue;
      EXPECT_EQ(ulp_distance(c, f.canonical_nan(), f), 0u) << f.name << " code " << c;
      EXPECT_EQ(ulp_distance(c, codes.front(), f), kInfiniteUlps) << f.name << " code " << c;
      EXPECT_TRUE(std::isnan(decode_f64(c, f))) << f.name << " code " << c;
    }
  }
}

template <class T>
class UlpLine : public ::testing::Test {};
TYPED_TEST_SUITE(UlpLine, test::NarrowFormats, test::FormatName);

TYPED_TEST(UlpLine, AdjacentValuesAreOneUlpApartOnEveryCode) { expect_ordered_line(TypeParam::format); }

TEST(UlpLine, EveryBf16AndF16CodeIsOnTheLine) {
  expect_ordered_line(kBF16);
  expect_ordered_line(kF16);
}

template <class T>
std::span<const std::byte> as_bytes(const std::vector<T>& v) {
  return std::as_bytes(std::span<const T>(v));
}

TEST(CompareCodes, EqualArraysAreBitEqual) {
  const std::vector<float> a = {1.0f, -0.0f, std::nanf(""), 3.5f};
  const CodeComparison r = compare_codes(as_bytes(a), as_bytes(a), &kF32, 4);
  EXPECT_EQ(r.count, 4u);
  EXPECT_EQ(r.bit_equal, 4u);
  EXPECT_TRUE(r.within());
  EXPECT_TRUE(r.worst.empty() && r.first.empty());
}

TEST(CompareCodes, OneUlpFailsBitwiseAndPassesAtOneUlp) {
  const std::vector<std::uint32_t> want = {0x3F800000, 0x40000000, 0x3F800000};
  const std::vector<std::uint32_t> got = {0x3F800000, 0x40000001, 0x3F7FFFFF};  // 2 + 2^-22, 1 - 2^-24: one step each
  const CodeComparison bitwise = compare_codes(as_bytes(got), as_bytes(want), &kF32, 4);
  EXPECT_EQ(bitwise.differ, 2u);
  EXPECT_EQ(bitwise.beyond, 2u);
  EXPECT_EQ(bitwise.max_ulps, 1u);
  ASSERT_EQ(bitwise.worst.size(), 2u);
  EXPECT_EQ(bitwise.worst[0].index, 1u);  // ties in distance: lower index first
  EXPECT_EQ(distance_text(bitwise.worst[0], &kF32), "1 ULP");
  EXPECT_TRUE(compare_codes(as_bytes(got), as_bytes(want), &kF32, 4, {.ulps = 1}).within());
}

TEST(CompareCodes, SignedZerosAndNanPayloadsAreZeroUlpButNotBitEqual) {
  const std::vector<std::uint32_t> want = {0x00000000, 0x7FC00000, 0x7FC00000, 0x3F800000};
  const std::vector<std::uint32_t> got = {0x80000000, 0x7FC00001, 0xFFC00000, 0x7FC00000};
  const CodeComparison r = compare_codes(as_bytes(got), as_bytes(want), &kF32, 4, {.ulps = 1});
  EXPECT_EQ(r.bit_equal, 0u);
  EXPECT_EQ(r.signed_zero, 1u);
  EXPECT_EQ(r.nan_payload, 2u);        // another payload, and the sign of a NaN
  EXPECT_EQ(r.beyond, 1u);             // only the NaN against 1.0, at any tolerance
  EXPECT_EQ(r.max_ulps, kInfiniteUlps);
  EXPECT_EQ(r.worst.front().index, 3u);
  EXPECT_EQ(distance_text(r.worst.front(), &kF32), "NaN against a number");
  EXPECT_EQ(distance_text(r.first[0], &kF32), "0 ULP (signed zero)");
  EXPECT_EQ(compare_codes(as_bytes(got), as_bytes(want), &kF32, 4).beyond, 4u);  // bitwise: all four
}

TEST(CompareCodes, Fp8CodesAndIntegersBitwise) {
  const std::vector<std::uint8_t> want = {0x7E, 0x00, 0x7F, 0x38};  // e4m3fn: 448, +0, NaN, 1
  const std::vector<std::uint8_t> got = {0x7D, 0x80, 0xFF, 0x38};   // 416, -0, -NaN, 1
  const CodeComparison r = compare_codes(as_bytes(got), as_bytes(want), &kE4M3FN, 1, {.ulps = 1});
  EXPECT_EQ(r.differ, 3u);
  EXPECT_EQ(r.beyond, 0u);
  EXPECT_EQ(code_text(0x7E, &kE4M3FN, 1), "0x7E (448)");
  // integers: any difference is beyond any tolerance
  const CodeComparison ints = compare_codes(as_bytes(got), as_bytes(want), nullptr, 1, {.ulps = 100});
  EXPECT_EQ(ints.beyond, 3u);
  EXPECT_EQ(distance_text(ints.first[0], nullptr), "integers differ");
  EXPECT_EQ(code_text(0x2A, nullptr, 4), "0x0000002A");
}

TEST(CompareCodes, KeepsTheWorstAndTheFirst) {
  std::vector<std::uint16_t> want(100, 0x3F80), got(100, 0x3F80);  // bf16 1.0
  for (int i = 0; i < 100; i += 10) got[i] = static_cast<std::uint16_t>(0x3F80 + i / 10 + 1);
  const CodeComparison r = compare_codes(as_bytes(got), as_bytes(want), &kBF16, 2, {.ulps = 3, .worst = 3});
  EXPECT_EQ(r.differ, 10u);
  EXPECT_EQ(r.beyond, 7u);  // distances 4..10
  EXPECT_EQ(r.max_ulps, 10u);
  ASSERT_EQ(r.worst.size(), 3u);
  EXPECT_EQ(r.worst[0].index, 90u);
  EXPECT_EQ(r.worst[2].index, 70u);
  ASSERT_EQ(r.first.size(), 3u);
  EXPECT_EQ(r.first[2].index, 20u);
}

TEST(CompareCodes, RefusesMismatchedSizes) {
  const std::vector<std::uint8_t> a(4), b(5);
  EXPECT_THROW(compare_codes(as_bytes(a), as_bytes(b), &kE5M2, 1), std::invalid_argument);
  EXPECT_THROW(compare_codes(as_bytes(a), as_bytes(a), &kF32, 1), std::invalid_argument);  // f32 is 4 bytes
  EXPECT_THROW(compare_codes(as_bytes(b), as_bytes(b), nullptr, 2), std::invalid_argument);  // 5 bytes
}

}  // namespace
}  // namespace fp8q
