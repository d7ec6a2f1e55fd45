// numerics/convert.hpp, scalar reference path: every bf16 and fp16 input, through every
// (format, rounding, overflow), against the independent Oracle; and every narrow code
// decoded into bf16 and fp16 under every rounding and overflow (e8m0 into fp16 needs rounding;
// the rest is widening, exact under both policies).
#include <gtest/gtest.h>

#include <cmath>

#include "format_types.hpp"
#include "fp8q/numerics/convert.hpp"
#include "fp8q/numerics/philox.hpp"
#include "oracle.hpp"

namespace fp8q {
namespace {

template <class T>
class ConvertVsOracle : public ::testing::Test {};
TYPED_TEST_SUITE(ConvertVsOracle, test::NarrowFormats, test::FormatName);

// All 2^16 codes of a 16-bit source format, as exact doubles.
void check_all_16bit_inputs(const Format& src, const Format& to) {
  const test::Oracle oracle(to);
  for (Rounding r : test::kAllRoundings) {
    for (Overflow ov : test::kAllOverflows) {
      ConvertOptions opt;
      opt.rounding = r;
      opt.overflow = ov;
      opt.nan = NanPolicy::kZero;
      opt.seed = 0x5EEDF00DCAFEull;
      opt.offset = 1000;
      int failures = 0;
      for (std::uint64_t c = 0; c < 65536 && failures < 5; ++c) {
        const double x = decode_f64(c, src);
        const std::uint32_t rnd = sr_random(opt.seed, opt.offset + c);
        const std::uint64_t want = oracle(x, r, ov, rnd);
        const std::uint64_t got = convert_one(c, src, to, opt, c).code;
        if (got != want) {
          ++failures;
          ADD_FAILURE() << src.name << " code 0x" << std::hex << c << " (" << x << ") -> " << to.name << " "
                        << rounding_name(r) << "/" << overflow_name(ov) << ": got 0x" << got << ", oracle 0x" << want;
        }
      }
    }
  }
}

TYPED_TEST(ConvertVsOracle, AllBf16InputsEveryRoundingAndOverflow) { check_all_16bit_inputs(kBF16, TypeParam::format); }
TYPED_TEST(ConvertVsOracle, AllFp16InputsEveryRoundingAndOverflow) { check_all_16bit_inputs(kF16, TypeParam::format); }

TYPED_TEST(ConvertVsOracle, EveryCodeIntoBf16AndFp16EveryRounding) {
  const Format& from = TypeParam::format;
  for (const Format* to : {&kBF16, &kF16}) {
    const test::Oracle oracle(*to);
    for (Rounding r : test::kAllRoundings) {
      for (Overflow ov : test::kAllOverflows) {
        ConvertOptions opt;
        opt.rounding = r;
        opt.overflow = ov;
        // where the target holds every value (all but e8m0 -> f16) the conversion is exact,
        // which the oracle gives under inf-nan: Inf stays Inf in every mode
        const Overflow want_ov = is_widening(from, *to) ? Overflow::kInfOrNan : ov;
        for (std::uint64_t c = 0; c < (std::uint64_t{1} << from.bits()); ++c) {
          const double x = decode_f64(c, from);
          EXPECT_EQ(convert_one(c, from, *to, opt, c).code, oracle(x, r, want_ov, sr_random(0, c)))
              << from.name << " code " << c << " -> " << to->name << " " << rounding_name(r);
        }
      }
    }
  }
}

}  // namespace
}  // namespace fp8q
