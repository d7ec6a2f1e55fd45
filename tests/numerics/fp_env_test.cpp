// numerics/fp_env.hpp: every driver runs its float arithmetic in the IEEE default environment
// (ScopedDefaultFpEnv), so a caller's control register (MXCSR or FPCR: round toward zero,
// flush-to-zero, denormals-are-zero) changes no bit of any output, on every instruction set this CPU runs,
// and is itself restored on return. Each case feeds inputs where such a mode would show:
// fp32 and fp16 subnormals, every bf16 pattern, products that round.
#include "fp8q/numerics/fp_env.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "fp8q/numerics/block_scaled.hpp"
#include "fp8q/numerics/bulk.hpp"
#include "fp8q/numerics/cast_transpose.hpp"
#include "fp8q/numerics/convert.hpp"
#include "hostile_fp_env.hpp"
#include "on_isa.hpp"

namespace fp8q {
namespace {

// Every 16-bit pattern (bf16 or fp16), as bytes.
std::vector<std::byte> every_16bit_pattern() {
  std::vector<std::uint16_t> v(65536);
  for (std::uint32_t i = 0; i < 65536; ++i) v[i] = static_cast<std::uint16_t>(i);
  std::vector<std::byte> out(v.size() * 2);
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

// fp32 patterns over every exponent field (subnormals included, a quarter of them), random
// fractions, both signs.
std::vector<std::byte> f32_patterns(std::size_t n) {
  std::mt19937_64 rng(20261130);
  std::vector<std::uint32_t> v(n);
  for (auto& x : v) {
    const std::uint64_t r = rng();
    const std::uint32_t e = r % 4 == 0 ? 0 : static_cast<std::uint32_t>((r >> 2) % 256);
    x = static_cast<std::uint32_t>(r >> 63) << 31 | e << 23 | static_cast<std::uint32_t>(r >> 10) & 0x7FFFFF;
  }
  std::vector<std::byte> out(n * 4);
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

// A driver run: its outputs as bytes (codes, scales, amax), for the given bulk options.
using DriverRun = std::function<std::vector<std::uint8_t>(const BulkOptions&)>;

void append_float(std::vector<std::uint8_t>& v, float f) {
  std::uint8_t b[4];
  std::memcpy(b, &f, 4);
  v.insert(v.end(), b, b + 4);
}

class FpEnvOnIsa : public test::OnIsa {
 protected:
  // The run on one thread in the default environment equals the run on two threads under a
  // hostile environment, and that environment is what the caller has afterwards.
  void expect_unchanged(const std::string& what, const DriverRun& run) {
    static_assert(test::kHaveHostileFpEnv, "no hostile FP environment for this architecture");
    const std::vector<std::uint8_t> plain = run({1, GetParam()});
    std::vector<std::uint8_t> odd;
    {
      test::ScopedHostileFpEnv env;  // toward zero, flush-to-zero
      odd = run({2, GetParam()});
      EXPECT_EQ(test::fp_control(), env.hostile()) << what << ": the caller's FP environment must be restored";
    }
    ASSERT_EQ(plain.size(), odd.size()) << what;
    std::size_t first = plain.size();
    for (std::size_t i = 0; i < plain.size() && first == plain.size(); ++i)
      if (plain[i] != odd[i]) first = i;
    EXPECT_EQ(first, plain.size()) << what << ": output byte " << first << " differs under the caller's FP environment";
  }
};

TEST_P(FpEnvOnIsa, ConvertInEveryKernel) {
  const auto f32 = f32_patterns(40000);
  const auto b16 = every_16bit_pattern();
  struct Case {
    const char* what;
    const std::vector<std::byte>* in;
    const Format* from;
    const Format* to;
    ConvertOptions o;
  };
  const Case cases[] = {
      {"f32 -> e4m3fn, nearest-even, x * 1.7", &f32, &kF32, &kE4M3FN, {.nan = NanPolicy::kZero, .scale = 1.7f}},
      {"bf16 -> e4m3fn, nearest-even, x * 4 (16-bit kernel)", &b16, &kBF16, &kE4M3FN, {.scale = 4.0f}},
      {"bf16 -> e5m2, toward zero, x / 3", &b16, &kBF16, &kE5M2,
       {.rounding = Rounding::kTowardZero, .scale = 3.0f, .scale_op = ScaleOp::kDivide}},
      {"f16 -> e4m3, up, x * 0.3", &b16, &kF16, &kE4M3, {.rounding = Rounding::kUp, .scale = 0.3f}},
      {"bf16 -> e2m1, stochastic", &b16, &kBF16, &kE2M1,
       {.rounding = Rounding::kStochastic, .nan = NanPolicy::kZero, .seed = 99}},
      {"f32 -> e3m4, odd, x * 2^-100", &f32, &kF32, &kE3M4,
       {.rounding = Rounding::kOdd, .nan = NanPolicy::kZero, .scale = std::ldexp(1.0f, -100)}},
  };
  for (const Case& c : cases) {
    const std::size_t n = c.in->size() / static_cast<std::size_t>(c.from->storage_bytes());
    expect_unchanged(c.what, [&](const BulkOptions& bulk) {
      std::vector<std::uint8_t> out(n);
      convert(*c.in, *c.from, std::as_writable_bytes(std::span(out)), *c.to, c.o, bulk);
      return out;
    });
  }
}

TEST_P(FpEnvOnIsa, ConvertWithAmax) {
  const auto f32 = f32_patterns(40000);
  expect_unchanged("convert_with_amax f32 -> e4m3fn, x * 1.7", [&](const BulkOptions& bulk) {
    std::vector<std::uint8_t> out(f32.size() / 4);
    const ConvertOptions o{.nan = NanPolicy::kZero, .scale = 1.7f};
    const float amax = convert_with_amax(f32, kF32, std::as_writable_bytes(std::span(out)), kE4M3FN, o, bulk);
    append_float(out, amax);
    return out;
  });
}

TEST_P(FpEnvOnIsa, MxAndBlockScaled) {
  const auto b16 = every_16bit_pattern();  // [256, 256] bf16, every pattern once
  Pow2ScaleTable table;  // the OCP floor rule for e4m3fn: code = E - 8, clamped to 0 .. 254
  for (int e = 1; e < 255; ++e) {
    table.base[e] = static_cast<std::uint8_t>(std::clamp(e - 8, 0, 254));
    table.threshold[e] = 1u << 23;
  }
  for (Rounding r : {Rounding::kNearestEven, Rounding::kDown}) {
    expect_unchanged(std::string("convert_mx bf16 -> e4m3fn, ") + std::string(rounding_name(r)),
                     [&](const BulkOptions& bulk) {
                       std::vector<std::uint8_t> out(65536 + 2048);
                       convert_mx(b16, kBF16, 256, 256, 32, std::span(out).first(65536), std::span(out).subspan(65536),
                                  kE4M3FN, table, {.rounding = r}, bulk);
                       return out;
                     });
  }
  const auto f32 = f32_patterns(128 * 96);
  const BlockGrid grid{128, 96, 32, 32};
  std::vector<float> scales(grid.grid_size());
  for (std::size_t i = 0; i < scales.size(); ++i) scales[i] = std::ldexp(1.3f, static_cast<int>(i % 7) * 20 - 60);
  expect_unchanged("convert_block_scaled f32 -> e4m3fn", [&](const BulkOptions& bulk) {
    std::vector<std::uint8_t> out(128 * 96);
    convert_block_scaled(f32, kF32, out, kE4M3FN, grid, scales, {.nan = NanPolicy::kZero}, bulk);
    return out;
  });
}

TEST_P(FpEnvOnIsa, CastTranspose) {
  const auto b16 = every_16bit_pattern();  // [256, 256]
  const auto f32 = f32_patterns(192 * 160);
  for (const auto& [in, from, rows, cols] : {std::tuple{&b16, &kBF16, std::size_t{256}, std::size_t{256}},
                                             std::tuple{&f32, &kF32, std::size_t{192}, std::size_t{160}}}) {
    expect_unchanged(std::string("cast_transpose ") + std::string(from->name) + " -> e4m3fn, x * 1.7",
                     [&](const BulkOptions& bulk) {
                       std::vector<std::uint8_t> out(2 * rows * cols);
                       const float amax = cast_transpose(*in, *from, rows, cols, std::span(out).first(rows * cols),
                                                         std::span(out).subspan(rows * cols), kE4M3FN,
                                                         {.nan = NanPolicy::kZero, .scale = 1.7f}, bulk);
                       append_float(out, amax);
                       return out;
                     });
  }
}

INSTANTIATE_TEST_SUITE_P(EveryIsa, FpEnvOnIsa, test::every_isa(), test::isa_test_name);

}  // namespace
}  // namespace fp8q
