// The fast GEMM path equals the scalar reference bit for bit: random codes (special values
// included), every scaling, C and bias, fp32 and bf16 output, shapes that are multiples of
// no tile (the micro-kernel is 6 x 16, K chunks 256, column blocks 256, row blocks 96), and
// 1 to 4 threads. CTest runs this binary twice: with the best ISA and with FP8Q_ISA=generic.
#include <gtest/gtest.h>

#include <cstring>
#include <tuple>

#include "fp8q/kernels/gemm.hpp"
#include "fp8q/numerics/isa.hpp"
#include "gemm_fixture.hpp"
#include "hostile_fp_env.hpp"
#include "thread_counts.hpp"

namespace fp8q {
namespace {

using testing::Problem;
using testing::random_problem;
using testing::Shape;
using M = AccumulationModel;
using S = testing::Scales;

// 1: degenerate; 7/33/130: no tile multiples; 97 rows: two row blocks; 1100 columns: two
// column blocks; K = 600: three K chunks; K = 0: empty sums.
constexpr Shape kShapes[] = {{1, 1, 1},  {7, 33, 130}, {130, 7, 33}, {33, 130, 7}, {97, 17, 260},
                             {5, 300, 40}, {2, 1100, 20}, {7, 20, 600}, {3, 5, 0},   {1, 130, 129}};

void expect_same(const Problem& p, const GemmOptions& o, const std::string& what) {
  const GemmArgs g = p.args();
  std::vector<float> ref(p.m * p.n), fast(p.m * p.n);
  GemmOptions ro = o;
  ro.threads = 2;
  gemm_reference(g, ro, std::span<float>(ref));
  for (int threads : test::kThreadCounts) {
    GemmOptions fo = o;
    fo.threads = threads;
    std::fill(fast.begin(), fast.end(), -1.0f);
    gemm(g, fo, std::span<float>(fast));
    ASSERT_EQ(std::memcmp(ref.data(), fast.data(), ref.size() * 4), 0)
        << what << " threads " << threads << " path " << gemm_path(g, fo);
  }
  std::vector<std::uint16_t> ref16(p.m * p.n), fast16(p.m * p.n);
  gemm_reference(g, ro, std::span<std::uint16_t>(ref16));
  gemm(g, o, std::span<std::uint16_t>(fast16));
  EXPECT_EQ(ref16, fast16) << what << " (bf16)";
}

TEST(GemmFast, EqualsReferenceAcrossShapesScalingsAndThreads) {
  std::mt19937_64 rng(42);
  const std::tuple<FormatId, FormatId, S, S, bool, bool> variants[] = {
      {FormatId::kE4M3FN, FormatId::kE4M3FN, S::kNone, S::kNone, false, false},
      {FormatId::kE5M2, FormatId::kE4M3FN, S::kTensor, S::kPerChannel, true, false},
      {FormatId::kE4M3, FormatId::kE5M2, S::kPerChannel, S::kTensor, false, true},
      {FormatId::kE4M3FN, FormatId::kE5M2, S::kBlock128, S::kBlock128, true, true},
      {FormatId::kE2M1, FormatId::kE3M4, S::kTensor, S::kNone, false, false},
  };
  std::cout << "fast path: " << isa_name(active_isa()) << "\n";
  for (const Shape& s : kShapes)
    for (const auto& [fa, fb, sa, sb, c, bias] : variants)
      for (const M& model : {M::fp32_sequential(), M::systolic(3), M::systolic(128), M::systolic(200), M::systolic(300)}) {
        const Problem p = random_problem(rng, s.m, s.n, s.k, fa, fb, sa, sb, c, bias, 400);
        const std::string what = std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k) + " " +
                                 std::string(format_of(fa).name) + "*" + std::string(format_of(fb).name) + " " +
                                 model_name(model);
        expect_same(p, {.model = model}, what);
      }
}

// Special values: NaN and Inf codes often (one code in 20), e5m2 products near fp32's top.
TEST(GemmFast, SpecialValuesAndOverflow) {
  std::mt19937_64 rng(7);
  Problem p = random_problem(rng, 13, 21, 70, FormatId::kE5M2, FormatId::kE5M2, S::kTensor, S::kTensor, true, false, 20);
  expect_same(p, {}, "e5m2 with specials");
  p.scale_a = {3.0e38f}, p.scale_b = {1.5f};  // fp32(acc * s) overflows to Inf
  expect_same(p, {}, "overflowing epilogue");
  p.scale_a = {1e-38f}, p.scale_b = {1e-7f};  // subnormal results
  expect_same(p, {}, "subnormal epilogue");
}

// A caller that set round-toward-zero, FTZ and DAZ gets the same bits.
TEST(GemmFast, CallerFpEnvironmentDoesNotMatter) {
  std::mt19937_64 rng(9);
  const Problem p = random_problem(rng, 17, 19, 300, FormatId::kE4M3FN, FormatId::kE5M2, S::kPerChannel, S::kPerChannel, true,
                                   true, 0);
  std::vector<float> want(p.m * p.n), got(p.m * p.n), got_ref(p.m * p.n);
  gemm(p.args(), {}, std::span<float>(want));
  {
    test::ScopedHostileFpEnv env;  // toward zero, flush-to-zero
    gemm(p.args(), {.threads = 2}, std::span<float>(got));
    gemm_reference(p.args(), {}, std::span<float>(got_ref));
  }
  EXPECT_EQ(std::memcmp(want.data(), got.data(), want.size() * 4), 0);
  EXPECT_EQ(std::memcmp(want.data(), got_ref.data(), want.size() * 4), 0);
}

// Models without a vectorised kernel run the reference in gemm(): same bits, any threads.
TEST(GemmFast, OtherModelsFallBackToTheReference) {
  std::mt19937_64 rng(5);
  const Problem p = random_problem(rng, 9, 11, 100, FormatId::kE4M3FN, FormatId::kE4M3FN, S::kBlock128, S::kBlock128,
                                   false, false, 0);
  for (const M& model : {M::hopper(), M::exact_block(32), M::systolic(128), M::systolic(64)}) {
    expect_same(p, {.model = model}, model_name(model));
  }
  EXPECT_EQ(gemm_path(p.args(), {.model = M::trainium3_mx(Trn3Layout::kWrapX)}), "reference");
  // block scaling + systolic: a tile under 128 splits a scale block (the reference); 128 and up do not
  EXPECT_EQ(gemm_path(p.args(), {.model = M::systolic(64)}), "reference");
  EXPECT_NE(gemm_path(p.args(), {.model = M::systolic(128)}), "reference");
  EXPECT_NE(gemm_path(p.args(), {}), "reference");
}

}  // namespace
}  // namespace fp8q
