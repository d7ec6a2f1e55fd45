// The AVX-512 exact_block and fused kernel texts (kernels/src/isa/exact_block_kernel.hpp,
// fused_kernel.hpp) equal the scalar reference bit for bit on any machine: instantiated here
// over the lane-by-lane emulation of their AVX-512 operations (ops_lanes16_models.hpp) and run
// through the drivers (exact_block_rows_with, fused_rows_with) on the inputs of
// gemm_fast_models_test.cpp and gemm_accumulator_test.cpp: random codes with NaN and Inf, MX
// scales over E8M0's whole range (sums that overflow or round into fp32 subnormals), split sums,
// cancellations near fp32 midpoints, C = -0 / +0 / tiny / huge as the accumulator input, K not a
// multiple of a block or step, edge tiles. Every other kernel this binary and CPU have (generic,
// AVX2, the real AVX-512 one) runs on the same inputs.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "fp8q/kernels/gemm.hpp"
#include "fp8q/numerics/convert.hpp"
#include "fp8q/numerics/isa.hpp"
#include "gemm_fixture.hpp"
#include "gemm_model_cases.hpp"
#include "isa/exact_block.hpp"
#include "isa/fused.hpp"
#include "model_paths.hpp"

namespace {
#include "isa/exact_block_kernel.hpp"
#include "isa/fused_kernel.hpp"
#include "ops_lanes16_models.hpp"

void exact_block_lanes16(const fp8q::detail::XbTile& t) { XbKernelT<OpsXbLanes16, 2>::run(t); }
void fused_lanes16(const fp8q::detail::FuTile& t) { FuKernelT<OpsFuLanes16>::run(t); }
}  // namespace

namespace fp8q {
namespace {

using testing::CValues;
using testing::exact_block_cancellation_cases;
using testing::fill_c;
using testing::exact_block_mx_cases;
using testing::exact_block_plain_cases;
using testing::exact_block_split_sum_cases;
using testing::fused_model_cases;
using testing::fused_special_cases;
using testing::name_of;
using testing::Problem;
using testing::random_problem;
using testing::Shape;
using M = AccumulationModel;
using S = testing::Scales;
using F = FormatId;

template <class K>
struct Named {
  K kernel;
  const char* name;
};

std::vector<Named<detail::XbKernel>> xb_kernels() {
  std::vector<Named<detail::XbKernel>> v = {{&exact_block_lanes16, "lanes16"}, {detail::exact_block_kernel_generic(), "generic"}};
  if (auto k = detail::exact_block_kernel_avx2()) v.push_back({k, "avx2"});
  if (auto k = detail::exact_block_kernel_avx512()) v.push_back({k, "avx512"});
  return v;
}

std::vector<Named<detail::FuKernel>> fu_kernels() {
  std::vector<Named<detail::FuKernel>> v = {{&fused_lanes16, "lanes16"}, {detail::fused_kernel_generic(), "generic"}};
  if (auto k = detail::fused_kernel_avx2()) v.push_back({k, "avx2"});
  if (auto k = detail::fused_kernel_avx512()) v.push_back({k, "avx512"});
  return v;
}

// The driver's rows with each kernel == gemm_reference (fp32), with one slab of all rows and
// with two (rows split at an odd row: tiles at the split are edge tiles).
void expect_same(const Problem& p, const M& model, CRole role = CRole::kEpilogue) {
  GemmArgs g = p.args();
  g.c_role = role;
  const GemmOptions o{.model = model};
  const bool xb = model.kind == AccumKind::kExactBlock;
  ASSERT_NE(xb ? detail::exact_block_path(g, o).rows : detail::fused_path(g, o).rows, nullptr) << name_of(p, model);
  std::vector<float> ref(p.m * p.n), out(p.m * p.n);
  gemm_reference(g, o, std::span<float>(ref));
  auto check = [&](const char* kernel) {
    for (std::size_t i = 0; i < ref.size(); ++i)
      ASSERT_EQ(bits_of(ref[i]), bits_of(out[i])) << name_of(p, model) << " kernel " << kernel << " at [" << i / p.n
                                                   << ", " << i % p.n << "]: reference " << ref[i] << ", got " << out[i];
  };
  const std::size_t split = p.m > 1 ? (p.m / 2) | 1 : p.m;
  auto run = [&](auto kernel, const char* name) {
    auto rows = [&](std::size_t m0, std::size_t m1) {
      if constexpr (std::is_same_v<decltype(kernel), detail::XbKernel>)
        detail::exact_block_rows_with(kernel, g, o, m0, m1, out.data() + m0 * p.n);
      else
        detail::fused_rows_with(kernel, g, o, m0, m1, out.data() + m0 * p.n);
    };
    for (std::size_t m1 : {p.m, split}) {
      std::fill(out.begin(), out.end(), -1.0f);
      rows(0, m1);
      if (m1 < p.m) rows(m1, p.m);
      check(name);
    }
  };
  if (xb)
    for (const auto& k : xb_kernels()) run(k.kernel, k.name);
  else
    for (const auto& k : fu_kernels()) run(k.kernel, k.name);
}

// ---- exact_block ------------------------------------------------------------------------------

TEST(GemmModelsLanes16, ExactBlockWithMxScales) {
  exact_block_mx_cases([](const Problem& p, const M& model) { expect_same(p, model); });
}

TEST(GemmModelsLanes16, ExactBlockWithPlainAndBlockScaling) {
  exact_block_plain_cases([](const Problem& p, const M& model) { expect_same(p, model); });
}

// The split sum's round-to-odd: e5m2 blocks whose exact sum is 2^24 + 1 +/- 2^-32.
TEST(GemmModelsLanes16, ExactBlockSplitSumRoundsTheExactValue) {
  exact_block_split_sum_cases([](const Problem& p, double) { expect_same(p, M::exact_block(32)); });
}

TEST(GemmModelsLanes16, ExactBlockCancellationAndTinyTails) {
  exact_block_cancellation_cases(150, [](const Problem& p, const M& model) { expect_same(p, model); });
}

// C as the accumulator input (-0 stays -0 when every product is -0), and all-zero operands of
// both signs: the sums that start at -0.
TEST(GemmModelsLanes16, ExactBlockAccumulatorInputAndSignedZeros) {
  std::mt19937_64 rng(42);
  for (const Shape& s : {Shape{1, 1, 1}, Shape{7, 33, 130}, Shape{13, 300, 40}, Shape{3, 5, 0}})
    for (bool kernel_range : {true, false}) {
      for (const auto& [fa, fb, sa, sb, block] :
           {std::tuple{F::kE4M3FN, F::kE4M3FN, S::kNone, S::kNone, 32}, std::tuple{F::kE5M2, F::kE5M2, S::kMx32, S::kMx32, 32},
            std::tuple{F::kE4M3FN, F::kE5M2, S::kMx32, S::kNone, 16},
            std::tuple{F::kE4M3FN, F::kE4M3FN, S::kBlock128, S::kBlock128, 32}}) {
        Problem p = random_problem(rng, s.m, s.n, s.k, fa, fb, sa, sb, false, true, 200);
        fill_c(p, rng, kernel_range ? CValues::kKernelRange : CValues::kAnything);
        expect_same(p, M::exact_block(block), CRole::kAccumulator);
        for (auto& c : p.a) c = rng() % 3 == 0 ? 0x80 : rng() % 2 == 0 ? 0x00 : c;  // +/-0 codes
        for (auto& c : p.b) c = rng() % 2 == 0 ? 0x80 : 0x00;
        expect_same(p, M::exact_block(block), CRole::kAccumulator);
      }
    }
}

// ---- fused ------------------------------------------------------------------------------------

TEST(GemmModelsLanes16, FusedModels) {
  fused_model_cases([](const Problem& p, const M& model) { expect_same(p, model); });
}

TEST(GemmModelsLanes16, FusedSpecialValues) {
  fused_special_cases([](const Problem& p, const M& model) { expect_same(p, model); });
}

// C as the accumulator input inside the kernel's range (+/-0, 2^-100 and 2^125 included) or
// anything where C starts a plain fp32 sum (promotion, block scaling); signed-zero operands.
TEST(GemmModelsLanes16, FusedAccumulatorInputAndSignedZeros) {
  std::mt19937_64 rng(43);
  const M rtz = M::hopper(), rne = M::fused(32, 13, Rounding::kNearestEven), promoted = M::fused(32, 13, Rounding::kTowardZero, 128);
  for (const Shape& s : {Shape{1, 1, 1}, Shape{7, 33, 130}, Shape{13, 300, 40}, Shape{97, 17, 260}, Shape{3, 5, 0}}) {
    for (const M& m : {rtz, rne, M::fused_widths(8, 12, 23, Rounding::kTowardZero)}) {
      Problem p = random_problem(rng, s.m, s.n, s.k, F::kE4M3FN, F::kE5M2, S::kTensor, S::kTensor, false, true, 200);
      fill_c(p, rng, CValues::kKernelRange);
      expect_same(p, m, CRole::kAccumulator);
      for (auto& c : p.a) c = rng() % 3 == 0 ? 0x80 : rng() % 2 == 0 ? 0x00 : c;
      for (auto& c : p.b) c = rng() % 2 == 0 ? 0x80 : 0x00;
      expect_same(p, m, CRole::kAccumulator);
    }
    for (const auto& [model, sc] : {std::pair{promoted, S::kTensor}, std::pair{rtz, S::kBlock128}}) {
      Problem p = random_problem(rng, s.m, s.n, s.k, F::kE4M3FN, F::kE4M3FN, sc, sc, false, true, 200);
      fill_c(p, rng, CValues::kAnything);
      expect_same(p, model, CRole::kAccumulator);
    }
  }
}

// The getters follow the project's dispatch rule: the AVX-512 kernels exist exactly where the
// CPU has AVX-512 F + BW (and this build compiles them).
TEST(GemmModelsLanes16, Avx512KernelsExistWhereTheCpuHasThem) {
  EXPECT_EQ(detail::exact_block_kernel_avx512() != nullptr, isa_supported(Isa::kAvx512));
  EXPECT_EQ(detail::fused_kernel_avx512() != nullptr, isa_supported(Isa::kAvx512));
}

}  // namespace
}  // namespace fp8q
