// C as the accumulator input of the GEMM (GemmArgs::c_role = CRole::kAccumulator, gemm.hpp):
// the definition on small hand-worked cases (C before the dequantization multiply, C starting
// the block-scaled sum, C against the epilogue role), and every fast path (fast_gemm.cpp,
// fast_exact_block.cpp, fast_fused.cpp, fast_trainium3_mx.cpp) and the Trainium instruction
// GEMM (gemm_trainium) equal to gemm_reference bit for bit over random shapes, 1 to 4 threads,
// every model kind and scaling, with C values that matter: -0 and +0, subnormals, NaN, +/-Inf,
// tiny and huge. CTest runs this binary with the best ISA and with FP8Q_ISA=generic.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "fp8q/kernels/gemm.hpp"
#include "fp8q/kernels/trainium.hpp"
#include "fp8q/numerics/isa.hpp"
#include "gemm_fixture.hpp"
#include "gemm_model_cases.hpp"
#include "thread_counts.hpp"

namespace fp8q {
namespace {

using testing::CValues;
using testing::fill_c;
using testing::Problem;
using testing::random_problem;
using testing::Shape;
using M = AccumulationModel;
using S = testing::Scales;
using F = FormatId;

constexpr Shape kShapes[] = {{1, 1, 1}, {7, 33, 130}, {13, 300, 40}, {97, 17, 260}, {7, 20, 600}, {3, 5, 0}};

std::string describe(const Problem& p, const M& model) {
  return testing::name_of(p, model) + " scalings " + std::to_string(int(p.sa)) + "/" + std::to_string(int(p.sb));
}

std::string_view best_isa() { return active_isa() == Isa::kAvx2 || active_isa() == Isa::kAvx512 ? "avx2" : "generic"; }
// exact_block and fused: their AVX-512 kernels under FP8Q_ISA=avx512 (or unset) where the CPU has it.
std::string_view model_isa() { return active_isa() == Isa::kAvx512 ? "avx512" : best_isa(); }

// fp32_sequential and systolic at AVX-512: the bf16 pair kernel on an AMD CPU with BF16, else
// the FMA kernel (docs/performance.md, "Kernels per CPU").
std::string_view seq_isa() {
  if (active_isa() != Isa::kAvx512) return best_isa();
#if defined(__x86_64__)
  if (cpu_vendor() == CpuVendor::kAmd && __builtin_cpu_supports("avx512bf16")) return "avx512bf16";
#endif
  return "avx512";
}

// gemm() == gemm_reference() for 1..4 threads and bf16 output; gemm_path() is `path`.
void expect_same(const Problem& p, const M& model, std::string_view path) {
  GemmArgs g = p.args();
  g.c_role = CRole::kAccumulator;
  const std::string what = describe(p, model);
  std::vector<float> ref(p.m * p.n), fast(p.m * p.n);
  gemm_reference(g, {.model = model, .threads = 2}, std::span<float>(ref));
  for (int threads : test::kThreadCounts) {
    std::fill(fast.begin(), fast.end(), -1.0f);
    gemm(g, {.model = model, .threads = threads}, std::span<float>(fast));
    for (std::size_t i = 0; i < ref.size(); ++i)
      ASSERT_EQ(bits_of(ref[i]), bits_of(fast[i])) << what << " threads " << threads << " at [" << i / p.n << ", "
                                                   << i % p.n << "]: C " << p.c[i] << ", reference " << ref[i]
                                                   << ", fast " << fast[i];
  }
  std::vector<std::uint16_t> ref16(p.m * p.n), fast16(p.m * p.n);
  gemm_reference(g, {.model = model}, std::span<std::uint16_t>(ref16));
  gemm(g, {.model = model, .threads = 3}, std::span<std::uint16_t>(fast16));
  EXPECT_EQ(ref16, fast16) << what << " (bf16)";
  EXPECT_EQ(gemm_path(g, {.model = model}), path) << what;
}

Problem problem(std::mt19937_64& rng, const Shape& s, F fa, F fb, S sa, S sb, CValues c, bool bias = true) {
  Problem p = random_problem(rng, s.m, s.n, s.k, fa, fb, sa, sb, false, bias, 200);
  fill_c(p, rng, c);
  return p;
}

// ---- the definition, by hand ------------------------------------------------------------------------
GemmArgs one_by_one(const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b, const std::vector<float>& c,
                    CRole role) {
  return {.m = 1, .n = 1, .k = a.size(), .a = {.codes = a}, .b = {.codes = b}, .c = c, .c_role = role};
}

TEST(GemmAccumulator, CIsInTheAccumulatorsUnits) {
  // a = [1, 1] (e4m3fn 0x38), b = [1, 1]: acc = 2; per-tensor scale_inv 0.5 on A
  const std::vector<std::uint8_t> a = {0x38, 0x38}, b = {0x38, 0x38};
  const std::vector<float> half = {0.5f}, c = {3.0f};
  GemmArgs g = one_by_one(a, b, c, CRole::kEpilogue);
  g.a.granularity = Granularity::tensor(), g.a.scale_inv = half;
  float d = 0.0f;
  for (const M& model : {M::fp32_sequential(), M::hopper(), M::exact_block(32), M::systolic(128)}) {
    g.c_role = CRole::kEpilogue;
    gemm(g, {.model = model}, std::span(&d, 1));
    EXPECT_EQ(d, 4.0f) << model_name(model);  // 2 * 0.5 + 3
    g.c_role = CRole::kAccumulator;
    gemm(g, {.model = model}, std::span(&d, 1));
    EXPECT_EQ(d, 2.5f) << model_name(model);  // (3 + 2) * 0.5
    gemm_reference(g, {.model = model}, std::span(&d, 1));
    EXPECT_EQ(d, 2.5f) << model_name(model);
  }
}

TEST(GemmAccumulator, BlockScalingStartsTheScaledSum) {
  // K = 129: two 128-K blocks, each of products 1 * 1; scales 0.5 (A) x 0.25 (B) per block
  const std::size_t K = 129;
  const std::vector<std::uint8_t> a(K, 0x38), b(K, 0x38);
  const std::vector<float> sa = {0.5f, 0.5f}, sb = {0.25f, 0.25f}, c = {1000.0f};
  GemmArgs g = one_by_one(a, b, c, CRole::kAccumulator);
  g.a.granularity = Granularity::block(1, 128), g.b.granularity = Granularity::block(128, 128);
  g.a.scale_inv = sa, g.b.scale_inv = sb;
  float d = 0.0f;
  gemm(g, {.model = M::fp32_sequential()}, std::span(&d, 1));
  EXPECT_EQ(d, 1000.0f + 128 * 0.125f + 0.125f);  // C in output units: not scaled
}

// The fused model with C as the accumulator input is one wgmma with C: C aligns with the
// products; as an epilogue term it is added to the rounded dot product.
TEST(GemmAccumulator, FusedAlignsCWithTheProducts) {
  const std::vector<std::uint8_t> a = {0x3C, 0x34}, b = {0x38, 0x38};  // 1.5, 0.75 times 1
  const std::vector<float> c = {8192.0f};
  float d = 0.0f;
  gemm(one_by_one(a, b, c, CRole::kAccumulator), {.model = M::hopper()}, std::span(&d, 1));
  EXPECT_EQ(d, 8193.0f);  // quantum 2^(13 - 13): 1.5 -> 1, 0.75 -> 0
  gemm(one_by_one(a, b, c, CRole::kEpilogue), {.model = M::hopper()}, std::span(&d, 1));
  EXPECT_EQ(d, 8194.25f);
}

// C = -0 with products that are all -0: -0 where the products enter the accumulator one by one.
TEST(GemmAccumulator, NegativeZeroCOnEveryPath) {
  const std::size_t K = 70;
  const std::vector<std::uint8_t> a(K, 0x00), b(K, 0xB8);  // 0 * -1 = -0
  const std::vector<float> c = {-0.0f};
  struct Case {
    M model;
    bool negative;
  };
  for (const Case& cs : {Case{M::fp32_sequential(), true}, Case{M::exact_block(32), true}, Case{M::hopper(), true},
                         Case{M::fused(32, 13, Rounding::kTowardZero, 64), false}, Case{M::systolic(128), false},
                         Case{M::trainium3_mx(Trn3Layout::k1x32), false}}) {
    const GemmArgs g = one_by_one(a, b, c, CRole::kAccumulator);
    float d = 1.0f, r = 1.0f;
    gemm(g, {.model = cs.model}, std::span(&d, 1));
    gemm_reference(g, {.model = cs.model}, std::span(&r, 1));
    EXPECT_EQ(bits_of(r), bits_of(cs.negative ? -0.0f : 0.0f)) << model_name(cs.model);
    EXPECT_EQ(bits_of(d), bits_of(r)) << model_name(cs.model) << " path " << gemm_path(g, {.model = cs.model});
  }
}

// The fused kernel takes C in [2^-100, 2^126) (and +/-0); other C run the reference, and say so.
TEST(GemmAccumulator, FusedPathNamesTheFallback) {
  const std::vector<std::uint8_t> a = {0x38}, b = {0x38};
  for (float c : {0.0f, -0.0f, 0x1p-100f, -0x1.fffffep125f, 1.0f}) {
    const std::vector<float> cv = {c};
    EXPECT_EQ(gemm_path(one_by_one(a, b, cv, CRole::kAccumulator), {.model = M::hopper()}), model_isa()) << c;
  }
  for (float c : {std::nanf(""), std::numeric_limits<float>::infinity(), 0x1p-101f, 0x1p-140f, 0x1p126f}) {
    const std::vector<float> cv = {c};
    EXPECT_EQ(gemm_path(one_by_one(a, b, cv, CRole::kAccumulator), {.model = M::hopper()}), "reference") << c;
    EXPECT_EQ(gemm_path(one_by_one(a, b, cv, CRole::kEpilogue), {.model = M::hopper()}), model_isa()) << c;
    // with promotion C starts a plain fp32 sum: the kernel is not involved
    EXPECT_EQ(gemm_path(one_by_one(a, b, cv, CRole::kAccumulator), {.model = M::fused(32, 13, Rounding::kTowardZero, 128)}),
              model_isa())
        << c;
  }
}

TEST(GemmAccumulator, RejectsAnUnknownRole) {
  const std::vector<std::uint8_t> a = {0x38}, b = {0x38};
  const std::vector<float> c = {1.0f};
  float d = 0.0f;
  EXPECT_THROW(gemm(one_by_one(a, b, c, static_cast<CRole>(7)), {}, std::span(&d, 1)), std::invalid_argument);
  EXPECT_EQ(parse_c_role("accumulator"), CRole::kAccumulator);
  EXPECT_EQ(parse_c_role("epilogue"), CRole::kEpilogue);
  EXPECT_FALSE(parse_c_role("beta").has_value());
  EXPECT_EQ(c_role_name(CRole::kAccumulator), "accumulator");
}

// ---- fast == reference ------------------------------------------------------------------------------
TEST(GemmAccumulatorFast, SequentialAndSystolic) {
  std::mt19937_64 rng(41);
  for (const Shape& s : kShapes)
    for (CValues cv : {CValues::kKernelRange, CValues::kAnything}) {
      for (S sc : {S::kNone, S::kTensor, S::kPerChannel, S::kBlock128}) {
        expect_same(problem(rng, s, F::kE4M3FN, F::kE5M2, sc, sc, cv), M::fp32_sequential(), seq_isa());
        expect_same(problem(rng, s, F::kE5M2, F::kE4M3FN, sc, sc, cv), M::systolic(128), seq_isa());
      }
      expect_same(problem(rng, s, F::kE4M3FN, F::kE4M3FN, S::kNone, S::kNone, cv), M::systolic(4), seq_isa());
      expect_same(problem(rng, s, F::kE4M3FN, F::kE4M3FN, S::kBlock128, S::kBlock128, cv), M::systolic(4), "reference");
    }
}

TEST(GemmAccumulatorFast, ExactBlock) {
  std::mt19937_64 rng(42);
  for (const Shape& s : kShapes)
    for (CValues cv : {CValues::kKernelRange, CValues::kAnything}) {
      expect_same(problem(rng, s, F::kE4M3FN, F::kE4M3FN, S::kNone, S::kNone, cv), M::exact_block(32), model_isa());
      expect_same(problem(rng, s, F::kE5M2, F::kE5M2, S::kMx32, S::kMx32, cv), M::exact_block(32), model_isa());  // split sums
      expect_same(problem(rng, s, F::kE4M3FN, F::kE5M2, S::kMx32, S::kNone, cv), M::exact_block(16), model_isa());
      expect_same(problem(rng, s, F::kE4M3FN, F::kE4M3FN, S::kBlock128, S::kBlock128, cv), M::exact_block(32), model_isa());
    }
}

TEST(GemmAccumulatorFast, Fused) {
  std::mt19937_64 rng(43);
  const M rtz = M::hopper(), rne = M::fused(32, 13, Rounding::kNearestEven), promoted = M::fused(32, 13, Rounding::kTowardZero, 128);
  for (const Shape& s : kShapes) {
    for (S sc : {S::kNone, S::kTensor, S::kPerChannel})
      for (const M& m : {rtz, rne, M::fused(16, 10, Rounding::kTowardZero), M::fused_widths(16, 20, 13, Rounding::kNearestEven),
                         M::fused_widths(8, 12, 23, Rounding::kTowardZero)})
        expect_same(problem(rng, s, F::kE4M3FN, F::kE5M2, sc, sc, CValues::kKernelRange), m, model_isa());
    // product groups run the reference, C included
    expect_same(problem(rng, s, F::kE4M3FN, F::kE5M2, S::kNone, S::kNone, CValues::kAnything),
                M::fused_widths(32, 24, 23, Rounding::kNearestEven, 4), "reference");
    // C outside the kernel's range (one NaN at least): the reference, unless C starts a plain fp32 sum
    Problem outside = problem(rng, s, F::kE4M3FN, F::kE4M3FN, S::kNone, S::kNone, CValues::kAnything);
    outside.c[0] = std::nanf("");
    expect_same(outside, rtz, "reference");
    for (CValues cv : {CValues::kKernelRange, CValues::kAnything}) {
      expect_same(problem(rng, s, F::kE5M2, F::kE4M3FN, S::kTensor, S::kTensor, cv), promoted, model_isa());
      expect_same(problem(rng, s, F::kE4M3FN, F::kE4M3FN, S::kBlock128, S::kBlock128, cv), rtz, model_isa());
    }
  }
}

TEST(GemmAccumulatorFast, Trainium3Mx) {
  std::mt19937_64 rng(44);
  for (const Shape& s : {Shape{1, 1, 1}, Shape{5, 19, 600}, Shape{9, 3, 1030}, Shape{3, 5, 0}})
    for (CValues cv : {CValues::kKernelRange, CValues::kAnything}) {
      // wrapx: e4m3fn x e2m1 sums span 24 bits, so scales spread by up to 29 within a partition
      // (these by up to 24) keep them exact in fp64, and the fast path takes them too
      const char* isa = active_isa() == Isa::kAvx512 ? "avx512" : active_isa() == Isa::kAvx2 ? "avx2" : "generic";
      expect_same(problem(rng, s, F::kE4M3FN, F::kE4M3FN, S::kMx32, S::kMx32, cv), M::trainium3_mx(Trn3Layout::k1x32), isa);
      expect_same(problem(rng, s, F::kE4M3FN, F::kE2M1, S::kMx32, S::kMx32, cv), M::trainium3_mx(Trn3Layout::kWrapX), isa);
    }
}

// ---- the Trainium instruction GEMM: C is the PSUM tile's initial value ------------------------------
void expect_trainium_same(const Problem& p, const GemmOptions& o) {
  GemmArgs g = p.args();
  g.c_role = CRole::kAccumulator;
  std::vector<float> ref(p.m * p.n), tiled(p.m * p.n);
  gemm_reference(g, o, std::span<float>(ref));
  for (int threads : {1, 3}) {
    GemmOptions t = o;
    t.threads = threads;
    trn::gemm_trainium(g, t, std::span<float>(tiled));
    for (std::size_t i = 0; i < ref.size(); ++i)
      ASSERT_EQ(bits_of(ref[i]), bits_of(tiled[i])) << describe(p, o.model) << " via " << trn::trainium_instruction(g, o)
                                                    << " at " << i << ": C " << p.c[i];
  }
}

TEST(GemmAccumulatorTrainium, PsumStartsAtC) {
  std::mt19937_64 rng(45);
  for (const Shape& s : {Shape{1, 1, 1}, Shape{130, 7, 300}, Shape{7, 513, 129}, Shape{3, 5, 0}, Shape{4, 6, 1030}}) {
    expect_trainium_same(problem(rng, s, F::kE4M3, F::kE5M2, S::kTensor, S::kPerChannel, CValues::kAnything), {.model = M::systolic(128)});
    expect_trainium_same(problem(rng, s, F::kE4M3, F::kE4M3, S::kNone, S::kNone, CValues::kAnything), {.model = M::systolic(256)});
    expect_trainium_same(problem(rng, s, F::kE4M3FN, F::kE5M2, S::kBlock128, S::kBlock128, CValues::kAnything),
                         {.model = M::systolic(128)});
    expect_trainium_same(problem(rng, s, F::kE4M3FN, F::kE4M3FN, S::kMx32, S::kMx32, CValues::kAnything),
                         {.model = M::trainium3_mx(Trn3Layout::k1x32)});
    expect_trainium_same(problem(rng, s, F::kE4M3FN, F::kE5M2, S::kMx32, S::kMx32, CValues::kAnything),
                         {.model = M::systolic(128), .mx_dequantize_to_bf16 = true});
  }
}

}  // namespace
}  // namespace fp8q
