// One emulated Trainium instruction at a time: the PE array's rounding against two independent
// oracles, nc_matmul and nc_matmul_mx column by column against the accumulation models'
// reference_dot, PSUM accumulation, and the errors that name operand and field.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "../../kernels/src/trainium/pe_arith.hpp"
#include "fp8q/kernels/trainium.hpp"
#include "fp8q/numerics/accumulation.hpp"
#include "fp8q/numerics/arith.hpp"
#include "fp8q/numerics/convert.hpp"
#include "fp8q/numerics/fp_env.hpp"
#include "gemm_fixture.hpp"

namespace fp8q {
namespace {

using M = AccumulationModel;
using F = FormatId;
namespace pe = trn::detail;

// ---- the PE's one rounding ----------------------------------------------------------------------
// fp32 bit patterns that stress alignment: subnormals, both ends of the exponent range, equal
// exponents (cancellation), and exponent gaps around 24-26 and 125-130 (the sticky cases).
float stress_float(std::mt19937_64& rng) {
  const std::uint32_t sign = static_cast<std::uint32_t>(rng() & 1) << 31;
  std::uint32_t field;
  switch (rng() % 4) {
    case 0: field = static_cast<std::uint32_t>(rng() % 3); break;            // subnormal / smallest
    case 1: field = static_cast<std::uint32_t>(100 + rng() % 60); break;     // near 1
    case 2: field = static_cast<std::uint32_t>(250 + rng() % 5); break;      // near overflow
    default: field = static_cast<std::uint32_t>(rng() % 255); break;
  }
  return float_of(sign | field << 23 | static_cast<std::uint32_t>(rng() & 0x7FFFFF));
}

TEST(TrainiumPe, AddRoundEqualsIntegerReferenceAndHardware) {
  std::mt19937_64 rng(1);
  // the host's own fp32 addition is a third oracle, under MXCSR 0x1F80 (nearest-even, no FTZ/DAZ)
  const ScopedDefaultFpEnv env;
  for (int i = 0; i < 400000; ++i) {
    const float x = stress_float(rng);
    float y = stress_float(rng);
    if (i % 3 == 0) y = float_of(bits_of(x) ^ 0x80000000u ^ static_cast<std::uint32_t>(rng() & 0xFF));  // cancel
    const float got = pe::add_round(pe::exact_of(x), pe::exact_of(y));
    volatile float vx = x, vy = y;
    const float host = vx + vy;
    ASSERT_EQ(bits_of(got), bits_of(add_f32_rne(x, y))) << x << " + " << y;
    if (!std::isnan(host)) ASSERT_EQ(bits_of(got), bits_of(host)) << x << " + " << y;
  }
}

// A product far from the accumulator (bf16 operands with big exponents, MX scales).
TEST(TrainiumPe, ProductIntoAccumulatorEqualsSequentialModel) {
  std::mt19937_64 rng(2);
  for (int i = 0; i < 200000; ++i) {
    const float t = stress_float(rng);
    const float a = float_of(bits_of(stress_float(rng)) & 0xFFFF0000u);  // bf16 values
    const float b = float_of(bits_of(stress_float(rng)) & 0xFFFF0000u);
    // fp32_sequential over (t * 1, a * b) from +0: fp32(fp32(0 + t) + a * b)
    const float a2[] = {t, a}, b2[] = {1.0f, b};
    const float want = reference_dot(M::fp32_sequential(), {.a = a2, .b = b2});
    const float got = pe::add_round(pe::exact_of(pe::round_f32(pe::exact_of(t))), pe::exact_product(a, b));
    ASSERT_EQ(bits_of(got), bits_of(want)) << t << " + " << a << " * " << b;
  }
}

// ---- nc_matmul ----------------------------------------------------------------------------------
struct PlainCase {
  F fa, fb;
  std::size_t k, m, n;
  trn::PerfMode mode;
};

TEST(TrainiumNcMatmul, EachColumnIsTheSystolicModel) {
  std::mt19937_64 rng(3);
  const PlainCase cases[] = {{F::kE4M3, F::kE5M2, 1, 1, 1, trn::PerfMode::kNone},
                             {F::kE5M2, F::kE5M2, 77, 5, 9, trn::PerfMode::kNone},
                             {F::kE4M3FN, F::kE3M4, 128, 128, 3, trn::PerfMode::kNone},
                             {F::kE4M3, F::kE4M3, 2, 3, 512, trn::PerfMode::kDoubleRow},
                             {F::kE5M2, F::kE4M3FN, 256, 4, 7, trn::PerfMode::kDoubleRow},
                             {F::kE5M2, F::kE5M2, 254, 2, 3, trn::PerfMode::kDoubleRow}};
  for (const PlainCase& c : cases) {
    const std::size_t rows = c.mode == trn::PerfMode::kDoubleRow ? 2 : 1, parts = c.k / rows;
    // tiles [parts][free][rows]; stationary column m is A's row m
    std::vector<std::uint8_t> st(parts * c.m * rows), mv(parts * c.n * rows);
    for (auto& x : st) x = testing::random_code(rng, format_of(c.fa), 40);
    for (auto& x : mv) x = testing::random_code(rng, format_of(c.fb), 40);
    std::vector<float> psum(c.m * c.n), start(c.m * c.n);
    for (auto& x : start) x = static_cast<float>(static_cast<int>(rng() % 2001) - 1000) * 0.731f;
    for (bool accumulate : {false, true}) {
      psum = start;
      trn::nc_matmul({c.m, c.n, psum}, {c.fa, parts, c.m, c.m, st}, {c.fb, parts, c.n, c.n, mv}, c.mode, accumulate);
      for (std::size_t m = 0; m < c.m; ++m)
        for (std::size_t n = 0; n < c.n; ++n) {
          std::vector<float> a(c.k), b(c.k);
          for (std::size_t k = 0; k < c.k; ++k) {  // K index k = partition * rows + r
            a[k] = decode_f32(st[((k / rows) * c.m + m) * rows + k % rows], format_of(c.fa));
            b[k] = decode_f32(mv[((k / rows) * c.n + n) * rows + k % rows], format_of(c.fb));
          }
          const float t = reference_dot(M::systolic(static_cast<int>(c.k)), {.a = a, .b = b});
          const float want = accumulate ? add_f32_rne(start[m * c.n + n], t) : t;
          ASSERT_EQ(bits_of(psum[m * c.n + n]), bits_of(want))
              << "K " << c.k << " (" << m << ", " << n << ") accumulate " << accumulate;
        }
    }
  }
}

// A strided view: the tile is a window of a wider SBUF buffer (what the tiled GEMM passes).
TEST(TrainiumNcMatmul, StridedViewReadsOnlyItsWindow) {
  std::mt19937_64 rng(4);
  const std::size_t parts = 9, stride = 20, m = 4, n = 6;
  std::vector<std::uint8_t> st(parts * stride), mv(parts * stride);
  for (auto& x : st) x = testing::random_code(rng, kE5M2, 0);
  for (auto& x : mv) x = testing::random_code(rng, kE5M2, 0);
  std::vector<float> psum(m * n), want(m * n);
  trn::nc_matmul({m, n, psum}, {F::kE5M2, parts, m, stride, std::span(st).subspan(3)},
                 {F::kE5M2, parts, n, stride, std::span(mv).subspan(5)});
  std::vector<std::uint8_t> st_dense(parts * m), mv_dense(parts * n);
  for (std::size_t p = 0; p < parts; ++p) {
    for (std::size_t i = 0; i < m; ++i) st_dense[p * m + i] = st[p * stride + 3 + i];
    for (std::size_t i = 0; i < n; ++i) mv_dense[p * n + i] = mv[p * stride + 5 + i];
  }
  trn::nc_matmul({m, n, want}, {F::kE5M2, parts, m, m, st_dense}, {F::kE5M2, parts, n, n, mv_dense});
  for (std::size_t i = 0; i < psum.size(); ++i) EXPECT_EQ(bits_of(psum[i]), bits_of(want[i])) << i;
}

// ---- nc_matmul_mx ---------------------------------------------------------------------------------
// One instruction on the layouts of quant/trainium3_layout.hpp, against trainium3_mx.
TEST(TrainiumNcMatmulMx, EachColumnIsTheTrainium3Model) {
  std::mt19937_64 rng(5);
  const Trainium3MxAssumptions assumptions[] = {{}, {.exact_partition_sum = false}, {.single_rounding_add = false}};
  for (const std::size_t k : {512u, 300u, 33u}) {
    const std::size_t m = 5, n = 7, kg = testing::cdiv(k, 32);
    std::vector<std::uint8_t> akm(k * m), bkn(k * n), sa(kg * m), sb(kg * n);  // [K][cols], OCP scales [K/32][cols]
    for (auto& x : akm) x = testing::random_code(rng, kE4M3FN, 0);
    for (auto& x : bkn) x = testing::random_code(rng, kE5M2, 0);
    for (auto& x : sa) x = static_cast<std::uint8_t>(120 + rng() % 15);
    for (auto& x : sb) x = static_cast<std::uint8_t>(120 + rng() % 15);
    // 1x32: the OCP scales are the compact scales
    std::vector<std::uint8_t> ca(trn3::onchip_codes_size(k, m)), cb(trn3::onchip_codes_size(k, n));
    std::vector<std::uint8_t> oa(trn3::onchip_scales_size(k, m)), ob(trn3::onchip_scales_size(k, n));
    trn3::to_onchip_codes(trn3::KLayout::k1x32, k, m, akm, ca);
    trn3::to_onchip_codes(trn3::KLayout::k1x32, k, n, bkn, cb);
    trn3::to_onchip_scales(trn3::KLayout::k1x32, k, m, sa, oa);
    trn3::to_onchip_scales(trn3::KLayout::k1x32, k, n, sb, ob);
    for (const Trainium3MxAssumptions& as : assumptions) {
      std::vector<float> psum(m * n);
      trn::nc_matmul_mx({m, n, psum}, {trn3::X4Type::kFloat8E4M3fnX4, 128, m, m, ca}, {m, oa},
                        {trn3::X4Type::kFloat8E5M2X4, 128, n, n, cb}, {n, ob}, as);
      for (std::size_t i = 0; i < m; ++i)
        for (std::size_t j = 0; j < n; ++j) {
          std::vector<float> a(k), b(k);
          std::vector<std::uint8_t> ea(kg), eb(kg);
          for (std::size_t kk = 0; kk < k; ++kk)
            a[kk] = decode_f32(akm[kk * m + i], kE4M3FN), b[kk] = decode_f32(bkn[kk * n + j], kE5M2);
          for (std::size_t g = 0; g < kg; ++g) ea[g] = sa[g * m + i], eb[g] = sb[g * n + j];
          const float want = reference_dot(M::trainium3_mx(Trn3Layout::k1x32, as),
                                           {.a = a, .b = b, .mx_scale_a = ea, .mx_scale_b = eb});
          ASSERT_EQ(bits_of(psum[i * n + j]), bits_of(want)) << "K " << k << " (" << i << ", " << j << ")";
        }
    }
  }
}

// ---- errors name the operand and the field ---------------------------------------------------------
template <class Fn>
void expect_error(const Fn& fn, const std::string& needle) {
  try {
    fn();
    ADD_FAILURE() << "no error, expected " << needle;
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(TrainiumNcMatmul, Errors) {
  std::vector<std::uint8_t> big(129 * 600, 0);
  std::vector<float> psum(128 * 512);
  auto run = [&](std::size_t pa, std::size_t ma, std::size_t pb, std::size_t nb, F fa = F::kE5M2,
                 trn::PerfMode mode = trn::PerfMode::kNone, std::size_t rows = 0, std::size_t cols = 0) {
    return [=, &big, &psum] {
      trn::nc_matmul({rows ? rows : ma, cols ? cols : nb, std::span(psum).first((rows ? rows : ma) * (cols ? cols : nb))},
                     {fa, pa, ma, ma, big}, {F::kE5M2, pb, nb, nb, big}, mode);
    };
  };
  expect_error(run(129, 4, 129, 4), "stationary.partitions: 129");
  expect_error(run(4, 129, 4, 4), "stationary.free: 129");
  expect_error(run(4, 4, 4, 513), "moving.free: 513");
  expect_error(run(4, 4, 5, 4), "stationary has 4 partitions, moving 5");
  expect_error(run(4, 4, 4, 4, F::kE5M2, trn::PerfMode::kNone, 3, 4), "dst: 3 x 4");
  expect_error(run(4, 4, 4, 4, F::kBF16, trn::PerfMode::kDoubleRow), "double_row mode takes FP8");
  expect_error(run(4, 4, 4, 4, F::kE8M0), "neither an FP8");
  std::vector<std::uint8_t> fp4(4 * 4, 0);
  fp4[2 * 4 + 1] = 0x10;
  expect_error([&] { trn::nc_matmul({4, 4, std::span(psum).first(16)}, {F::kE2M1, 4, 4, 4, fp4}, {F::kE2M1, 4, 4, 4, fp4}); },
               "stationary[partition 2, column 1]: byte 16 is not a e2m1 code");
  expect_error([&] { trn::nc_matmul({4, 4, std::span(psum).first(16)}, {F::kE5M2, 4, 4, 4, std::span(big).first(15)}, {F::kE5M2, 4, 4, 4, big}); },
               "stationary: 15 bytes, the view needs 16");
  std::vector<std::uint8_t> scales(128 * 4, 127);
  expect_error([&] {
    trn::nc_matmul_mx({4, 4, std::span(psum).first(16)}, {trn3::X4Type::kFloat8E4M3fnX4, 128, 4, 4, big}, {4, scales},
                      {trn3::X4Type::kFloat8E4M3fnX4, 128, 4, 4, big}, {4, std::span(scales).first(100)});
  }, "moving_scale: 100 bytes");
  // strides whose view size overflows: refused, not wrapped into a small size
  const std::size_t huge = std::size_t{1} << 63;
  expect_error([&] { trn::nc_matmul({1, 1, std::span(psum).first(1)}, {F::kE5M2, 3, 1, huge, std::span(big).first(1)},
                                    {F::kE5M2, 3, 1, 1, big}); },
               "stationary.partition_stride: 9223372036854775808 is too large to address");
  const std::size_t wraps = 186330748219288401u;  // 99 x this (the last scale partition) wraps to 83
  std::vector<std::uint8_t> x4(128 * 4, 0x38);
  expect_error([&] {
    trn::nc_matmul_mx({1, 1, std::span(psum).first(1)}, {trn3::X4Type::kFloat8E4M3fnX4, 128, 1, 1, x4},
                      {wraps, std::span(scales).first(100)}, {trn3::X4Type::kFloat8E4M3fnX4, 128, 1, 1, x4}, {4, scales});
  }, "stationary_scale.partition_stride: 186330748219288401 is too large to address");
}

}  // namespace
}  // namespace fp8q
