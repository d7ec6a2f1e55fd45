// The fast exact_block, fused and trainium3_mx GEMM paths (kernels/src/fast_exact_block.cpp,
// kernels/src/fast_fused.cpp) equal the scalar reference bit for bit: random codes (NaN and Inf
// included), MX scales over E8M0's whole range (NaN scale too), every plain scaling, C and
// bias, fp32 and bf16 output, 1 to 4 threads, and shapes that are multiples of no tile (the
// exact_block tile is 6 x 16 with 128-column blocks and chunks of whole blocks near 256 K; the
// fused tile is 5 x 16 with 1024-column blocks and chunks of whole steps near 256 K). CTest
// runs this binary with the best ISA, with FP8Q_ISA=avx2 and with FP8Q_ISA=generic.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "fp8q/kernels/gemm.hpp"
#include "fp8q/numerics/isa.hpp"
#include "gemm_fixture.hpp"
#include "gemm_model_cases.hpp"
#include "hostile_fp_env.hpp"
#include "thread_counts.hpp"

namespace fp8q {
namespace {

using testing::exact_block_cancellation_cases;
using testing::exact_block_mx_cases;
using testing::exact_block_plain_cases;
using testing::exact_block_split_sum_cases;
using testing::fused_model_cases;
using testing::fused_special_cases;
using testing::name_of;
using testing::Problem;
using testing::random_problem;
using testing::Shape;
using testing::wide_mx_scales;
using M = AccumulationModel;
using S = testing::Scales;
using F = FormatId;

// The exact_block and fused paths' kernel under the active ISA (AVX2 on x86-64 at least).
std::string_view model_isa() {
  switch (active_isa()) {
    case Isa::kAvx512: return "avx512";
    case Isa::kAvx2: return "avx2";
    default: return "generic";
  }
}

// gemm() == gemm_reference() for 1..4 threads and for bf16 output; the fast path was taken.
void expect_same(const Problem& p, const M& model, bool expect_fast = true, std::string_view fast_path = "") {
  const std::string what = name_of(p, model);
  const GemmArgs g = p.args();
  std::vector<float> ref(p.m * p.n), fast(p.m * p.n);
  gemm_reference(g, {.model = model, .threads = 2}, std::span<float>(ref));
  for (int threads : test::kThreadCounts) {
    const GemmOptions o{.model = model, .threads = threads};
    std::fill(fast.begin(), fast.end(), -1.0f);
    gemm(g, o, std::span<float>(fast));
    for (std::size_t i = 0; i < ref.size(); ++i)
      ASSERT_EQ(bits_of(ref[i]), bits_of(fast[i]))
          << what << " threads " << threads << " path " << gemm_path(g, o) << " at [" << i / p.n << ", " << i % p.n
          << "]: reference " << ref[i] << ", fast " << fast[i];
  }
  std::vector<std::uint16_t> ref16(p.m * p.n), fast16(p.m * p.n);
  gemm_reference(g, {.model = model}, std::span<std::uint16_t>(ref16));
  gemm(g, {.model = model, .threads = 3}, std::span<std::uint16_t>(fast16));
  EXPECT_EQ(ref16, fast16) << what << " (bf16)";
  const std::string_view path = gemm_path(g, {.model = model});
  if (expect_fast && !fast_path.empty()) EXPECT_EQ(path, fast_path) << what;
  else if (expect_fast) EXPECT_EQ(path, model_isa()) << what;
  else EXPECT_EQ(path, "reference") << what;
}

// ---- exact_block ------------------------------------------------------------------------------

TEST(GemmFastModels, ExactBlockWithMxScales) {
  exact_block_mx_cases([](const Problem& p, const M& model) { expect_same(p, model); });
}

TEST(GemmFastModels, ExactBlockWithPlainAndBlockScaling) {
  exact_block_plain_cases([](const Problem& p, const M& model) { expect_same(p, model); });
}

// fp64 rounds 2^24 + 1 + 2^-32 to 2^24 + 1, a tie that fp32 rounds down to 2^24, while the
// exact sum rounds up to 2^24 + 2; the split sum (isa/exact_block.hpp) must get 2^24 + 2 (and
// 2^24 for 2^24 + 1 - 2^-32).
TEST(GemmFastModels, ExactBlockSplitSumRoundsTheExactValue) {
  exact_block_split_sum_cases([](const Problem& p, double tiny) {
    std::vector<float> d(p.m * p.n);
    gemm(p.args(), {.model = M::exact_block(32)}, std::span<float>(d));
    const float want = (tiny > 0 ? 16777218.0f : 16777216.0f) + 0.5f;  // + the second block, rounded
    for (float x : d) ASSERT_EQ(x, want) << "tiny " << tiny;
    expect_same(p, M::exact_block(32));
  });
}

// Over these 300 problems a direct fp64 sum alone gets 9 outputs wrong (checked while writing
// this test); the fast path must get none wrong.
TEST(GemmFastModels, ExactBlockCancellationAndTinyTails) {
  exact_block_cancellation_cases(300, [](const Problem& p, const M& model) {
    const GemmOptions o{.model = model, .threads = 2};
    std::vector<float> ref(p.m * p.n), fast(p.m * p.n);
    gemm_reference(p.args(), o, std::span<float>(ref));
    gemm(p.args(), o, std::span<float>(fast));
    for (std::size_t i = 0; i < ref.size(); ++i)
      ASSERT_EQ(bits_of(ref[i]), bits_of(fast[i])) << name_of(p, model) << " at " << i;
  });
}

// ---- fused ----------------------------------------------------------------------------------------

TEST(GemmFastModels, FusedModels) {
  fused_model_cases([](const Problem& p, const M& model) { expect_same(p, model); });
}

TEST(GemmFastModels, FusedSpecialValues) {
  fused_special_cases([](const Problem& p, const M& model) { expect_same(p, model); });
}

// Arguments without a fast path run the reference, with the same bits: a fused step whose
// integer sum could exceed 31 bits, fused on MX operands, MX exact blocks longer than an MX
// group, Trainium2's bf16 dequantization.
// ---- trainium3_mx ----------------------------------------------------------------------------

// nc_matmul_mx under A1 and A2 in the 1x32 layout: K across instructions of 512 and partial
// partitions (K % 4 != 0), MX scales over E8M0's whole range (NaN included) on one operand or
// both, specials, C and bias. e5m2 x e5m2 products span more than fp64 holds exactly in a sum
// of 4, so that pair runs the reference, as do wrapX and the other assumptions.
TEST(GemmFastModels, Trainium3MxOneByThirtyTwo) {
  // the column kernel of the active ISA (AVX-512 or AVX2); CTest also runs FP8Q_ISA=generic and avx2
  const Isa isa = active_isa();
  const std::string_view fast = isa == Isa::kAvx512 || isa == Isa::kAvx2 ? isa_name(isa) : "generic";
  std::mt19937_64 rng(21);
  const M model = M::trainium3_mx(Trn3Layout::k1x32);
  const std::tuple<F, F, S, S> variants[] = {
      {F::kE4M3FN, F::kE4M3FN, S::kMx32, S::kMx32}, {F::kE5M2, F::kE4M3FN, S::kMx32, S::kMx32},
      {F::kE4M3FN, F::kE5M2, S::kMx32, S::kNone},   {F::kE2M1, F::kE2M3, S::kMx32, S::kMx32},
      {F::kE3M2, F::kE4M3FN, S::kNone, S::kMx32},
  };
  std::vector<Shape> shapes(std::begin(testing::kModelShapes), std::end(testing::kModelShapes));
  shapes.push_back({5, 9, 1030});
  shapes.push_back({3, 40, 513});
  for (const Shape& s : shapes)
    for (const auto& [fa, fb, sa, sb] : variants) {
      Problem p = random_problem(rng, s.m, s.n, s.k, fa, fb, sa, sb, s.k % 2 == 0, s.m % 2 == 1, 60);
      wide_mx_scales(p, rng);
      expect_same(p, model, true, fast);
    }
  // near-cancelling partitions: t + s_p exact only with the two-sum (one code pair per partition
  // of opposite sign to the running sum, scales 2^-40 apart)
  for (int rep = 0; rep < 4; ++rep) {
    Problem p = random_problem(rng, 4, 6, 1024, F::kE4M3FN, F::kE4M3FN, S::kMx32, S::kMx32, false, false, 0);
    for (std::size_t i = 0; i < p.mx_a.size(); ++i) p.mx_a[i] = static_cast<std::uint8_t>(i % 2 == 0 ? 127 : 87);
    expect_same(p, model, true, fast);
  }
  Problem p = random_problem(rng, 9, 11, 600, F::kE5M2, F::kE5M2, S::kMx32, S::kMx32, true, true, 30);
  expect_same(p, model, false);
  p = random_problem(rng, 9, 11, 600, F::kE4M3FN, F::kE4M3FN, S::kMx32, S::kMx32, false, false, 30);
  expect_same(p, M::trainium3_mx(Trn3Layout::kWrapX), false);
  AccumulationModel rounded = model;
  rounded.trn3.exact_partition_sum = false;
  expect_same(p, rounded, false);
}

TEST(GemmFastModels, OtherArgumentsRunTheReference) {
  std::mt19937_64 rng(15);
  Problem p = random_problem(rng, 9, 11, 100, F::kE4M3FN, F::kE5M2, S::kNone, S::kNone, false, false, 30);
  expect_same(p, M::fused(64, 23, Rounding::kTowardZero), false);  // 65 * 2^25 > 2^31
  expect_same(p, M::fused_widths(2, 27, 23, Rounding::kTowardZero), false);  // A > 26
  expect_same(p, M::fused_widths(32, 13, 13, Rounding::kTowardZero, 2), false);  // product groups
  expect_same(p, M::fused_widths(32, 24, 23, Rounding::kNearestEven, 4, 128), false);
  p = random_problem(rng, 9, 11, 100, F::kE4M3FN, F::kE5M2, S::kMx32, S::kMx32, false, false, 30);
  expect_same(p, M::hopper(), false);
  expect_same(p, M::exact_block(64), false);
  const GemmOptions trn2{.model = M::exact_block(32), .mx_dequantize_to_bf16 = true};
  EXPECT_EQ(gemm_path(p.args(), trn2), "reference");
}

// A block longer than K is one block of K products: the fast path sizes its buffers by that
// (B = 2^30 on a 1x1x1 problem threw bad_alloc), and blocks of more than 4096 products run
// the reference.
TEST(GemmFastModels, LongBlocksAreSizedByTheirProducts) {
  std::mt19937_64 rng(17);
  Problem p = random_problem(rng, 7, 9, 300, F::kE4M3FN, F::kE4M3FN, S::kTensor, S::kPerChannel, true, true, 0);
  expect_same(p, M::exact_block(1 << 30));  // min(B, K) = 300 products
  p = random_problem(rng, 1, 1, 1, F::kE4M3FN, F::kE4M3FN, S::kNone, S::kNone, false, false, 0);
  expect_same(p, M::exact_block(1 << 30));
  p = random_problem(rng, 3, 4, 5000, F::kE4M3FN, F::kE4M3FN, S::kNone, S::kNone, false, false, 0);
  expect_same(p, M::exact_block(4096));
  expect_same(p, M::exact_block(4097), false);
  p = random_problem(rng, 5, 200, 1000, F::kE4M3FN, F::kE4M3FN, S::kBlock128, S::kBlock128, false, false, 0);
  expect_same(p, M::exact_block(1 << 30));  // block scaling: 128-K segments
}

// A caller that set round-toward-zero, FTZ and DAZ gets the same bits.
// GemmOptions::isa forces each fast path's kernel: every ISA this CPU has gives the reference's
// bits and names its kernel (AVX-512 -> AVX2 -> generic where a family lacks one); one it lacks
// is refused, naming the option, whatever the model.
TEST(GemmFastModels, EveryIsaTheCpuHasByTheOption) {
  std::mt19937_64 rng(31);
  Problem mx = random_problem(rng, 9, 40, 160, F::kE4M3FN, F::kE4M3FN, S::kMx32, S::kMx32, true, false, 0);
  Problem plain = random_problem(rng, 9, 40, 160, F::kE4M3FN, F::kE5M2, S::kTensor, S::kPerChannel, true, true, 0);
  const std::tuple<const Problem*, M, std::vector<std::string_view>> cases[] = {
      {&mx, M::exact_block(32), {"generic", "avx2", "avx512"}},
      {&plain, M::hopper(), {"generic", "avx2", "avx512"}},
      {&mx, M::trainium3_mx(Trn3Layout::k1x32), {"generic", "avx2", "avx512"}},
      {&plain, M::fp32_sequential(), {"generic", "avx2", "avx512", "avx512bf16"}},
  };
  for (const auto& [p, model, names] : cases) {
    const GemmArgs g = p->args();
    std::vector<float> ref(p->m * p->n), out(p->m * p->n);
    gemm_reference(g, {.model = model}, std::span<float>(ref));
    for (Isa isa : kAllIsas) {
      const GemmOptions o{.model = model, .threads = 2, .isa = isa};
      if (!isa_supported(isa)) {
        EXPECT_THROW(gemm(g, o, std::span<float>(out)), std::invalid_argument) << isa_name(isa);
        continue;
      }
      std::fill(out.begin(), out.end(), -1.0f);
      gemm(g, o, std::span<float>(out));
      for (std::size_t i = 0; i < ref.size(); ++i)
        ASSERT_EQ(bits_of(ref[i]), bits_of(out[i])) << model_name(model) << " under " << isa_name(isa) << " at " << i;
      const std::string_view path = gemm_path(g, o);
      if (isa == Isa::kGeneric) EXPECT_EQ(path, "generic") << model_name(model);
      EXPECT_NE(std::find(names.begin(), names.end(), path), names.end()) << model_name(model) << ": " << path;
    }
  }
}

TEST(GemmFastModels, CallerFpEnvironmentDoesNotMatter) {
  std::mt19937_64 rng(16);
  Problem p = random_problem(rng, 17, 19, 300, F::kE4M3FN, F::kE5M2, S::kMx32, S::kMx32, true, true, 0);
  wide_mx_scales(p, rng);
  const Problem q = random_problem(rng, 17, 19, 300, F::kE4M3FN, F::kE5M2, S::kPerChannel, S::kPerChannel, true, true, 0);
  for (const auto& [prob, model] : {std::pair<const Problem*, M>{&p, M::exact_block(32)}, std::pair<const Problem*, M>{&q, M::hopper()}}) {
    std::vector<float> want(prob->m * prob->n), got(want.size());
    gemm(prob->args(), {.model = model}, std::span<float>(want));
    {
      test::ScopedHostileFpEnv env;  // toward zero, flush-to-zero
      gemm(prob->args(), {.model = model, .threads = 2}, std::span<float>(got));
    }
    EXPECT_EQ(std::memcmp(want.data(), got.data(), want.size() * 4), 0) << model_name(model);
    expect_same(*prob, model);
  }
}

}  // namespace
}  // namespace fp8q
