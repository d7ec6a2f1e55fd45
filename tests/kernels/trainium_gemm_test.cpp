// The GEMM built from emulated Trainium instructions (gemm_trainium) equals gemm_reference
// bit for bit: random codes, shapes that are multiples of no tile (M tiles of 128, N tiles of
// 512, K tiles of 128 / 256 / 512, 128-K scale blocks), every instruction
// (nc_matmul, double_row, bf16 for Trainium2 MX, nc_matmul_mx in both layouts and under each
// Trainium3 assumption), every scaling, C and bias, fp32 and bf16 output, 1 and 3 threads.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "fp8q/kernels/gemm.hpp"
#include "fp8q/kernels/trainium.hpp"
#include "gemm_fixture.hpp"
#include "thread_counts.hpp"

namespace fp8q {
namespace {

using testing::Problem;
using testing::random_problem;
using testing::Shape;
using M = AccumulationModel;
using S = testing::Scales;
using F = FormatId;

// 1x1x1: one partial tile of everything; 130 rows: two M tiles; 513 columns: two N tiles;
// K 129 / 300 / 600 / 1030: partial K tiles of 128, 256 and 512 and several 128-K blocks;
// K = 0: no instruction at all.
constexpr Shape kShapes[] = {{1, 1, 1}, {130, 7, 300}, {7, 513, 129}, {9, 20, 600}, {3, 5, 0}, {4, 6, 1030}};

std::string describe(const Problem& p, const GemmOptions& o) {
  return std::to_string(p.m) + "x" + std::to_string(p.n) + "x" + std::to_string(p.k) + " " +
         std::string(format_of(p.fa).name) + "*" + std::string(format_of(p.fb).name) + " " + model_name(o.model) +
         (o.mx_dequantize_to_bf16 ? " (bf16 MX)" : "") + " scalings " + std::to_string(int(p.sa)) + "/" +
         std::to_string(int(p.sb));
}

void expect_tiled_equals_reference(const Problem& p, const GemmOptions& o) {
  const GemmArgs g = p.args();
  const std::string what = describe(p, o);
  std::vector<float> ref(p.m * p.n), tiled(p.m * p.n);
  gemm_reference(g, o, std::span<float>(ref));
  for (int threads : test::kThreadCounts) {
    GemmOptions t = o;
    t.threads = threads;
    std::fill(tiled.begin(), tiled.end(), -7.0f);
    trn::gemm_trainium(g, t, std::span<float>(tiled));
    for (std::size_t i = 0; i < ref.size(); ++i)
      ASSERT_EQ(bits_of(ref[i]), bits_of(tiled[i]))
          << what << " threads " << threads << " at (" << i / p.n << ", " << i % p.n << "): " << ref[i] << " vs "
          << tiled[i] << " via " << trn::trainium_instruction(g, o);
  }
  std::vector<std::uint16_t> ref16(p.m * p.n), tiled16(p.m * p.n);
  gemm_reference(g, o, std::span<std::uint16_t>(ref16));
  trn::gemm_trainium(g, o, std::span<std::uint16_t>(tiled16));
  EXPECT_EQ(ref16, tiled16) << what << " (bf16 output)";
}

// nc_matmul (systolic:128) and double_row (systolic:256): every plain scaling, C and bias.
TEST(TrainiumGemm, NcMatmulEqualsSystolicReference) {
  std::mt19937_64 rng(11);
  struct Variant {
    F fa, fb;
    S sa, sb;
    bool c, bias;
  };
  const Variant variants[] = {{F::kE4M3, F::kE5M2, S::kNone, S::kNone, false, false},
                              {F::kE4M3, F::kE4M3, S::kTensor, S::kPerChannel, true, false},
                              {F::kE5M2, F::kE3M4, S::kPerChannel, S::kTensor, false, true},
                              {F::kE4M3FN, F::kE5M2, S::kBlock128, S::kBlock128, true, true}};
  for (const Shape& s : kShapes)
    for (const Variant& v : variants)
      for (const M& model : {M::systolic(128), M::systolic(256)}) {
        const Problem p = random_problem(rng, s.m, s.n, s.k, v.fa, v.fb, v.sa, v.sb, v.c, v.bias, 300);
        expect_tiled_equals_reference(p, {.model = model});
      }
  // fp6 / fp4 codes on nc_matmul (one code per byte)
  const Problem p = random_problem(rng, 5, 9, 300, F::kE2M1, F::kE3M2, S::kTensor, S::kNone, false, false, 0);
  expect_tiled_equals_reference(p, {.model = M::systolic(128)});
}

// Special values often (one code in 20): NaN, Inf, Inf - Inf and overflow inside the PE array.
TEST(TrainiumGemm, SpecialValues) {
  std::mt19937_64 rng(12);
  for (const M& model : {M::systolic(128), M::systolic(256)}) {
    const Problem p = random_problem(rng, 6, 11, 400, F::kE5M2, F::kE5M2, S::kNone, S::kNone, true, false, 20);
    expect_tiled_equals_reference(p, {.model = model});
  }
  Problem p = random_problem(rng, 6, 11, 700, F::kE5M2, F::kE4M3FN, S::kMx32, S::kMx32, false, false, 20);
  for (auto& e : p.mx_a) e = static_cast<std::uint8_t>(rng() % 50 == 0 ? 0xFF : 200 + rng() % 50);  // big: overflow
  expect_tiled_equals_reference(p, {.model = M::trainium3_mx(Trn3Layout::k1x32)});
  expect_tiled_equals_reference(p, {.model = M::systolic(128), .mx_dequantize_to_bf16 = true});
}

// Trainium2's MX path: operands dequantized to bf16 (x * 2^e, nearest-even), then nc_matmul.
TEST(TrainiumGemm, Trainium2MxThroughBf16) {
  std::mt19937_64 rng(13);
  for (const Shape& s : kShapes)
    for (const auto& [sa, sb] : {std::pair{S::kMx32, S::kMx32}, std::pair{S::kMx32, S::kNone}, std::pair{S::kNone, S::kMx32}}) {
      Problem p = random_problem(rng, s.m, s.n, s.k, F::kE4M3FN, F::kE2M1, sa, sb, true, false, 0);
      // scales over E8M0's whole range: bf16(x * 2^e) over- and underflows at the ends
      for (auto* v : {&p.mx_a, &p.mx_b})
        for (auto& e : *v) e = static_cast<std::uint8_t>(rng() % 4 == 0 ? rng() % 255 : 120 + rng() % 15);
      expect_tiled_equals_reference(p, {.model = M::systolic(128), .mx_dequantize_to_bf16 = true});
    }
}

// A column sum that rounds to -0: one product -1 x 1 x 2^-254 (both MX scales 2^-127) in the
// last partition, every other product 0. The models add the instruction's t to a PSUM that
// starts at +0, so the result is +0; the first instruction of a tile stores fp32(+0 + t) too.
// Trainium2's bf16 path gets there with K = 1.
TEST(TrainiumGemm, ColumnSumRoundingToMinusZeroIsPlusZero) {
  for (Trn3Layout layout : {Trn3Layout::k1x32, Trn3Layout::kWrapX}) {
    Problem p{.m = 1, .n = 1, .k = 512, .fa = F::kE4M3FN, .fb = F::kE4M3FN, .sa = S::kMx32, .sb = S::kMx32};
    p.a.assign(512, 0x00);
    p.b.assign(512, 0x38);  // 1
    p.a[511] = 0xB8;        // -1 at K = 511: partition 127 in both layouts
    p.mx_a.assign(16, 127);
    p.mx_b.assign(16, 127);
    // the OCP blocks of K = 511's hardware group at 2^-127 on both sides (1x32: block 15;
    // wrapx: blocks 3, 7, 11 and 15)
    for (std::size_t j : {3u, 7u, 11u, 15u}) p.mx_a[j] = p.mx_b[j] = 0;
    const GemmOptions o{.model = M::trainium3_mx(layout)};
    std::vector<float> ref(1);
    gemm_reference(p.args(), o, std::span<float>(ref));
    EXPECT_EQ(bits_of(ref[0]), 0u) << model_name(o.model);
    expect_tiled_equals_reference(p, o);
  }
  Problem p{.m = 1, .n = 1, .k = 1, .fa = F::kE4M3FN, .fb = F::kE4M3FN, .sa = S::kMx32, .sb = S::kMx32};
  p.a = {0xB8}, p.b = {0x38}, p.mx_a = {0}, p.mx_b = {0};
  expect_tiled_equals_reference(p, {.model = M::systolic(128), .mx_dequantize_to_bf16 = true});
}

// nc_matmul_mx, layout 1x32: the OCP blocks of 32 consecutive K are the hardware's MX groups.
TEST(TrainiumGemm, NcMatmulMx1x32EqualsTrainium3Model) {
  std::mt19937_64 rng(14);
  const Trainium3MxAssumptions assumptions[] = {{}, {.exact_partition_sum = false}, {.single_rounding_add = false}};
  for (const Shape& s : kShapes)
    for (const auto& [fa, fb] : {std::pair{F::kE4M3FN, F::kE4M3FN}, std::pair{F::kE5M2, F::kE4M3FN}, std::pair{F::kE2M1, F::kE5M2}})
      for (const Trainium3MxAssumptions& a : assumptions) {
        Problem p = random_problem(rng, s.m, s.n, s.k, fa, fb, S::kMx32, S::kMx32, s.k % 2 == 0, true, 0);
        expect_tiled_equals_reference(p, {.model = M::trainium3_mx(Trn3Layout::k1x32, a)});
      }
}

// nc_matmul_mx, layout wrapx: an MX group is 4 runs of 8 K, 128 apart, which spans OCP blocks
// 16t + 4c + q (c = 0..3) of quadrant q = j % 4: scales that depend on (tile, j % 4) only are
// one scale per hardware group, and the tiled GEMM equals the model.
TEST(TrainiumGemm, NcMatmulMxWrapxEqualsTrainium3Model) {
  std::mt19937_64 rng(15);
  const Trainium3MxAssumptions assumptions[] = {{}, {.exact_partition_sum = false}, {.single_rounding_add = false}};
  for (const Shape& s : kShapes)
    for (const Trainium3MxAssumptions& a : assumptions) {
      Problem p = random_problem(rng, s.m, s.n, s.k, F::kE4M3FN, F::kE5M2, S::kMx32, S::kMx32, true, false, 0);
      const std::size_t kg = testing::cdiv(s.k, 32);
      const std::size_t tiles = testing::cdiv(s.k, 512);
      std::vector<std::uint8_t> per_a(s.m * tiles * 4), per_b(s.n * tiles * 4);
      for (auto& e : per_a) e = static_cast<std::uint8_t>(121 + rng() % 13);
      for (auto& e : per_b) e = static_cast<std::uint8_t>(121 + rng() % 13);
      for (std::size_t j = 0; j < kg; ++j) {
        for (std::size_t m = 0; m < s.m; ++m) p.mx_a[m * kg + j] = per_a[(m * tiles + j / 16) * 4 + j % 4];
        for (std::size_t n = 0; n < s.n; ++n) p.mx_b[j * s.n + n] = per_b[(n * tiles + j / 16) * 4 + j % 4];
      }
      expect_tiled_equals_reference(p, {.model = M::trainium3_mx(Trn3Layout::kWrapX, a)});
    }
}

// trainium3_mx on operands without MX scales (scale 2^0 in every group), plain and block scaled.
TEST(TrainiumGemm, NcMatmulMxWithoutMxScales) {
  std::mt19937_64 rng(16);
  for (const Shape& s : kShapes)
    for (const Trn3Layout layout : {Trn3Layout::kWrapX, Trn3Layout::k1x32})
      for (const auto& [sa, sb] : {std::pair{S::kTensor, S::kPerChannel}, std::pair{S::kBlock128, S::kBlock128}}) {
        const Problem p = random_problem(rng, s.m, s.n, s.k, F::kE5M2, F::kE4M3FN, sa, sb, false, true, 0);
        expect_tiled_equals_reference(p, {.model = M::trainium3_mx(layout)});
      }
}

// ---- what no instruction computes -------------------------------------------------------------
void expect_error(const Problem& p, const GemmOptions& o, const std::string& needle) {
  std::vector<float> out(p.m * p.n);
  try {
    trn::gemm_trainium(p.args(), o, std::span<float>(out));
    ADD_FAILURE() << "no error for " << describe(p, o);
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(TrainiumGemm, Errors) {
  std::mt19937_64 rng(17);
  // wrapx with OCP scales that differ inside one hardware group: K 0..7 (block 0) and
  // K 128..135 (block 4) share group 0
  Problem p = random_problem(rng, 2, 3, 200, F::kE4M3FN, F::kE4M3FN, S::kMx32, S::kMx32, false, false, 0);
  std::fill(p.mx_a.begin(), p.mx_a.end(), 127);
  std::fill(p.mx_b.begin(), p.mx_b.end(), 127);
  p.mx_a[1 * 7 + 4] = 130;  // a row 1, block 4
  expect_error(p, {.model = M::trainium3_mx(Trn3Layout::kWrapX)}, "a.scale_codes[1, 0] = 127 and a.scale_codes[1, 4] = 130");
  expect_error(p, {.model = M::systolic(128)}, "MX operands");
  Problem q = random_problem(rng, 2, 3, 20, F::kE4M3, F::kE4M3, S::kNone, S::kNone, false, false, 0);
  expect_error(q, {.model = M::fp32_sequential()}, "no Trainium instruction");
  expect_error(q, {.model = M::trainium3_mx(Trn3Layout::k1x32)}, "a is e4m3");
  Problem r = random_problem(rng, 2, 3, 20, F::kE4M3, F::kE2M1, S::kNone, S::kNone, false, false, 0);
  expect_error(r, {.model = M::systolic(256)}, "b is e2m1");
  q.c.assign(5, 0.0f);  // bad arguments get gemm.hpp's errors (check_gemm runs first)
  expect_error(q, {.model = M::systolic(128)}, "c: 5 values");
}

}  // namespace
}  // namespace fp8q
