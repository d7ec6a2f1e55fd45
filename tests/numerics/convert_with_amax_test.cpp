// numerics/bulk.hpp, convert_with_amax(): the codes equal convert()'s and the amax equals a
// plain loop's largest |x| (decoded with the scalar reference), on every instruction set this
// CPU runs, for any thread count and length (pieces of kAmaxPiece, their edges, the tails);
// NaN anywhere gives NaN, Inf gives Inf, a NaN the target cannot hold is named as convert()
// names it. Targets without a SIMD kernel take the path that converts, then reads the amax.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "fp8q/numerics/bulk.hpp"
#include "fp8q/numerics/convert.hpp"
#include "on_isa.hpp"
#include "thread_counts.hpp"

namespace fp8q {
namespace {

// n elements of `from`: N(0, 1) values times 2^k for a k per element in [-30, 30] (so that
// the largest |x| sits anywhere), encoded by the scalar reference.
std::vector<std::byte> random_input(const Format& from, std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::uniform_int_distribution<int> exp(-30, 30);
  std::vector<std::byte> in(n * from.storage_bytes());
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t c = convert_one(bits_of(std::ldexp(normal(rng), exp(rng))), kF32, from, {}).code;
    std::memcpy(in.data() + i * from.storage_bytes(), &c, from.storage_bytes());
  }
  return in;
}

void put(std::vector<std::byte>& in, const Format& from, std::size_t i, std::uint64_t code) {
  std::memcpy(in.data() + i * from.storage_bytes(), &code, from.storage_bytes());
}

// The reference amax: max |decode(x_i)| in a plain loop, NaN if any element is NaN, +0 if none.
float reference_amax(std::span<const std::byte> in, const Format& from) {
  const std::size_t ib = from.storage_bytes();
  float m = 0.0f;
  for (std::size_t i = 0; i < in.size() / ib; ++i) {
    std::uint64_t c = 0;
    std::memcpy(&c, in.data() + i * ib, ib);
    const float v = std::fabs(decode_f32(c, from));
    if (std::isnan(v)) return std::numeric_limits<float>::quiet_NaN();
    m = std::max(m, v);
  }
  return m;
}

class ConvertWithAmaxOnIsa : public test::OnIsa {
 protected:
  // codes == convert(); amax == reference (bit for bit, or both NaN)
  void check(std::span<const std::byte> in, const Format& from, const Format& to, const ConvertOptions& o,
             int threads, const std::string& what) {
    const std::size_t n = in.size() / from.storage_bytes();
    std::vector<std::byte> got(n * to.storage_bytes()), want(got.size());
    const float amax = convert_with_amax(in, from, got, to, o, {threads, GetParam()});
    convert(in, from, want, to, o, {1, GetParam()});
    ASSERT_EQ(got, want) << what << ": codes differ from convert()";
    const float ref = reference_amax(in, from);
    if (std::isnan(ref)) {
      EXPECT_TRUE(std::isnan(amax)) << what << ": amax " << amax << ", want NaN";
    } else {
      EXPECT_EQ(bits_of(amax), bits_of(ref)) << what << ": amax " << amax << ", want " << ref;
    }
  }
};

TEST_P(ConvertWithAmaxOnIsa, EveryLengthAroundThePiecesAndThreadCount) {
  ConvertOptions o;
  o.scale = 56.0f;  // not a power of two: the fp32 kernel for bf16 too
  for (const Format* from : {&kF32, &kBF16, &kF16})
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{31}, std::size_t{33}, kAmaxPiece - 1, kAmaxPiece,
                          kAmaxPiece + 1, 3 * kAmaxPiece + 77})
      for (int threads : test::kThreadCounts) {
        const auto in = random_input(*from, n, static_cast<std::uint32_t>(n * 7 + threads));
        check(in, *from, kE4M3FN, o, threads,
              std::string(from->name) + " n=" + std::to_string(n) + " threads=" + std::to_string(threads));
      }
}

TEST_P(ConvertWithAmaxOnIsa, EveryTargetRoundingAndScaleKind) {
  // the SIMD targets, the power-of-two scale of the 16-bit bf16 kernel, division, rounding
  // modes beside nearest-even; and wide targets (bf16, f16, fp32: the two-pass path)
  const std::size_t n = 2 * kAmaxPiece + 5;
  for (const Format* from : {&kF32, &kBF16, &kF16}) {
    const auto in = random_input(*from, n, 11);
    for (const Format* to : {&kE4M3FN, &kE5M2, &kE4M3FNUZ, &kE2M1, &kBF16, &kF16, &kF32})
      for (Rounding r : {Rounding::kNearestEven, Rounding::kTowardZero, Rounding::kStochastic})
        for (float scale : {1.0f, 64.0f, 3.0f})
          for (ScaleOp op : {ScaleOp::kMultiply, ScaleOp::kDivide}) {
            ConvertOptions o;
            o.rounding = r;
            o.scale = scale;
            o.scale_op = op;
            o.nan = NanPolicy::kZero;
            check(in, *from, *to, o, 2,
                  std::string(from->name) + " -> " + std::string(to->name) + " " + std::string(rounding_name(r)) +
                      (op == ScaleOp::kDivide ? " / " : " * ") + std::to_string(scale));
          }
  }
}

TEST_P(ConvertWithAmaxOnIsa, NanInfAndTheLargestFiniteAtEveryKindOfPosition) {
  const std::size_t n = 2 * kAmaxPiece + 40;
  for (const Format* from : {&kF32, &kBF16, &kF16})
    for (std::size_t at : {std::size_t{0}, std::size_t{17}, kAmaxPiece - 1, kAmaxPiece, n - 1}) {
      const std::string where = std::string(from->name) + " at " + std::to_string(at);
      const std::uint64_t sign = std::uint64_t{1} << (from->bits() - 1);
      const std::uint64_t inf = from->inf_code(), nan = from->canonical_nan();
      const std::uint64_t largest = from->max_finite_code();
      for (std::uint64_t special : {nan, nan | sign, inf, inf | sign, largest | sign}) {
        auto in = random_input(*from, n, 5);
        put(in, *from, at, special);
        ConvertOptions o;
        o.nan = NanPolicy::kZero;
        check(in, *from, kE4M3FN, o, 2, where);
      }
      // -0 everywhere: amax +0
      std::vector<std::byte> zeros(n * from->storage_bytes());
      for (std::size_t i = 0; i < n; ++i) put(zeros, *from, i, sign);
      std::vector<std::byte> out(n);
      EXPECT_EQ(bits_of(convert_with_amax(zeros, *from, out, kE4M3FN, {}, {2, GetParam()})), 0u) << where;
    }
}

TEST_P(ConvertWithAmaxOnIsa, NanIntoAFormatWithoutNanNamesTheFirstIndexAsConvertDoes) {
  auto in = random_input(kBF16, 3 * kAmaxPiece, 9);
  put(in, kBF16, kAmaxPiece + 3, kBF16.canonical_nan());
  put(in, kBF16, 2 * kAmaxPiece + 9, kBF16.canonical_nan());
  std::vector<std::byte> out(3 * kAmaxPiece);
  for (int threads : test::kThreadCounts) {
    try {
      convert_with_amax(in, kBF16, out, kE2M1, {}, {threads, GetParam()});
      ADD_FAILURE() << threads << " threads: no NanError";
    } catch (const NanError& e) {
      EXPECT_EQ(e.index(), kAmaxPiece + 3) << threads << " threads";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(EveryIsa, ConvertWithAmaxOnIsa, test::every_isa(), test::isa_test_name);

TEST(ConvertWithAmax, OnlyWideSourcesAndCheckedSizes) {
  std::vector<std::byte> in(64), out(64);
  EXPECT_THROW(convert_with_amax(in, kE4M3FN, out, kE5M2), std::invalid_argument);
  EXPECT_THROW(convert_with_amax(in, kBF16, out, kE4M3FN), std::invalid_argument);  // 32 elements, 64 codes
  EXPECT_THROW(convert_with_amax(std::span(in).first(63), kBF16, std::span(out).first(31), kE4M3FN),
               std::invalid_argument);  // half an element
  std::vector<std::byte> half(32);
  EXPECT_NO_THROW(convert_with_amax(in, kBF16, half, kE4M3FN));
  EXPECT_THROW(convert_with_amax(in, kBF16, half, kE4M3FN, {}, {0, std::nullopt}), std::invalid_argument);
}

}  // namespace
}  // namespace fp8q
