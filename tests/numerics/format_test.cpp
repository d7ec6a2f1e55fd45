// numerics/format.hpp and the decode half of numerics/convert.hpp (scalar reference):
// every code of every format decodes to the value of docs/numerics.md section 1's formula and
// re-encodes to itself.
#include "fp8q/numerics/format.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "format_types.hpp"
#include "fp8q/numerics/convert.hpp"
#include "oracle.hpp"

namespace fp8q {
namespace {

template <class T>
class FormatCodes : public ::testing::Test {};
TYPED_TEST_SUITE(FormatCodes, test::NarrowFormats, test::FormatName);

TYPED_TEST(FormatCodes, EveryCodeDecodesToTheTableValueAndReencodesToItself) {
  const Format& f = TypeParam::format;
  const test::Oracle oracle(f);
  int nans = 0;
  for (std::uint64_t code = 0; code < (std::uint64_t{1} << f.bits()); ++code) {
    const double v = decode_f64(code, f);
    const std::uint64_t mag = code & f.magnitude_mask();
    const bool negative = (code & f.sign_bit()) != 0;
    const bool nan_code = oracle.is_special(mag) ? (mag != f.inf_code() || !f.has_inf())
                                                 : (f.specials == Specials::kFiniteNanUz && code == f.sign_bit());
    if (nan_code) {
      ++nans;
      EXPECT_TRUE(std::isnan(v)) << "code " << code;
      continue;
    }
    if (oracle.is_special(mag)) {  // Inf
      EXPECT_TRUE(std::isinf(v) && std::signbit(v) == negative) << "code " << code;
    } else {
      EXPECT_EQ(v, (negative ? -1 : 1) * oracle.value_of(mag)) << "code " << code;
      EXPECT_EQ(decode_f32(code, f), static_cast<float>(v)) << "decoding to fp32 is exact, code " << code;
    }
    for (Rounding r : test::kAllRoundings) {
      for (Overflow o : test::kAllOverflows) {
        ConvertOptions opt;
        opt.rounding = r;
        opt.overflow = o;
        // Inf saturates to max finite; everything else comes back as it was.
        const std::uint64_t want = std::isinf(v) && o == Overflow::kSaturate ? (f.max_finite_code() | (code & f.sign_bit())) : code;
        EXPECT_EQ(encode_f64(v, f, opt), want) << "code " << code;
        EXPECT_EQ(encode_f32(static_cast<float>(v), f, opt), want) << "code " << code;
      }
    }
  }
  const int expected_nans = f.specials == Specials::kIeee ? 2 * ((1 << f.man_bits) - 1)
                            : f.specials == Specials::kFiniteNanOnes ? 2
                            : f.specials == Specials::kFinite ? 0
                                                              : 1;
  EXPECT_EQ(nans, expected_nans);
}

TYPED_TEST(FormatCodes, LimitsMatchTheCodes) {
  const Format& f = TypeParam::format;
  EXPECT_EQ(decode_f64(f.max_finite_code(), f), f.max_finite());
  if (f.has_zero()) {
    EXPECT_EQ(decode_f64(1, f), f.denorm_min());
    EXPECT_EQ(decode_f64(std::uint64_t{1} << f.man_bits, f), f.min_normal());
  } else {
    EXPECT_EQ(decode_f64(0, f), f.min_normal());
  }
  // epsilon: the code after 1.0 minus 1.0
  const std::uint64_t one = encode_f64(1.0, f);
  EXPECT_EQ(decode_f64(one + 1, f) - 1.0, f.epsilon());
}

TEST(FormatNames, ParseEveryNameBack) {
  for (FormatId id : kAllFormats) EXPECT_EQ(parse_format(format_of(id).name), id);
  EXPECT_FALSE(parse_format("e4m3FN").has_value());
  EXPECT_FALSE(parse_format("").has_value());
}

}  // namespace
}  // namespace fp8q
