// numerics/convert.hpp, scalar reference path: the worked examples of docs/numerics.md,
// one rule each, so that a regression names the rule it broke.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "fp8q/numerics/convert.hpp"

namespace fp8q {
namespace {

ConvertOptions opts(Rounding r, Overflow o = Overflow::kSaturate) {
  ConvertOptions c;
  c.rounding = r;
  c.overflow = o;
  return c;
}
const ConvertOptions kSat = opts(Rounding::kNearestEven);
const ConvertOptions kInf = opts(Rounding::kNearestEven, Overflow::kInfOrNan);
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInfF = std::numeric_limits<float>::infinity();

TEST(ConvertExamples, E4m3fnAroundMaxFinite) {
  // 448 = 0b0'1111'110; the unbounded grid continues with 480 (the NaN code's place).
  EXPECT_EQ(encode_f32(448, kE4M3FN, kSat), 0b0'1111'110u);
  EXPECT_EQ(encode_f32(464, kE4M3FN, kInf), 0b0'1111'110u);  // tie 448|480 -> even 448
  EXPECT_EQ(encode_f32(464, kE4M3FN, kSat), 0b0'1111'110u);  // either policy
  EXPECT_EQ(encode_f32(465, kE4M3FN, kInf), 0b0'1111'111u);  // rounds to 480: overflow -> NaN
  EXPECT_EQ(encode_f32(465, kE4M3FN, kSat), 0b0'1111'110u);  // saturates to 448
  EXPECT_EQ(encode_f32(-465, kE4M3FN, kInf), 0b1'1111'111u);  // NaN keeps the sign
  EXPECT_EQ(encode_f32(kInfF, kE4M3FN, kSat), 0x7Eu);
  EXPECT_EQ(encode_f32(kInfF, kE4M3FN, kInf), 0x7Fu);
}

TEST(ConvertExamples, E4m3TrainiumTwoRange) {
  EXPECT_EQ(encode_f32(240, kE4M3, kSat), 0b0'1110'111u);  // max finite
  EXPECT_EQ(encode_f32(247, kE4M3, kInf), 0b0'1110'111u);  // below the 240|256 midpoint
  EXPECT_EQ(encode_f32(248, kE4M3, kInf), 0b0'1111'000u);  // tie -> even 256 -> Inf
  EXPECT_EQ(encode_f32(248, kE4M3, kSat), 0b0'1110'111u);
  EXPECT_EQ(encode_f32(448, kE4M3, kInf), 0x78u);          // OCP's max is Inf here
}

TEST(ConvertExamples, TiesInEveryNearestMode) {
  // 1.0625 lies halfway between 1 (0b0'0111'000) and 1.125 (0b0'0111'001) in e4m3fn.
  EXPECT_EQ(encode_f32(1.0625f, kE4M3FN, opts(Rounding::kNearestEven)), 0x38u);
  EXPECT_EQ(encode_f32(1.0625f, kE4M3FN, opts(Rounding::kNearestAway)), 0x39u);
  // 1.1875 is halfway between 1.125 (odd) and 1.25 (even): even goes up.
  EXPECT_EQ(encode_f32(1.1875f, kE4M3FN, opts(Rounding::kNearestEven)), 0x3Au);
  EXPECT_EQ(encode_f32(-1.0625f, kE4M3FN, opts(Rounding::kNearestAway)), 0xB9u);
}

TEST(ConvertExamples, DirectedAndOddRounding) {
  const float x = 1.01f;  // between 1 (0x38) and 1.125 (0x39)
  EXPECT_EQ(encode_f32(x, kE4M3FN, opts(Rounding::kTowardZero)), 0x38u);
  EXPECT_EQ(encode_f32(x, kE4M3FN, opts(Rounding::kUp)), 0x39u);
  EXPECT_EQ(encode_f32(x, kE4M3FN, opts(Rounding::kDown)), 0x38u);
  EXPECT_EQ(encode_f32(-x, kE4M3FN, opts(Rounding::kUp)), 0xB8u);
  EXPECT_EQ(encode_f32(-x, kE4M3FN, opts(Rounding::kDown)), 0xB9u);
  EXPECT_EQ(encode_f32(x, kE4M3FN, opts(Rounding::kOdd)), 0x39u);  // inexact -> odd neighbour
  EXPECT_EQ(encode_f32(1.0f, kE4M3FN, opts(Rounding::kOdd)), 0x38u);  // exact stays
  // IEEE 754 7.4: toward zero never overflows to Inf; up overflows only for positives.
  EXPECT_EQ(encode_f32(1e6f, kE5M2, opts(Rounding::kTowardZero, Overflow::kInfOrNan)), 0x7Bu);
  EXPECT_EQ(encode_f32(1e6f, kE5M2, opts(Rounding::kUp, Overflow::kInfOrNan)), 0x7Cu);
  EXPECT_EQ(encode_f32(-1e6f, kE5M2, opts(Rounding::kUp, Overflow::kInfOrNan)), 0xFBu);
  EXPECT_EQ(encode_f32(-1e6f, kE5M2, opts(Rounding::kDown, Overflow::kInfOrNan)), 0xFCu);
}

TEST(ConvertExamples, SubnormalsAreKept) {
  // e4m3fn subnormals are k * 2^-9; 3 * 2^-9 = 0b0'0000'011.
  EXPECT_EQ(encode_f32(std::ldexp(3.0f, -9), kE4M3FN, kSat), 0x03u);
  // 2^-10 is half the smallest subnormal: tie -> even (zero); a hair more -> 2^-9.
  EXPECT_EQ(encode_f32(std::ldexp(1.0f, -10), kE4M3FN, kSat), 0x00u);
  EXPECT_EQ(encode_f32(std::nextafter(std::ldexp(1.0f, -10), 1.0f), kE4M3FN, kSat), 0x01u);
  EXPECT_EQ(encode_f32(-std::ldexp(1.0f, -12), kE4M3FN, kSat), 0x80u);  // -0
  // An fp32 subnormal input is an exact value, not zero.
  EXPECT_EQ(encode_f32(std::ldexp(1.0f, -140), kE4M3FN, opts(Rounding::kUp)), 0x01u);
  EXPECT_EQ(decode_f32(0x01, kE5M2), std::ldexp(1.0f, -16));
}

TEST(ConvertExamples, FnuzHasNoNegativeZero) {
  EXPECT_EQ(encode_f32(-0.0f, kE4M3FNUZ, kSat), 0x00u);
  EXPECT_EQ(encode_f32(-1e-9f, kE4M3FNUZ, kSat), 0x00u);
  EXPECT_EQ(encode_f32(-std::ldexp(1.0f, -12), kE4M3FNUZ, kSat), 0x00u);  // the worked example's row
  EXPECT_EQ(encode_f32(kNaN, kE4M3FNUZ, kSat), 0x80u);
  EXPECT_EQ(encode_f32(-kNaN, kE5M2FNUZ, kSat), 0x80u);
  EXPECT_EQ(encode_f32(-kInfF, kE4M3FNUZ, kInf), 0x80u);
  EXPECT_EQ(encode_f32(-kInfF, kE4M3FNUZ, kSat), 0xFFu);  // -240
  EXPECT_EQ(encode_f32(240, kE4M3FNUZ, kSat), 0x7Fu);
}

TEST(ConvertExamples, CanonicalNans) {
  EXPECT_EQ(encode_f32(kNaN, kE5M2, kSat), 0x7Eu);   // S.11111.10
  EXPECT_EQ(encode_f32(-kNaN, kE5M2, kSat), 0xFEu);
  EXPECT_EQ(encode_f32(kNaN, kE4M3, kSat), 0x7Cu);   // S.1111.100
  EXPECT_EQ(encode_f32(kNaN, kE3M4, kSat), 0x78u);   // S.111.1000
  EXPECT_EQ(encode_f32(kNaN, kE4M3FN, kSat), 0x7Fu);
  EXPECT_EQ(encode_f32(kNaN, kE8M0, kSat), 0xFFu);
  EXPECT_EQ(bits_of(decode_f32(0xFF, kE4M3FN)), 0xFFC00000u);  // sign kept, quiet
}

TEST(ConvertExamples, FormatsWithoutNanReportIt) {
  const Converted c = convert_one(bits_of(-kNaN), kF32, kE2M1, kSat);
  EXPECT_TRUE(c.nan_unrepresentable);
  EXPECT_EQ(c.code, 0b1'00'0u);  // the documented value: -0
  EXPECT_EQ(encode_f32(kInfF, kE2M1, kInf), 0b0'11'1u);  // no Inf either: saturates to 6
  EXPECT_EQ(encode_f32(5.0f, kE2M1, kSat), 0b0'11'0u);   // tie 4|6 -> even 4 (0b0'11'0 = 4)
  EXPECT_EQ(encode_f32(7.5f, kE2M3, kSat), 0b0'11'111u);
  EXPECT_EQ(encode_f32(28.f, kE3M2, kSat), 0b0'111'11u);
}

TEST(ConvertExamples, E8m0) {
  EXPECT_EQ(encode_f32(1.0f, kE8M0, kSat), 127u);
  EXPECT_EQ(encode_f32(1.49f, kE8M0, kSat), 127u);
  EXPECT_EQ(encode_f32(1.5f, kE8M0, kSat), 128u);  // the tie goes up: the lone significand bit is odd
  EXPECT_EQ(encode_f32(3.0f, kE8M0, kSat), 129u);
  EXPECT_EQ(encode_f32(0.0f, kE8M0, kSat), 0u);    // no zero: the smallest value, 2^-127
  EXPECT_EQ(encode_f32(0.0f, kE8M0, kInf), 0xFFu);
  EXPECT_EQ(encode_f32(-2.0f, kE8M0, kSat), 0u);
  EXPECT_EQ(encode_f32(-2.0f, kE8M0, kInf), 0xFFu);
  EXPECT_EQ(encode_f32(std::ldexp(1.0f, -130), kE8M0, kInf), 0u);  // below 2^-127: clamps
  EXPECT_EQ(encode_f64(std::ldexp(1.0, 127), kE8M0, kSat), 254u);
  EXPECT_EQ(encode_f64(std::ldexp(1.5, 127), kE8M0, kSat), 254u);
  EXPECT_EQ(encode_f64(std::ldexp(1.5, 127), kE8M0, kInf), 0xFFu);
  EXPECT_EQ(decode_f64(0, kE8M0), std::ldexp(1.0, -127));
}

TEST(ConvertExamples, ScaleIsOneRoundedFp32Product) {
  ConvertOptions o = kSat;
  o.scale = 3.0f;
  // 100 * 3 = 300 -> e4m3fn: 288 (0x79 = 0b0'1111'001, 1.125 * 2^8) is nearer than 320.
  EXPECT_EQ(encode_f32(100.0f, kE4M3FN, o), 0x79u);
  // The product is rounded to fp32 first: (1 + 2^-23) * (1 + 2^-23) = 1 + 2^-22 + 2^-46
  // rounds to 1 + 2^-22 in fp32 (shown here with an fp32 target, where nothing else rounds).
  o.scale = 1.0f + std::ldexp(1.0f, -23);
  ConvertOptions to_f32 = o;
  EXPECT_EQ(convert_one(bits_of(1.0f + std::ldexp(1.0f, -23)), kF32, kF32, to_f32).code,
            bits_of(1.0f + std::ldexp(1.0f, -22)));
  // 0 * Inf is the invalid product: the default NaN, negative as on x86.
  o.scale = kInfF;
  EXPECT_EQ(encode_f32(0.0f, kE4M3FN, o), 0xFFu);
  // An fp64 input with a scale also goes through fp32(x * scale).
  o.scale = 1.0f;
  EXPECT_EQ(convert_one(bits_of(1.0 + std::ldexp(1.0, -40)), kF64, kF64, o).code, bits_of(1.0));
}

TEST(ConvertExamples, DivideIsOneRoundedFp32Quotient) {
  ConvertOptions o = kSat;
  o.scale_op = ScaleOp::kDivide;
  o.scale = 3.0f;
  // 900 / 3 = 300 -> e4m3fn 288 (0x79), as 100 * 3 above.
  EXPECT_EQ(encode_f32(900.0f, kE4M3FN, o), 0x79u);
  // 0 / 0 and Inf / Inf are invalid: the negative default NaN; x / 0 is Inf (saturates).
  o.scale = 0.0f;
  EXPECT_EQ(encode_f32(0.0f, kE4M3FN, o), 0xFFu);
  EXPECT_EQ(encode_f32(-2.0f, kE4M3FN, o), 0xFEu);
  o.scale = kInfF;
  EXPECT_EQ(encode_f32(kInfF, kE4M3FN, o), 0xFFu);
  EXPECT_EQ(encode_f32(5.0f, kE4M3FN, o), 0x00u);
  // fp32(x / s) against an oracle: the double quotient of two fp32 values rounded to fp32
  // is the correctly rounded fp32 quotient (53 >= 2 * 24 + 2 bits), subnormals included.
  std::uint32_t state = 12345;
  auto next = [&] { return state = state * 1664525u + 1013904223u; };
  ConvertOptions to_f32;
  to_f32.overflow = Overflow::kInfOrNan;
  to_f32.scale_op = ScaleOp::kDivide;
  for (int i = 0; i < 200000; ++i) {
    const std::uint32_t xb = next(), sb = next() & (i % 3 == 0 ? 0x80FFFFFFu : 0xFFFFFFFFu);
    const float x = float_of(xb), s = float_of(sb);
    if (std::isnan(x) || std::isnan(s)) continue;
    to_f32.scale = s;
    const float want = static_cast<float>(static_cast<double>(x) / static_cast<double>(s));
    const std::uint32_t got = static_cast<std::uint32_t>(convert_one(xb, kF32, kF32, to_f32).code);
    if (std::isnan(want)) {
      EXPECT_EQ(got, 0xFFC00000u) << std::hex << xb << " / " << sb;
    } else {
      ASSERT_EQ(got, bits_of(want)) << std::hex << xb << " / " << sb;
    }
  }
}

TEST(ConvertExamples, WideFormatsRoundToo) {
  // f32 -> bf16 nearest-even, f64 -> f32 directed
  EXPECT_EQ(convert_one(0x3F808000u, kF32, kBF16, kSat).code, 0x3F80u);  // tie -> even
  EXPECT_EQ(convert_one(0x3F818000u, kF32, kBF16, kSat).code, 0x3F82u);
  EXPECT_EQ(convert_one(bits_of(0.1), kF64, kF32, opts(Rounding::kUp)).code, bits_of(0.1f));
  EXPECT_EQ(convert_one(bits_of(1e39), kF64, kF32, kInf).code, bits_of(kInfF));
  EXPECT_EQ(convert_one(bits_of(1e39), kF64, kF32, kSat).code, bits_of(std::numeric_limits<float>::max()));
}

}  // namespace
}  // namespace fp8q
