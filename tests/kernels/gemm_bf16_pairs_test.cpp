// The fp32_sequential / systolic fast path's micro-kernels equal the scalar reference bit for
// bit. On bf16 pairs (kernels/src/isa/seq_bf16.hpp): the driver's pair packing (odd K chunks
// padded with a -0 product) with a portable emulation of the kernel's lane arithmetic on any
// machine, and the real AVX-512 BF16 kernel where the CPU has it (skipped, with a message,
// elsewhere). On fp32 panels: the AVX2 kernel, the AVX-512 FMA kernel and a portable emulation
// of its 64-column tile. The choice per CPU and the forced micro-kernel (GemmOptions). Shapes
// with odd K, K past one 256 chunk, tiny M and N, every element format, every plain and block
// scaling, systolic tiles from 1 to 256, cancellations, 1 and 2 threads.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <tuple>

#include "fp8q/kernels/gemm.hpp"
#include "gemm_fixture.hpp"
#include "operands.hpp"
#include "seq_micro.hpp"

namespace fp8q {
namespace {

using testing::Problem;
using testing::random_problem;
using M = AccumulationModel;
using S = testing::Scales;

float hi(std::uint32_t w) { return std::bit_cast<float>(w & 0xFFFF0000u); }
float lo(std::uint32_t w) { return std::bit_cast<float>(w << 16); }

// The lane arithmetic of vdpbf16ps as docs/numerics.md states it, per pair:
// acc = fp32(fp32(acc + hi_a * hi_b) + lo_a * lo_b) (fp32 products of bf16 values are exact).
void emulated_kernel(std::size_t pairs, const std::uint32_t* ap, const std::uint32_t* bp, const float* init,
                     std::size_t ldi, float* out, std::size_t ldo, bool add) {
  using detail::kPairMr, detail::kPairNr;
  for (std::size_t i = 0; i < kPairMr; ++i)
    for (std::size_t j = 0; j < kPairNr; ++j) {
      float acc = init != nullptr ? init[i * ldi + j] : 0.0f;
      for (std::size_t q = 0; q < pairs; ++q) {
        const std::uint32_t a = ap[q * kPairMr + i], b = bp[q * kPairNr + j];
        acc = acc + hi(a) * hi(b);
        acc = acc + lo(a) * lo(b);
      }
      out[i * ldo + j] = add ? out[i * ldo + j] + acc : acc;
    }
}

const detail::SeqMicro kEmulated{.pairs = &emulated_kernel, .name = "emulated"};

// The AVX-512 FMA kernel's tile (kMr x kWideNr fp32 panels), element by element.
void emulated_wide_kernel(std::size_t kc, const float* ap, const float* bp, const float* init, std::size_t ldi,
                          float* out, std::size_t ldo, bool add) {
  using detail::kMr, detail::kWideNr;
  for (std::size_t i = 0; i < kMr; ++i)
    for (std::size_t j = 0; j < kWideNr; ++j) {
      float acc = init != nullptr ? init[i * ldi + j] : 0.0f;
      for (std::size_t k = 0; k < kc; ++k) acc = acc + ap[k * kMr + i] * bp[k * kWideNr + j];
      out[i * ldo + j] = add ? out[i * ldo + j] + acc : acc;
    }
}

std::uint32_t bits_of(float f) { return std::bit_cast<std::uint32_t>(f); }

void expect_same(const Problem& p, const M& model, const detail::SeqMicro& micro, const std::string& what) {
  const GemmArgs g = p.args();
  std::vector<float> ref(p.m * p.n), fast(p.m * p.n);
  gemm_reference(g, {.model = model, .threads = 2}, std::span<float>(ref));
  for (int threads : {1, 2}) {
    std::fill(fast.begin(), fast.end(), -1.0f);
    detail::gemm_with(g, {.model = model, .threads = threads}, micro, std::span<float>(fast));
    for (std::size_t i = 0; i < ref.size(); ++i)
      ASSERT_EQ(bits_of(ref[i]), bits_of(fast[i]))
          << what << " " << micro.name << " threads " << threads << " at [" << i / p.n << ", " << i % p.n
          << "]: reference " << ref[i] << ", fast " << fast[i];
  }
}

constexpr FormatId kFormats[] = {FormatId::kE4M3FN,   FormatId::kE4M3, FormatId::kE5M2,
                                 FormatId::kE4M3FNUZ, FormatId::kE5M2FNUZ, FormatId::kE3M4,
                                 FormatId::kE2M3,     FormatId::kE3M2, FormatId::kE2M1};

// Every (format, scaling, model) case over shapes that are multiples of no tile.
void equals_reference(const detail::SeqMicro& micro) {
  std::mt19937_64 rng(2026);
  constexpr testing::Shape kShapes[] = {{1, 1, 1},    {5, 63, 3},   {7, 65, 257}, {13, 129, 513}, {6, 64, 256},
                                        {97, 70, 301}, {2, 1100, 11}, {3, 5, 0},   {8, 3, 129}};
  const std::tuple<S, S> scalings[] = {{S::kNone, S::kNone}, {S::kTensor, S::kPerChannel}, {S::kPerChannel, S::kTensor},
                                       {S::kBlock128, S::kBlock128}};
  const M models[] = {M::fp32_sequential(), M::systolic(1), M::systolic(3),  M::systolic(64),
                      M::systolic(127),     M::systolic(128), M::systolic(129), M::systolic(256)};
  std::size_t f = 0, cases = 0;
  for (const auto& s : kShapes)
    for (const auto& [sa, sb] : scalings)
      for (const M& model : models) {
        const FormatId fa = kFormats[f++ % 9], fb = kFormats[(f * 4) % 9];
        const Problem p = random_problem(rng, s.m, s.n, s.k, fa, fb, sa, sb, f % 2 == 0, f % 3 == 0, 50);
        const bool block_split = sa == S::kBlock128 && model.kind == AccumKind::kSystolic && model.block < 128;
        const std::string what = std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k) + " " +
                                 std::string(format_of(fa).name) + "*" + std::string(format_of(fb).name) + " " +
                                 model_name(model) + (sa == S::kBlock128 ? " block128" : "");
        if (block_split) {  // the driver's fast path does not split a scale block
          std::vector<float> out(s.m * s.n);
          EXPECT_THROW(detail::gemm_with(p.args(), {.model = model}, micro, std::span<float>(out)), std::invalid_argument)
              << what;
          continue;
        }
        expect_same(p, model, micro, what);
        ++cases;
      }
  EXPECT_GT(cases, 200u);
}

// Rows and columns that cancel exactly (a and -a), so sums pass through +0, and whole rows of
// zero codes (+0 and -0 products); odd K so the padded pair follows a zero partial sum.
void cancellations(const detail::SeqMicro& micro) {
  std::mt19937_64 rng(11);
  for (std::size_t k : {1, 2, 5, 129, 257}) {
    Problem p = random_problem(rng, 7, 67, k, FormatId::kE4M3FN, FormatId::kE5M2, S::kNone, S::kNone, false, false, 0);
    for (std::size_t r = 0; r < p.m; ++r)
      for (std::size_t c = 0; c + 1 < k; c += 2) {
        if (r % 3 == 0) p.a[r * k + c + 1] = p.a[r * k + c] ^ 0x80;  // a_(k+1) = -a_k ...
        if (r % 3 == 0) p.b[(c + 1) * p.n + r] = p.b[c * p.n + r];  // ... against equal b: pairs cancel
      }
    for (std::size_t c = 0; c < k; ++c) p.a[1 * k + c] = c % 2 ? 0x80 : 0x00;  // row 1: +-0 codes
    for (const M& model : {M::fp32_sequential(), M::systolic(3), M::systolic(128)})
      expect_same(p, model, micro, "cancellations K " + std::to_string(k) + " " + model_name(model));
  }
}

TEST(GemmBf16Pairs, EmulatedKernelEqualsReference) { equals_reference(kEmulated); }
TEST(GemmBf16Pairs, EmulatedKernelCancellations) { cancellations(kEmulated); }

// The property the pair layout relies on: every decoded value of every element format is
// exact in bf16, and its smallest nonzero magnitude is at least 2^-17 (so products are
// multiples of 2^-34 and no sum is subnormal).
TEST(GemmBf16Pairs, DecodedValuesAreExactBf16) {
  for (FormatId f : kFormats) {
    const auto table = detail::decode_table(f);
    for (std::size_t c = 0; c < (1u << format_of(f).bits()); ++c) {
      const float v = table[c];
      EXPECT_EQ(bits_of(v) & 0xFFFF, 0u) << format_of(f).name << " code " << c;
      if (std::isfinite(v) && v != 0.0f) EXPECT_GE(std::fabs(v), std::ldexp(1.0f, -17)) << format_of(f).name;
    }
  }
}

detail::SeqMicro real_kernel() {
  return {.pairs = detail::seq_kernel_avx512bf16(), .name = "avx512bf16"};
}

TEST(GemmBf16Pairs, Avx512Bf16KernelEqualsReference) {
  if (real_kernel().pairs == nullptr) GTEST_SKIP() << "this CPU (or build) has no AVX-512 BF16; emulation tested";
  equals_reference(real_kernel());
  cancellations(real_kernel());
}

// The AVX2 kernel stays reachable in the same process (FP8Q_ISA=avx2 selects it for gemm()).
TEST(GemmBf16Pairs, Avx2KernelEqualsReference) {
  if (detail::seq_kernel_avx2() == nullptr) GTEST_SKIP() << "this CPU (or build) has no AVX2 + FMA";
  equals_reference({.fp32 = detail::seq_kernel_avx2(), .name = "avx2"});
}

TEST(GemmSeqKernels, EmulatedWideTileEqualsReference) {
  const detail::SeqMicro wide{.wide = &emulated_wide_kernel, .name = "emulated wide"};
  equals_reference(wide);
  cancellations(wide);
}

TEST(GemmSeqKernels, Avx512FmaKernelEqualsReference) {
  if (detail::seq_kernel_avx512() == nullptr) GTEST_SKIP() << "this CPU (or build) has no AVX-512";
  const detail::SeqMicro wide{.wide = detail::seq_kernel_avx512(), .name = "avx512"};
  equals_reference(wide);
  cancellations(wide);
}

// At AVX-512 the pair kernel runs on AMD CPUs with AVX-512 BF16, the FMA kernel elsewhere.
TEST(GemmSeqKernels, ChoicePerCpu) {
  if (!isa_supported(Isa::kAvx512)) GTEST_SKIP() << "no AVX-512";
  const bool pairs = cpu_vendor() == CpuVendor::kAmd && detail::seq_kernel_avx512bf16() != nullptr;
  EXPECT_EQ(detail::seq_micro(Isa::kAvx512).name, pairs ? "avx512bf16" : "avx512")
      << "vendor " << cpu_vendor_name(cpu_vendor());
}

// Every micro-kernel this CPU runs, forced through GemmOptions::micro_kernel, gives the default
// path's bits, and gemm_path names it; a name that is not a kernel, or not one this CPU runs, is
// refused with the option's name.
TEST(GemmSeqKernels, ForcedMicroKernel) {
  std::mt19937_64 rng(7);
  const Problem p = random_problem(rng, 13, 130, 300, FormatId::kE4M3FN, FormatId::kE5M2, S::kTensor, S::kPerChannel,
                                   true, false, 50);
  const GemmArgs g = p.args();
  std::vector<float> want(p.m * p.n), got(p.m * p.n);
  gemm(g, {.model = M::fp32_sequential()}, std::span<float>(want));
  for (const char* name : {"avx512bf16", "avx512", "avx2", "generic"}) {
    GemmOptions o{.model = M::fp32_sequential(), .threads = 2};
    o.micro_kernel = name;
    bool runs = true;
    try {
      detail::seq_micro_named(name);
    } catch (const std::invalid_argument&) {
      runs = false;
    }
    if (!runs) {
      EXPECT_THROW(gemm(g, o, std::span<float>(got)), std::invalid_argument) << name;
      continue;
    }
    EXPECT_EQ(gemm_path(g, o), name);
    gemm(g, o, std::span<float>(got));
    for (std::size_t i = 0; i < want.size(); ++i) ASSERT_EQ(bits_of(want[i]), bits_of(got[i])) << name << " at " << i;
  }
  GemmOptions bad{.model = M::fp32_sequential()};
  bad.micro_kernel = "avx9";
  try {
    gemm(g, bad, std::span<float>(got));
    ADD_FAILURE() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("GemmOptions::micro_kernel"), std::string::npos) << e.what();
  }
}

// The instruction against the emulation on one tile: random decoded FP8 pairs of every format
// (ties and exact cancellations included), init values that are subnormal (the kernel's scalar
// tile; the instruction alone would read them as 0), +-0, +-Inf and NaN, pairs with the -0
// padding product after a -0 init, the sum from +0 added to out (a systolic tile's fold).
// 2^20 products per run.
TEST(GemmBf16Pairs, Avx512Bf16KernelEqualsLaneFormula) {
  const detail::PairKernel kernel = detail::seq_kernel_avx512bf16();
  if (kernel == nullptr) GTEST_SKIP() << "this CPU (or build) has no AVX-512 BF16";
  using detail::kPairMr, detail::kPairNr;
  std::mt19937_64 rng(3);
  constexpr std::size_t kPairs = 8, kTile = kPairMr * kPairNr;
  std::vector<std::uint32_t> ap(kPairs * kPairMr), bp(kPairs * kPairNr);
  std::vector<float> init(kTile), want(kTile), got(kTile);
  auto value = [&](FormatId f) { return detail::decode_table(f)[rng() % (1u << format_of(f).bits())]; };
  std::size_t subnormal_tiles = 0;
  for (int t = 0; t < 1400; ++t) {
    const FormatId fa = kFormats[rng() % 9], fb = kFormats[rng() % 9];
    for (std::size_t q = 0; q < kPairs; ++q) {
      for (std::size_t i = 0; i < kPairMr; ++i) ap[q * kPairMr + i] = detail::bf16_pair(value(fa), value(fa));
      for (std::size_t j = 0; j < kPairNr; ++j) bp[q * kPairNr + j] = detail::bf16_pair(value(fb), value(fb));
      if (q % 4 == 3) {  // a pair whose second product cancels the first: a_lo = -a_hi, b_lo = b_hi
        for (std::size_t i = 0; i < kPairMr; ++i) ap[q * kPairMr + i] = detail::bf16_pair(hi(ap[q * kPairMr + i]), -hi(ap[q * kPairMr + i]));
        for (std::size_t j = 0; j < kPairNr; ++j) bp[q * kPairNr + j] = detail::bf16_pair(hi(bp[q * kPairNr + j]), hi(bp[q * kPairNr + j]));
      }
    }
    if (t % 7 == 0)  // the driver's padded last pair: (x, -0) against (y, +0)
      for (std::size_t i = 0; i < kPairMr; ++i) ap[(kPairs - 1) * kPairMr + i] = detail::bf16_pair(t % 2 ? -0.0f : 0.0f, detail::kPadA);
    if (t % 7 == 0)
      for (std::size_t j = 0; j < kPairNr; ++j) bp[(kPairs - 1) * kPairNr + j] = detail::bf16_pair(1.0f, detail::kPadB);
    const bool subnormal = t % 5 == 0;
    for (std::size_t e = 0; e < kTile; ++e) {
      const unsigned r = static_cast<unsigned>(rng() % 16);
      init[e] = r == 0 ? -0.0f : r == 1 ? 0.0f : r == 2 ? INFINITY : r == 3 ? -NAN : value(FormatId::kE5M2) * value(FormatId::kE4M3);
      if (subnormal && r == 4) init[e] = std::ldexp(static_cast<float>(rng() % 1000 + 1), -140) * (rng() % 2 ? -1.0f : 1.0f);
    }
    subnormal_tiles += subnormal;
    const bool use_init = t % 9 != 0, add = !use_init && t % 2 == 0;  // add: out = fp32(out + the sum from +0)
    if (add) want = init, got = init;
    emulated_kernel(kPairs, ap.data(), bp.data(), use_init ? init.data() : nullptr, kPairNr, want.data(), kPairNr, add);
    kernel(kPairs, ap.data(), bp.data(), use_init ? init.data() : nullptr, kPairNr, got.data(), kPairNr, add);
    for (std::size_t e = 0; e < kTile; ++e) {
      if (std::isnan(want[e])) {
        ASSERT_TRUE(std::isnan(got[e])) << "tile " << t << " element " << e;
        continue;
      }
      ASSERT_EQ(bits_of(want[e]), bits_of(got[e])) << "tile " << t << " element " << e << " init " << init[e] << ": "
                                                   << want[e] << " vs " << got[e];
    }
  }
  EXPECT_GT(subnormal_tiles, 200u);
}

// A subnormal init with zero products must come back unchanged (vdpbf16ps alone gives 0).
TEST(GemmBf16Pairs, Avx512Bf16KernelKeepsSubnormalInit) {
  const detail::PairKernel kernel = detail::seq_kernel_avx512bf16();
  if (kernel == nullptr) GTEST_SKIP() << "this CPU (or build) has no AVX-512 BF16";
  using detail::kPairMr, detail::kPairNr;
  std::vector<std::uint32_t> ap(3 * kPairMr, detail::bf16_pair(0.0f, detail::kPadA)), bp(3 * kPairNr, detail::bf16_pair(2.0f, 0.0f));
  std::vector<float> init(kPairMr * kPairNr, 1.0f), out(init.size());
  init[5] = std::ldexp(1.0f, -140), init[70] = -std::ldexp(3.0f, -149);
  kernel(3, ap.data(), bp.data(), init.data(), kPairNr, out.data(), kPairNr, false);
  EXPECT_EQ(bits_of(out[5]), bits_of(init[5]));
  EXPECT_EQ(bits_of(out[70]), bits_of(init[70]));
  EXPECT_EQ(out[0], 1.0f);
}

}  // namespace
}  // namespace fp8q
