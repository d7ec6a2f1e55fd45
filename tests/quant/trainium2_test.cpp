// quant/trainium2.hpp: every e4m3fn code re-encoded for Trainium2's e4m3 keeps its value
// under the doubled scale_inv, except the odd multiples of 2^-9 below 2^-5, which are counted.
#include "fp8q/quant/trainium2.hpp"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <limits>
#include <vector>

#include "fp8q/numerics/convert.hpp"

namespace fp8q {
namespace {

TEST(Trainium2Reencoding, EveryCodeKeepsItsValueOrIsCounted) {
  std::vector<std::uint8_t> in(256), out(256);
  for (unsigned c = 0; c < 256; ++c) in[c] = static_cast<std::uint8_t>(c);
  const auto r = reencode_e4m3fn_for_trainium2(in, out);
  std::size_t inexact = 0;
  for (unsigned c = 0; c < 256; ++c) {
    const double v = decode_f64(c, kE4M3FN);
    const double w = 2 * decode_f64(out[c], kE4M3);  // dequantized with the doubled scale_inv
    if (std::isnan(v)) {
      EXPECT_TRUE(std::isnan(w)) << c;
      EXPECT_EQ(out[c] & 0x80, c & 0x80) << "NaN keeps its sign, code " << c;
      continue;
    }
    const unsigned mag = c & 0x7F;
    if (mag <= 0x0F && (mag & 1) == 1) {  // k * 2^-9, k odd, v < 2^-5: v / 2 is not in e4m3
      ++inexact;
      EXPECT_EQ(std::fabs(w - v), std::ldexp(1.0, -9)) << "rounds to a neighbour, code " << c;
      continue;
    }
    EXPECT_EQ(w, v) << "code " << c;
  }
  EXPECT_EQ(inexact, 16u);
  EXPECT_EQ(r.inexact, 16u);
  EXPECT_EQ(r.nans, 2u);
  EXPECT_EQ(out[0x7E], 0x76u);  // 448 -> 224 = 0b0'1110'110 in e4m3, below its max of 240
}

TEST(Trainium2Reencoding, ScalesDoubleExactly) {
  std::vector<float> s = {1.0f, 0.0f, std::ldexp(1.0f, -140), 3.0e38f / 4}, out(4);
  double_scale_inv(s, out);
  EXPECT_EQ(out[0], 2.0f);
  EXPECT_EQ(out[1], 0.0f);
  EXPECT_EQ(out[2], std::ldexp(1.0f, -139));  // subnormal, still exact
  EXPECT_EQ(out[3], 3.0e38f / 2);
  std::vector<float> big = {FLT_MAX}, nan = {std::numeric_limits<float>::quiet_NaN()}, one(1);
  EXPECT_THROW(double_scale_inv(big, one), std::overflow_error);
  EXPECT_THROW(double_scale_inv(nan, one), std::invalid_argument);
  std::vector<std::uint8_t> a(3), b(2);
  EXPECT_THROW(reencode_e4m3fn_for_trainium2(a, b), std::invalid_argument);
}

}  // namespace
}  // namespace fp8q
