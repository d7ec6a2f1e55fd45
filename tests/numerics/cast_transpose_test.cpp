// numerics/cast_transpose.hpp: the fused pass equals convert() + a plain transpose + the
// amax of the input, bit for bit, on every instruction set this CPU runs, for shapes that are
// no multiple of the tiles, every rounding (stochastic keyed by the input index) and any
// thread count.
#include "fp8q/numerics/cast_transpose.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "format_types.hpp"
#include "fp8q/numerics/convert.hpp"

namespace fp8q {
namespace {

std::vector<std::byte> random_matrix(const Format& from, std::size_t n, std::uint64_t seed, bool nan) {
  std::mt19937_64 rng(seed);
  std::vector<std::byte> out(n * from.storage_bytes());
  for (std::size_t i = 0; i < n; ++i) {
    float x = std::ldexp(static_cast<float>(rng() % 100000) / 1000.0f, static_cast<int>(rng() % 30) - 20);
    if (rng() % 2) x = -x;
    if (nan && i == n / 2) x = NAN;
    const std::uint64_t code = convert_one(bits_of(x), kF32, from, {.overflow = Overflow::kInfOrNan}).code;
    std::memcpy(out.data() + i * from.storage_bytes(), &code, from.storage_bytes());
  }
  return out;
}

class CastTransposeOnIsa : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (!isa_supported(GetParam()))
      GTEST_SKIP() << "this CPU (or build) has no " << isa_name(GetParam()) << " path; not tested here";
  }
};

TEST_P(CastTransposeOnIsa, EqualsConvertTransposeAndAmax) {
  const std::pair<std::size_t, std::size_t> shapes[] = {{1, 1}, {16, 16}, {65, 129}, {200, 37}, {3, 300}, {130, 256}};
  for (const Format* from : {&kF32, &kBF16, &kF16})
    for (auto [rows, cols] : shapes)
      for (Rounding r : test::kAllRoundings)
        for (bool nan : {false, true}) {
          const auto in = random_matrix(*from, rows * cols, rows * 7 + cols, nan);
          ConvertOptions o;
          o.rounding = r;
          o.scale = 3.0f;
          o.seed = 17;
          const std::size_t n = rows * cols;
          std::vector<std::uint8_t> q(n), qt(n), want(n);
          const float amax = cast_transpose(in, *from, rows, cols, q, qt, kE4M3FN, o, {1, GetParam()});
          convert(in, *from, std::as_writable_bytes(std::span(want)), kE4M3FN, o, {1, GetParam()});
          ASSERT_EQ(q, want) << from->name << " " << rows << "x" << cols << " " << rounding_name(r);
          for (std::size_t i = 0; i < rows; ++i)
            for (std::size_t j = 0; j < cols; ++j) ASSERT_EQ(qt[j * rows + i], want[i * cols + j]) << i << "," << j;
          std::uint32_t m = 0;
          for (std::size_t i = 0; i < n; ++i) {
            std::uint64_t c = 0;
            std::memcpy(&c, in.data() + i * from->storage_bytes(), from->storage_bytes());
            m = std::max(m, bits_of(decode_f32(c, *from)) & 0x7FFFFFFFu);
          }
          if (nan) {
            EXPECT_TRUE(std::isnan(amax));
          } else {
            EXPECT_EQ(bits_of(amax), m);
          }
        }
}

TEST_P(CastTransposeOnIsa, SameBitsForAnyThreadCount) {
  const std::size_t rows = 700, cols = 333;
  const auto in = random_matrix(kBF16, rows * cols, 5, false);
  ConvertOptions o;
  o.rounding = Rounding::kStochastic;
  std::vector<std::uint8_t> q1(rows * cols), t1(rows * cols), q2(rows * cols), t2(rows * cols);
  const float a1 = cast_transpose(in, kBF16, rows, cols, q1, t1, kE5M2, o, {1, GetParam()});
  for (int t : {2, 5}) {
    const float a2 = cast_transpose(in, kBF16, rows, cols, q2, t2, kE5M2, o, {t, GetParam()});
    ASSERT_EQ(q1, q2);
    ASSERT_EQ(t1, t2);
    ASSERT_EQ(bits_of(a1), bits_of(a2));
  }
}

TEST(CastTranspose, NanErrorAndSizes) {
  std::vector<float> x(40, 1.0f);
  x[33] = NAN;
  std::vector<std::uint8_t> q(40), qt(40);
  try {
    cast_transpose(std::as_bytes(std::span(x)), kF32, 4, 10, q, qt, kE2M1);
    FAIL();
  } catch (const NanError& e) {
    EXPECT_EQ(e.index(), 33u);
  }
  std::vector<std::uint8_t> short_out(39);
  EXPECT_THROW(cast_transpose(std::as_bytes(std::span(x)), kF32, 4, 10, q, short_out, kE4M3FN), std::invalid_argument);
}

INSTANTIATE_TEST_SUITE_P(EveryIsa, CastTransposeOnIsa, ::testing::Values(Isa::kGeneric, Isa::kAvx2, Isa::kAvx512),
                         [](const auto& info) { return std::string(isa_name(info.param)); });

}  // namespace
}  // namespace fp8q
