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

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "fp8q/kernels/gemm.hpp"
#include "fp8q/numerics/convert.hpp"
#include "fp8q/numerics/isa.hpp"
#include "gemm_fixture.hpp"
#include "isa/exact_block.hpp"
#include "isa/fused.hpp"
#include "model_paths.hpp"

namespace {
#include "isa/exact_block_kernel.hpp"
#include "isa/fused_kernel.hpp"
#include "ops_lanes16_models.hpp"

void exact_block_lanes16(const fp8q::detail::XbTile& t) { XbKernelT<OpsXbLanes16>::run(t); }
void fused_lanes16(const fp8q::detail::FuTile& t) { FuKernelT<OpsFuLanes16>::run(t); }
}  // namespace

namespace fp8q {
namespace {

using testing::Problem;
using testing::random_problem;
using testing::Shape;
using testing::wide_mx_scales;
using M = AccumulationModel;
using S = OperandScaling;
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

std::string name_of(const Problem& p, const M& model) {
  return std::to_string(p.m) + "x" + std::to_string(p.n) + "x" + std::to_string(p.k) + " " +
         std::string(format_of(p.fa).name) + "*" + std::string(format_of(p.fb).name) + " " + model_name(model);
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

constexpr Shape kShapes[] = {{1, 1, 1},    {7, 33, 130}, {130, 7, 33},  {13, 300, 40},
                             {97, 17, 260}, {2, 1100, 20}, {7, 20, 600}, {3, 5, 0}};

// C values that matter as the accumulator input: +/-0, subnormals, NaN, Inf, tiny and huge
// (kernel_range: only +/-0 and 2^-100 <= |C| < 2^126, the fused kernel's range).
void fill_c(Problem& p, std::mt19937_64& rng, bool kernel_range) {
  const float inf = std::numeric_limits<float>::infinity();
  p.c.resize(p.m * p.n);
  for (float& c : p.c) {
    const unsigned r = static_cast<unsigned>(rng() % 100);
    const float v = static_cast<float>(static_cast<int>(rng() % 2001) - 1000) * 0.37f;
    if (r < 60) c = v;
    else if (r < 75) c = r % 2 == 0 ? 0.0f : -0.0f;
    else if (r < 85) c = std::ldexp(v, static_cast<int>(rng() % 60) - 30);
    else if (kernel_range) c = std::ldexp(1.0f + static_cast<float>(r) / 128.0f, r % 2 == 0 ? -100 : 125);
    else if (r < 88) c = std::nanf("");
    else if (r < 91) c = r % 2 == 0 ? inf : -inf;
    else if (r < 96) c = std::ldexp(v, -140);  // subnormal
    else c = r % 2 == 0 ? 0x1p-110f : -0x1.8p126f;
  }
}

// ---- exact_block ------------------------------------------------------------------------------

TEST(GemmModelsLanes16, ExactBlockWithMxScales) {
  std::mt19937_64 rng(11);
  const std::tuple<F, F, S, S> variants[] = {
      {F::kE4M3FN, F::kE4M3FN, S::kMx32, S::kMx32}, {F::kE4M3FN, F::kE5M2, S::kMx32, S::kMx32},
      {F::kE5M2, F::kE5M2, S::kMx32, S::kMx32},     {F::kE2M1, F::kE2M3, S::kMx32, S::kNone},
      {F::kE3M2, F::kE4M3FN, S::kNone, S::kMx32},
  };
  for (const Shape& s : kShapes)
    for (const auto& [fa, fb, sa, sb] : variants)
      for (const M& model : {M::exact_block(32), M::exact_block(8)}) {
        Problem p = random_problem(rng, s.m, s.n, s.k, fa, fb, sa, sb, s.k % 2 == 0, s.m % 2 == 1, 60);
        wide_mx_scales(p, rng);
        expect_same(p, model);
      }
}

TEST(GemmModelsLanes16, ExactBlockWithPlainAndBlockScaling) {
  std::mt19937_64 rng(12);
  const std::tuple<F, F, S, S> variants[] = {
      {F::kE4M3FN, F::kE4M3FN, S::kTensor, S::kPerRow}, {F::kE5M2, F::kE4M3, S::kPerRow, S::kTensor},
      {F::kE4M3FN, F::kE5M2, S::kBlock128, S::kBlock128}, {F::kE5M2FNUZ, F::kE3M4, S::kNone, S::kNone},
  };
  for (const Shape& s : kShapes)
    for (const auto& [fa, fb, sa, sb] : variants)
      for (const M& model : {M::exact_block(32), M::exact_block(7), M::exact_block(100), M::exact_block(300)}) {
        const Problem p = random_problem(rng, s.m, s.n, s.k, fa, fb, sa, sb, true, false, 40);
        expect_same(p, model);
      }
}

// The split sum's round-to-odd: e5m2 blocks whose exact sum is 2^24 + 1 +/- 2^-32.
TEST(GemmModelsLanes16, ExactBlockSplitSumRoundsTheExactValue) {
  auto code = [](double v) { return static_cast<std::uint8_t>(encode_f64(v, kE5M2)); };
  for (const double tiny : {std::ldexp(1.0, -32), -std::ldexp(1.0, -32)}) {
    Problem p{.m = 7, .n = 9, .k = 64, .fa = F::kE5M2, .fb = F::kE5M2};
    p.a.assign(p.m * p.k, 0), p.b.assign(p.k * p.n, 0);
    for (std::size_t m = 0; m < p.m; ++m) {
      p.a[m * p.k + 3] = code(4096.0), p.a[m * p.k + 10] = code(1.0), p.a[m * p.k + 31] = code(std::ldexp(1.0, -16));
      p.a[m * p.k + 40] = code(1.0);
    }
    for (std::size_t n = 0; n < p.n; ++n) {
      p.b[3 * p.n + n] = code(4096.0), p.b[10 * p.n + n] = code(1.0), p.b[31 * p.n + n] = code(std::ldexp(tiny, 16));
      p.b[40 * p.n + n] = code(0.5);
    }
    expect_same(p, M::exact_block(32));
  }
}

// Blocks mixing large magnitudes of both signs (which cancel), ones and small powers of two,
// with and without MX scales: sums on and near fp32 midpoints, tails far below fp64's precision.
TEST(GemmModelsLanes16, ExactBlockCancellationAndTinyTails) {
  std::mt19937_64 rng(123);
  auto value = [&] {
    const unsigned r = static_cast<unsigned>(rng() % 10);
    double v = r < 3   ? std::ldexp(1.0 + static_cast<double>(rng() % 4) / 4.0, 10 + static_cast<int>(rng() % 4))
               : r < 6 ? std::ldexp(1.0, -static_cast<int>(rng() % 17))
               : r < 8 ? 1.0
                       : 0.0;
    return rng() % 2 == 0 ? v : -v;
  };
  const F formats[] = {F::kE5M2, F::kE4M3FN, F::kE5M2FNUZ};
  constexpr ConvertOptions kSat{.rounding = Rounding::kNearestEven, .overflow = Overflow::kSaturate};
  for (int it = 0; it < 150; ++it) {
    const std::size_t m = 1 + rng() % 13, n = 1 + rng() % 20, k = 1 + rng() % 100;
    const F fa = formats[rng() % 3], fb = formats[rng() % 3];
    const bool mx = rng() % 2 == 0;
    Problem p{.m = m, .n = n, .k = k, .fa = fa, .fb = fb, .sa = mx ? S::kMx32 : S::kNone, .sb = mx ? S::kMx32 : S::kNone};
    p.a.resize(m * k), p.b.resize(k * n);
    for (auto& c : p.a) c = static_cast<std::uint8_t>(encode_f64(value(), format_of(fa), kSat));
    for (auto& c : p.b) c = static_cast<std::uint8_t>(encode_f64(value(), format_of(fb), kSat));
    if (mx) {
      p.mx_a.resize(m * testing::cdiv(k, 32)), p.mx_b.resize(testing::cdiv(k, 32) * n);
      for (auto* v : {&p.mx_a, &p.mx_b})
        for (auto& e : *v) e = static_cast<std::uint8_t>(100 + rng() % 50);
    }
    for (int block : {32, 16, 4}) expect_same(p, M::exact_block(block));
  }
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
        fill_c(p, rng, kernel_range);
        expect_same(p, M::exact_block(block), CRole::kAccumulator);
        for (auto& c : p.a) c = rng() % 3 == 0 ? 0x80 : rng() % 2 == 0 ? 0x00 : c;  // +/-0 codes
        for (auto& c : p.b) c = rng() % 2 == 0 ? 0x80 : 0x00;
        expect_same(p, M::exact_block(block), CRole::kAccumulator);
      }
    }
}

// ---- fused ------------------------------------------------------------------------------------

TEST(GemmModelsLanes16, FusedModels) {
  std::mt19937_64 rng(13);
  const std::tuple<F, F, S, S> variants[] = {
      {F::kE4M3FN, F::kE4M3FN, S::kTensor, S::kTensor}, {F::kE5M2, F::kE5M2, S::kNone, S::kPerRow},
      {F::kE4M3FN, F::kE5M2, S::kBlock128, S::kBlock128}, {F::kE5M2FNUZ, F::kE4M3FNUZ, S::kPerRow, S::kNone},
      {F::kE3M4, F::kE2M1, S::kNone, S::kNone},
  };
  const M models[] = {M::hopper(),
                      M::fused(32, 13, Rounding::kNearestEven),
                      M::fused(32, 13, Rounding::kTowardZero, 128),
                      M::fused(5, 3, Rounding::kNearestEven, 10),
                      M::fused(16, 23, Rounding::kNearestEven),
                      M::fused(32, 23, Rounding::kTowardZero),
                      M::fused(320, 10, Rounding::kTowardZero),
                      M::fused(6, 13, Rounding::kTowardZero),  // steps of 6 slots: two after the last four
                      M::fused_widths(32, 16, 13, Rounding::kTowardZero),
                      M::fused_widths(4, 26, 23, Rounding::kNearestEven),
                      M::fused_widths(16, 10, 20, Rounding::kNearestEven, 1, 32),
                      M::fused_widths(4, 24, 3, Rounding::kTowardZero)};
  for (const Shape& s : kShapes)
    for (const auto& [fa, fb, sa, sb] : variants)
      for (const M& model : models) {
        const Problem p = random_problem(rng, s.m, s.n, s.k, fa, fb, sa, sb, s.k % 2 == 1, true, 80);
        expect_same(p, model);
      }
}

TEST(GemmModelsLanes16, FusedSpecialValues) {
  std::mt19937_64 rng(14);
  for (unsigned odds : {5u, 0u})
    for (const auto& [sa, sb] : {std::pair{S::kNone, S::kNone}, std::pair{S::kBlock128, S::kBlock128}})
      for (const M& model : {M::hopper(), M::fused(32, 13, Rounding::kTowardZero, 64)}) {
        const Problem p = random_problem(rng, 11, 37, 300, F::kE5M2, F::kE5M2, sa, sb, true, false, odds);
        expect_same(p, model);
      }
}

// C as the accumulator input inside the kernel's range (+/-0, 2^-100 and 2^125 included) or
// anything where C starts a plain fp32 sum (promotion, block scaling); signed-zero operands.
TEST(GemmModelsLanes16, FusedAccumulatorInputAndSignedZeros) {
  std::mt19937_64 rng(43);
  const M rtz = M::hopper(), rne = M::fused(32, 13, Rounding::kNearestEven), promoted = M::fused(32, 13, Rounding::kTowardZero, 128);
  for (const Shape& s : {Shape{1, 1, 1}, Shape{7, 33, 130}, Shape{13, 300, 40}, Shape{97, 17, 260}, Shape{3, 5, 0}}) {
    for (const M& m : {rtz, rne, M::fused_widths(8, 12, 23, Rounding::kTowardZero)}) {
      Problem p = random_problem(rng, s.m, s.n, s.k, F::kE4M3FN, F::kE5M2, S::kTensor, S::kTensor, false, true, 200);
      fill_c(p, rng, true);
      expect_same(p, m, CRole::kAccumulator);
      for (auto& c : p.a) c = rng() % 3 == 0 ? 0x80 : rng() % 2 == 0 ? 0x00 : c;
      for (auto& c : p.b) c = rng() % 2 == 0 ? 0x80 : 0x00;
      expect_same(p, m, CRole::kAccumulator);
    }
    for (const auto& [model, sc] : {std::pair{promoted, S::kTensor}, std::pair{rtz, S::kBlock128}}) {
      Problem p = random_problem(rng, s.m, s.n, s.k, F::kE4M3FN, F::kE4M3FN, sc, sc, false, true, 200);
      fill_c(p, rng, false);
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
