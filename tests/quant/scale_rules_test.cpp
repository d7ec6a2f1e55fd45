// quant/scale_rules.hpp against independent references written from docs/numerics.md section 5 in
// double arithmetic (std::frexp for exact exponents; exact products to judge a division),
// with the cases that trip implementations up: amax just below a power of two (255.99998),
// exact powers of two, fp32-subnormal amax, zero, NaN and Inf.
#include "fp8q/quant/scale_rules.hpp"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "fp8q/numerics/arith.hpp"
#include "fp8q/numerics/convert.hpp"

namespace fp8q {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// Whether q is the nearest-even fp32 to n / d (n, d, q > 0 finite): compare q and its two
// neighbours by |c * d - n|, which is exact in double (24 x 24-bit products; Sterbenz).
bool is_correctly_rounded_quotient(float q, float n, float d) {
  auto err = [&](float c) { return std::fabs(static_cast<double>(c) * d - n); };
  const float lo = std::nextafter(q, 0.0f), hi = std::nextafter(q, kInf);
  const double e = err(q);
  if (e > err(lo) || e > err(hi)) return false;
  if (e == err(lo) || e == err(hi)) return (bits_of(q) & 1) == 0;  // a tie: the even one
  return true;
}

int floor_log2(double x) {  // exact: frexp gives x = f * 2^k, f in [0.5, 1)
  int k;
  std::frexp(x, &k);
  return k - 1;
}
int ceil_log2(double x) {
  int k;
  const double f = std::frexp(x, &k);
  return f == 0.5 ? k - 1 : k;
}

// ---- scale from amax ----------------------------------------------------------------------------

TEST(ScaleFromAmax, IsTheCorrectlyRoundedQuotient) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<std::uint32_t> bits(1, 0x7F7FFFFF);
  for (const Format* f : {&kE4M3FN, &kE4M3, &kE5M2, &kE2M1}) {
    for (int i = 0; i < 20000; ++i) {
      const float amax = float_of(bits(rng));
      const float s = scale_from_amax(amax, *f);
      const double exact = f->max_finite() / amax;
      if (exact > FLT_MAX) {
        EXPECT_TRUE(s == FLT_MAX || is_correctly_rounded_quotient(s, static_cast<float>(f->max_finite()), amax)) << amax;
        continue;
      }
      if (exact < std::ldexp(1.0, -126)) continue;  // cannot occur: max_finite >= 6 and amax <= FLT_MAX
      ASSERT_TRUE(is_correctly_rounded_quotient(s, static_cast<float>(f->max_finite()), amax))
          << f->name << " amax " << amax << " gave " << s;
    }
  }
}

TEST(ScaleFromAmax, EdgeCases) {
  EXPECT_EQ(scale_from_amax(0.0f, kE4M3FN), 1.0f);
  EXPECT_EQ(scale_from_amax(-0.0f, kE4M3FN), 1.0f);
  EXPECT_EQ(scale_from_amax(kInf, kE4M3FN), 1.0f);
  EXPECT_EQ(scale_from_amax(kNaN, kE4M3FN), 1.0f);
  EXPECT_THROW(scale_from_amax(-1.0f, kE4M3FN), std::invalid_argument);
  EXPECT_EQ(scale_from_amax(448.0f, kE4M3FN), 1.0f);
  EXPECT_EQ(scale_from_amax(1.0f, kE4M3FN), 448.0f);
  EXPECT_EQ(scale_from_amax(std::ldexp(1.0f, -140), kE4M3FN), FLT_MAX);  // subnormal amax overflows
  // the order: FLT_MAX first, then the margin, then the power of two
  EXPECT_EQ(scale_from_amax(std::ldexp(1.0f, -140), kE4M3FN, {.margin = 1}), std::ldexp(FLT_MAX, -1));
  EXPECT_EQ(scale_from_amax(std::ldexp(1.0f, -140), kE4M3FN, {.power_of_two = true}), std::ldexp(1.0f, 127));
  EXPECT_EQ(scale_from_amax(1.0f, kE4M3FN, {.margin = -200}), FLT_MAX);
  EXPECT_EQ(scale_from_amax(1.0f, kE4M3FN, {.margin = -200, .power_of_two = true}), std::ldexp(1.0f, 127));
  // 255.99998 (the fp32 below 256): 448 / 255.99998 = 1.75000011..., correctly rounded
  const float below256 = std::nextafter(256.0f, 0.0f);
  EXPECT_TRUE(is_correctly_rounded_quotient(scale_from_amax(below256, kE4M3FN), 448.0f, below256));
  EXPECT_EQ(scale_from_amax(below256, kE4M3FN, {.power_of_two = true}), 1.0f);
  EXPECT_EQ(scale_from_amax(2.0f, kE4M3FN, {.margin = 2}), 56.0f);  // 224 / 4
  EXPECT_EQ(scale_from_amax(2.0f, kE4M3FN, {.power_of_two = true}), 128.0f);  // 224 -> 128
  EXPECT_EQ(scale_from_amax(0.0f, kE4M3FN, {.amax_epsilon = 4.0f}), 112.0f);  // amax floored to 4
  EXPECT_EQ(scale_from_amax(1.0f, kE4M3FN, {.amax_epsilon = 4.0f}), 112.0f);
  EXPECT_EQ(scale_from_amax(8.0f, kE4M3FN, {.amax_epsilon = 4.0f}), 56.0f);
  EXPECT_EQ(scale_from_amax(1.0f, kE4M3, {}), 240.0f);  // Trainium2's range
}

TEST(ScaleFromAmax, ScalesBelowTwoToMinus127BecomeTwoToMinus127AndKeepAFiniteInverse) {
  const float floor_scale = std::ldexp(1.0f, -127);
  // 448 / 3e38 = 1.5e-36, / 2^31 = 7e-46: below fp32's smallest subnormal
  EXPECT_EQ(bits_of(scale_from_amax(3e38f, kE4M3FN, {.margin = 31})), bits_of(floor_scale));
  EXPECT_EQ(bits_of(scale_from_amax(1.0f, kE4M3FN, {.margin = 200})), bits_of(floor_scale));
  EXPECT_EQ(bits_of(scale_from_amax(1.0f, kE4M3FN, {.margin = kMaxMargin, .power_of_two = true})), bits_of(floor_scale));
  EXPECT_EQ(divide_rne(1.0f, floor_scale), std::ldexp(1.0f, 127));  // scale_inv is finite
  // just above the floor nothing changes: 448 / 2^100 / 2^35 = 1.75 * 2^-127 (subnormal, exact)
  EXPECT_EQ(scale_from_amax(std::ldexp(1.0f, 100), kE4M3FN, {.margin = 35}), std::ldexp(1.75f, -127));
  EXPECT_EQ(scale_from_amax(std::ldexp(1.0f, 120), kE4M3FN, {.margin = 10}), std::ldexp(1.75f, -122));
}

TEST(ScaleFromAmax, BadOptionsAreNamedWithTheirValue) {
  auto message = [](auto&& call) -> std::string {
    try {
      call();
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "no error";
  };
  for (auto rule : {&scale_from_amax, &scale_inv_from_amax}) {
    EXPECT_NE(message([&] { rule(-1e-10f, kE4M3FN, {}); }).find("amax must be >= 0, got -1.00000001e-10"), std::string::npos);
    EXPECT_NE(message([&] { rule(1.0f, kE4M3FN, {.amax_epsilon = -2.5e-7f}); }).find("amax_epsilon"), std::string::npos);
    EXPECT_NE(message([&] { rule(1.0f, kE4M3FN, {.amax_epsilon = kNaN}); }).find("got nan"), std::string::npos);
    EXPECT_NE(message([&] { rule(1.0f, kE4M3FN, {.margin = kMaxMargin + 1}); }).find("margin must be in [-512, 512], got 513"),
              std::string::npos);
    EXPECT_NE(message([&] { rule(1.0f, kE4M3FN, {.margin = std::numeric_limits<int>::min()}); }).find("margin"),
              std::string::npos);  // refused before any arithmetic on it (negating INT_MIN is undefined)
    EXPECT_NO_THROW(rule(1.0f, kE4M3FN, {.amax_epsilon = -0.0f}));  // -0 is 0
    EXPECT_NO_THROW(rule(1.0f, kE4M3FN, {.margin = -kMaxMargin}));
  }
  EXPECT_EQ(scale_from_amax(0.0f, kE4M3FN, {.amax_epsilon = -0.0f}), 1.0f);
}

// ---- MX scale rules -------------------------------------------------------------------------------

// docs/numerics.md section 5, computed in double from the value of amax.
int reference_mx_exponent(float amax, const Format& elem, MxScaleRule rule) {
  const double a = std::fabs(static_cast<double>(amax));
  const int emax = elem.emax();
  int e = 0;
  switch (rule) {
    case MxScaleRule::kFloor: e = floor_log2(a) - emax; break;
    case MxScaleRule::kCeil: e = ceil_log2(a) - emax; break;
    case MxScaleRule::kEven: {
      // round amax to m mantissa bits, half up (add half an ulp, truncate), then floor
      const double ulp = std::ldexp(1.0, floor_log2(a) - elem.man_bits);
      const double r = std::floor(a / ulp + 0.5) * ulp;
      // fp32 subnormal amax: the pattern's exponent field is 0 (or 1 after a carry)
      e = (a < std::ldexp(1.0, -126) ? (r >= std::ldexp(1.0, -126) ? -126 : -127) : floor_log2(r)) - emax;
      break;
    }
    case MxScaleRule::kRceil: {
      // fp32(1 / max): the nearest-even float, judged exactly
      float inv = static_cast<float>(1.0 / elem.max_finite());
      for (float c : {std::nextafter(inv, 0.0f), std::nextafter(inv, 1.0f)})
        if (std::fabs(static_cast<double>(c) * elem.max_finite() - 1) < std::fabs(static_cast<double>(inv) * elem.max_finite() - 1))
          inv = c;
      const float p = static_cast<float>(static_cast<double>(amax) * inv);  // exact product, one rounding
      e = p == 0 ? -127 : ceil_log2(p);
      break;
    }
    case MxScaleRule::kTrainium3: e = floor_log2(a) - (emax - 1); break;
    case MxScaleRule::kCompressedTensors: {  // up to the next power of two from 1.75 (e2m3: 1.9375)
      const int f = floor_log2(a);
      const double up = elem == kE2M3 ? 1.9375 : 1.75;
      e = (a >= up * std::ldexp(1.0, f) ? f + 1 : f) - emax;
      break;
    }
  }
  return std::max(-127, std::min(127, e));
}

constexpr MxScaleRule kRules[] = {MxScaleRule::kFloor,     MxScaleRule::kCeil,
                                  MxScaleRule::kEven,      MxScaleRule::kRceil,
                                  MxScaleRule::kTrainium3, MxScaleRule::kCompressedTensors};
const Format* const kMxElements[] = {&kE4M3FN, &kE5M2, &kE2M3, &kE3M2, &kE2M1};

TEST(MxScaleCode, MatchesTheReferenceOnStructuredAndRandomAmax) {
  std::vector<float> amaxes = {1.0f, 0.75f, 6.0f, 7.5f, 448.0f, 449.0f, 57344.0f, FLT_MAX, FLT_MIN,
                               std::nextafter(256.0f, 0.0f), std::ldexp(1.0f, -149), std::ldexp(3.0f, -140),
                               std::ldexp(1.0f, -127), std::ldexp(1.0f, 127), std::ldexp(1.9999999f, 127)};
  for (int k = -149; k <= 127; ++k)
    for (float f : {1.0f, 1.0625f, 1.4999999f, 1.5f, 1.5000001f, 1.75f, 1.9375f, 1.96875f, 1.9999999f}) {
      const float v = std::ldexp(f, k);
      if (v > 0 && v <= FLT_MAX) amaxes.push_back(v);
    }
  std::mt19937 rng(11);
  std::uniform_int_distribution<std::uint32_t> bits(1, 0x7F7FFFFF);
  for (int i = 0; i < 20000; ++i) amaxes.push_back(float_of(bits(rng)));
  for (const Format* elem : kMxElements)
    for (MxScaleRule rule : kRules)
      for (float a : amaxes) {
        const int want = reference_mx_exponent(a, *elem, rule) + 127;
        ASSERT_EQ(mx_scale_code(a, *elem, rule), want)
            << mx_scale_rule_name(rule) << " " << elem->name << " amax " << a << " (bits 0x" << std::hex << bits_of(a) << ")";
      }
}

TEST(MxScaleCode, WorkedExamples) {
  const float below256 = std::nextafter(256.0f, 0.0f);  // 255.99998
  // floor: 2^(7-8) = 0.5; 255.99998 / 0.5 = 511.99997 > 448: the block max saturates (OCP).
  EXPECT_EQ(mx_scale_code(below256, kE4M3FN, MxScaleRule::kFloor), 127 - 1);
  EXPECT_EQ(mx_scale_code(below256, kE4M3FN, MxScaleRule::kCeil), 127 + 0);
  EXPECT_EQ(mx_scale_code(below256, kE4M3FN, MxScaleRule::kEven), 127 + 0);   // rounds to 256 first
  EXPECT_EQ(mx_scale_code(below256, kE4M3FN, MxScaleRule::kRceil), 127 + 0);  // 0.5714 -> 2^0
  EXPECT_EQ(mx_scale_code(below256, kE4M3FN, MxScaleRule::kTrainium3), 127 + 0);  // [128, 256)
  EXPECT_EQ(mx_scale_code(256.0f, kE4M3FN, MxScaleRule::kFloor), 127 + 0);
  EXPECT_EQ(mx_scale_code(256.0f, kE4M3FN, MxScaleRule::kCeil), 127 + 0);       // exact power of two
  EXPECT_EQ(mx_scale_code(448.0f, kE4M3FN, MxScaleRule::kRceil), 127 + 0);      // p = 1 exactly
  EXPECT_EQ(mx_scale_code(449.0f, kE4M3FN, MxScaleRule::kRceil), 127 + 1);
  EXPECT_EQ(mx_scale_code(0.0f, kE4M3FN, MxScaleRule::kFloor), 0x00);           // e = -127
  EXPECT_EQ(mx_scale_code(kNaN, kE4M3FN, MxScaleRule::kFloor), 0xFF);
  EXPECT_EQ(mx_scale_code(kInf, kE2M1, MxScaleRule::kTrainium3), 0xFF);
  EXPECT_EQ(mx_scale_code(std::ldexp(1.0f, -140), kE4M3FN, MxScaleRule::kCeil), 0x00);  // clamps to -127
  EXPECT_EQ(mx_scale_code(FLT_MAX, kE2M1, MxScaleRule::kCeil), 127 + 126);
}

// [2^(emax-1), 2^emax): one binade below the floor rule's [2^emax, 2^(emax+1)), so a swap of
// the two rules fails here.
TEST(MxScaleCode, Trainium3PutsTheBlockMaxInTheBinadeBelowEmax) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> mant(1.0f, 2.0f);
  for (const Format* elem : kMxElements)
    for (int k = -100; k <= 100; ++k) {
      const float amax = std::ldexp(mant(rng), k);
      const int e = mx_scale_code(amax, *elem, MxScaleRule::kTrainium3) - 127;
      const double scaled = std::ldexp(static_cast<double>(amax), -e);
      EXPECT_GE(scaled, std::ldexp(1.0, elem->emax() - 1)) << elem->name << " " << amax;
      EXPECT_LT(scaled, std::ldexp(1.0, elem->emax())) << elem->name << " " << amax;
    }
}

TEST(MxQuantizeBlock, ElementsAreTheScaledValuesRoundedAndSaturated) {
  std::mt19937 rng(9);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (const Format* elem : kMxElements)
    for (MxScaleRule rule : kRules)
      for (float spread : {1e-30f, 1e-3f, 1.0f, 300.0f, 1e30f}) {
        std::vector<float> x(32);
        for (float& v : x) v = normal(rng) * spread;
        x[5] = 0.0f;
        std::vector<std::uint8_t> codes(32);
        const std::uint8_t s = mx_quantize_block(x, *elem, rule, codes);
        double amax = 0;
        for (float v : x) amax = std::max(amax, std::fabs(static_cast<double>(v)));
        EXPECT_EQ(s, mx_scale_code(static_cast<float>(amax), *elem, rule));
        const int e = s - 127;
        for (int i = 0; i < 32; ++i) {
          // reference: the exact x * 2^-e (a double holds it), rounded nearest-even, saturated
          const std::uint64_t want = encode_f64(std::ldexp(static_cast<double>(x[i]), -e), *elem);
          ASSERT_EQ(codes[i], want) << elem->name << " " << mx_scale_rule_name(rule) << " element " << i;
        }
      }
}

TEST(MxQuantizeBlock, NanInfAndZeroBlocks) {
  std::vector<float> x(32, 1.0f);
  std::vector<std::uint8_t> codes(32);
  x[7] = kNaN;
  EXPECT_EQ(mx_quantize_block(x, kE4M3FN, MxScaleRule::kFloor, codes), 0xFF);
  for (std::uint8_t c : codes) EXPECT_EQ(c, 0x7F);
  x[7] = -kInf;
  EXPECT_EQ(mx_quantize_block(x, kE2M1, MxScaleRule::kFloor, codes), 0xFF);
  for (std::uint8_t c : codes) EXPECT_EQ(c, 0x00);  // e2m1 has no NaN: the scale carries it
  std::fill(x.begin(), x.end(), 0.0f);
  x[3] = -0.0f;
  EXPECT_EQ(mx_quantize_block(x, kE4M3FN, MxScaleRule::kCeil, codes), 0x00);
  EXPECT_EQ(codes[3], 0x80);
  std::vector<std::uint8_t> short_codes(31);
  EXPECT_THROW(mx_quantize_block(x, kE4M3FN, MxScaleRule::kCeil, short_codes), std::invalid_argument);
  EXPECT_THROW(mx_quantize_block(x, kE8M0, MxScaleRule::kCeil, codes), std::invalid_argument);
}

TEST(MxScaleRuleNames, RoundTrip) {
  for (MxScaleRule r : kRules) EXPECT_EQ(parse_mx_scale_rule(mx_scale_rule_name(r)), r);
  EXPECT_FALSE(parse_mx_scale_rule("round").has_value());
}

}  // namespace
}  // namespace fp8q
