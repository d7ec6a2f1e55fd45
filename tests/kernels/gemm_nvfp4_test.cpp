// The NVFP4 GEMM (gemm.hpp, "NVFP4"): the reference against an independent restatement of the
// definition in host arithmetic, the fast path against the reference for every model, ISA,
// thread count and C role, and the errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "fp8q/kernels/gemm.hpp"
#include "fp8q/kernels/profile.hpp"
#include "fp8q/kernels/trainium.hpp"
#include "fp8q/numerics/convert.hpp"
#include "fp8q/numerics/isa.hpp"

namespace fp8q {
namespace {

using M = AccumulationModel;

struct Nvfp4Problem {
  std::size_t m = 0, n = 0, k = 0;
  FormatId fa = FormatId::kE2M1, fb = FormatId::kE2M1;
  Granularity ga = Granularity::nvfp4(), gb = Granularity::nvfp4_column();
  std::vector<std::uint8_t> a, b, sa, sb;  // codes; E4M3FN scale codes on each operand's grid
  float global_a = 1.0f, global_b = 1.0f;
  std::vector<float> c, bias;
  CRole role = CRole::kEpilogue;

  GemmArgs args() const {
    return {.m = m, .n = n, .k = k,
            .a = {.format = fa, .codes = a, .granularity = ga, .scale_codes = sa, .global_scale = global_a},
            .b = {.format = fb, .codes = b, .granularity = gb, .scale_codes = sb, .global_scale = global_b},
            .c = c, .bias = bias, .c_role = role};
  }
  // The decoded E4M3FN scale of A (m, k) and of B (k, n).
  float scale_a(std::size_t i, std::size_t kk) const { return scale(sa, ga, k, i, kk); }
  float scale_b(std::size_t kk, std::size_t j) const { return scale(sb, gb, n, kk, j); }

 private:
  static float scale(const std::vector<std::uint8_t>& s, const Granularity& g, std::size_t cols, std::size_t r,
                     std::size_t c) {
    const std::size_t gc = (cols + g.block_cols - 1) / g.block_cols;
    return decode_f32(s[(r / g.block_rows) * gc + c / g.block_cols], kE4M3FN);
  }
};

// Scale codes: mostly normal E4M3FN values around 1, some subnormal, some zero; NaN (0x7F) one
// time in nan_odds when nan_odds > 0.
std::uint8_t random_scale_code(std::mt19937_64& rng, unsigned nan_odds) {
  if (nan_odds != 0 && rng() % nan_odds == 0) return 0x7F;
  switch (rng() % 8) {
    case 0: return static_cast<std::uint8_t>(rng() % 8);  // zero and subnormal
    case 1: return static_cast<std::uint8_t>(rng() % 0x7F);  // any finite
    default: return static_cast<std::uint8_t>(0x30 + rng() % 0x20);  // 2^-1 .. 2^3
  }
}

Nvfp4Problem random_problem(std::mt19937_64& rng, std::size_t m, std::size_t n, std::size_t k, FormatId f,
                            bool weights_2d, unsigned nan_odds) {
  Nvfp4Problem p;
  p.m = m, p.n = n, p.k = k, p.fa = p.fb = f;
  p.gb = weights_2d ? Granularity::nvfp4_2d() : Granularity::nvfp4_column();
  const Format& fmt = format_of(f);
  auto code = [&] {
    for (;;) {
      const auto c = static_cast<std::uint8_t>(rng() & ((1u << fmt.bits()) - 1));
      if (std::isfinite(decode_f32(c, fmt))) return c;
    }
  };
  p.a.resize(m * k), p.b.resize(k * n);
  for (auto& x : p.a) x = code();
  for (auto& x : p.b) x = code();
  p.sa.resize(m * (k / 16));
  p.sb.resize(weights_2d ? (k / 16) * ((n + 15) / 16) : (k / 16) * n);
  for (auto& s : p.sa) s = random_scale_code(rng, nan_odds);
  for (auto& s : p.sb) s = random_scale_code(rng, nan_odds);
  p.global_a = 2688.0f / (0.5f + static_cast<float>(rng() % 1000) * 0.37f);
  p.global_b = 2688.0f / (0.01f + static_cast<float>(rng() % 1000) * 0.013f);
  return p;
}

bool same_bits(float x, float y) { return std::memcmp(&x, &y, sizeof x) == 0; }

// exact_block:16 on e2m1 restated in host arithmetic (the IEEE default environment): every
// scaled product and each block's sum of 16 is exact in double (a few dozen bits at most), so
// fp32(block sum) is one rounding; then acc = fp32(acc + t) and out = fp32(acc * fp32(1 /
// fp32(S_a * S_b))), vLLM's alpha.
float independent_exact_block16(const Nvfp4Problem& p, std::size_t i, std::size_t j) {
  const Format& fa = format_of(p.fa);
  const Format& fb = format_of(p.fb);
  float acc = 0.0f;
  for (std::size_t k0 = 0; k0 < p.k; k0 += 16) {
    double s = 0.0;
    for (std::size_t kk = k0; kk < k0 + 16; ++kk)
      s += static_cast<double>(decode_f32(p.a[i * p.k + kk], fa)) * p.scale_a(i, kk) *
           (static_cast<double>(decode_f32(p.b[kk * p.n + j], fb)) * p.scale_b(kk, j));
    acc = acc + static_cast<float>(s);
  }
  const float alpha = 1.0f / (p.global_a * p.global_b);
  return acc * alpha;
}

TEST(GemmNvfp4, ReferenceIsTheDefinition) {
  std::mt19937_64 rng(16);
  for (int trial = 0; trial < 12; ++trial) {
    const Nvfp4Problem p = random_problem(rng, 1 + rng() % 7, 1 + rng() % 21, 16 * (1 + rng() % 9), FormatId::kE2M1,
                                          trial % 2 == 1, 0);
    std::vector<float> d(p.m * p.n);
    gemm_reference(p.args(), {.model = M::exact_block(16)}, std::span<float>(d));
    for (std::size_t i = 0; i < p.m; ++i)
      for (std::size_t j = 0; j < p.n; ++j)
        ASSERT_TRUE(same_bits(d[i * p.n + j], independent_exact_block16(p, i, j)))
            << "trial " << trial << " (" << i << ", " << j << "): " << d[i * p.n + j] << " vs "
            << independent_exact_block16(p, i, j);
  }
}

// The fast path equals the reference bit for bit: exact_block:16 and :8 (the vectorised path on
// e2m1 and e4m3fn elements), the other models NVFP4 takes, e5m2 elements (their products are too
// wide for the direct sums: the reference), C in both roles, a bias, NaN scales, bf16 output.
TEST(GemmNvfp4, FastEqualsReference) {
  std::mt19937_64 rng(61);
  const M models[] = {M::exact_block(16), M::exact_block(8), M::fp32_sequential(), M::systolic(128)};
  const FormatId formats[] = {FormatId::kE2M1, FormatId::kE4M3FN, FormatId::kE5M2};
  int trial = 0;
  for (const M& model : models)
    for (FormatId f : formats)
      for (int rep = 0; rep < 3; ++rep, ++trial) {
        Nvfp4Problem p = random_problem(rng, 1 + rng() % 40, 1 + rng() % 40, 16 * (1 + rng() % 24), f, rep == 1,
                                        rep == 2 ? 50 : 0);
        if (rep != 0) {
          p.c.resize(p.m * p.n);
          for (auto& x : p.c) x = static_cast<float>(static_cast<int>(rng() % 2001) - 1000) * 0.37f;
          p.role = rep == 1 ? CRole::kEpilogue : CRole::kAccumulator;
          p.bias.resize(p.n);
          for (auto& x : p.bias) x = static_cast<float>(static_cast<int>(rng() % 21) - 10) * 0.25f;
        }
        std::vector<float> want(p.m * p.n);
        std::vector<std::uint16_t> want16(p.m * p.n);
        gemm_reference(p.args(), {.model = model}, std::span<float>(want));
        gemm_reference(p.args(), {.model = model}, std::span<std::uint16_t>(want16));
        for (Isa isa : kAllIsas) {
          if (!isa_supported(isa)) continue;
          for (int threads : {1, 3}) {
            const GemmOptions o{.model = model, .threads = threads, .isa = isa};
            std::vector<float> got(p.m * p.n);
            gemm(p.args(), o, std::span<float>(got));
            for (std::size_t i = 0; i < got.size(); ++i)
              ASSERT_TRUE(same_bits(got[i], want[i]))
                  << model_name(model) << " " << format_of(f).name << " trial " << trial << " isa "
                  << isa_name(isa) << " threads " << threads << " at " << i << ": " << got[i] << " vs " << want[i];
            std::vector<std::uint16_t> got16(p.m * p.n);
            gemm(p.args(), o, std::span<std::uint16_t>(got16));
            ASSERT_EQ(got16, want16) << model_name(model) << " trial " << trial;
          }
        }
      }
}

TEST(GemmNvfp4, PathAndProfiles) {
  std::mt19937_64 rng(3);
  const Nvfp4Problem p = random_problem(rng, 4, 5, 32, FormatId::kE2M1, false, 0);
  const GemmOptions ocp = gemm_options(device_profile(ProfileId::kOcp), p.args());
  EXPECT_EQ(ocp.model, M::exact_block(16));
  EXPECT_NE(gemm_path(p.args(), ocp), "reference");
  EXPECT_EQ(gemm_options(device_profile(ProfileId::kFp32), p.args()).model, M::fp32_sequential());
  EXPECT_EQ(gemm_path(p.args(), {.model = M::fp32_sequential()}), "reference");
  for (ProfileId id : {ProfileId::kTrn2, ProfileId::kTrn3, ProfileId::kHopper}) {
    try {
      gemm_options(device_profile(id), p.args());
      ADD_FAILURE() << "profile " << device_profile(id).name << " took NVFP4 operands";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("has no NVFP4 matmul"), std::string::npos) << e.what();
    }
  }
  Nvfp4Problem q = p;
  q.fa = q.fb = FormatId::kE4M3FN;
  EXPECT_THROW(gemm_options(device_profile(ProfileId::kOcp), q.args()), std::invalid_argument);
  std::vector<float> d(p.m * p.n);
  try {
    trn::gemm_trainium(p.args(), {.model = M::systolic(128)}, std::span<float>(d));
    ADD_FAILURE() << "gemm_trainium took NVFP4 operands";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("NVFP4"), std::string::npos) << e.what();
  }
}

// alpha = fp32(1 / fp32(S_a * S_b)): a product that overflows gives 0, one that underflows +Inf.
TEST(GemmNvfp4, AlphaAtTheEdges) {
  std::mt19937_64 rng(9);
  Nvfp4Problem p = random_problem(rng, 2, 3, 16, FormatId::kE2M1, false, 0);
  for (auto& s : p.sa) s = 0x38;  // 1.0
  for (auto& s : p.sb) s = 0x38;
  std::vector<float> d(p.m * p.n), r(p.m * p.n);
  p.global_a = 3.0e38f, p.global_b = 2.0f;  // S_a * S_b = Inf: alpha = +0
  gemm(p.args(), {.model = M::exact_block(16)}, std::span<float>(d));
  gemm_reference(p.args(), {.model = M::exact_block(16)}, std::span<float>(r));
  for (std::size_t i = 0; i < d.size(); ++i) EXPECT_TRUE(same_bits(d[i], r[i]) && std::fabs(d[i]) == 0.0f) << d[i];
  p.global_a = 1e-30f, p.global_b = 1e-30f;  // S_a * S_b = +0: alpha = +Inf
  gemm(p.args(), {.model = M::exact_block(16)}, std::span<float>(d));
  gemm_reference(p.args(), {.model = M::exact_block(16)}, std::span<float>(r));
  for (std::size_t i = 0; i < d.size(); ++i) EXPECT_TRUE(same_bits(d[i], r[i])) << d[i] << " vs " << r[i];
  p.global_a = 448.0f, p.global_b = 6.0f;  // a plain case: 1 / 2688
  gemm(p.args(), {.model = M::exact_block(16)}, std::span<float>(d));
  for (std::size_t i = 0; i < p.m; ++i)
    for (std::size_t j = 0; j < p.n; ++j) EXPECT_TRUE(same_bits(d[i * p.n + j], independent_exact_block16(p, i, j)));
}

std::string error_of(const Nvfp4Problem& p, const GemmOptions& o = {.model = M::exact_block(16)}) {
  std::vector<float> d(p.m * p.n);
  std::string fast, ref;
  try { gemm(p.args(), o, std::span<float>(d)); } catch (const std::invalid_argument& e) { fast = e.what(); }
  try { gemm_reference(p.args(), o, std::span<float>(d)); } catch (const std::invalid_argument& e) { ref = e.what(); }
  EXPECT_EQ(fast, ref);
  return fast;
}

TEST(GemmNvfp4, Errors) {
  std::mt19937_64 rng(5);
  const Nvfp4Problem p = random_problem(rng, 3, 4, 32, FormatId::kE2M1, false, 0);
  EXPECT_EQ(error_of(p), "");
  for (float bad : {0.0f, -1.0f, INFINITY, NAN}) {
    Nvfp4Problem q = p;
    q.global_b = bad;
    EXPECT_NE(error_of(q).find("gemm: b.global_scale: "), std::string::npos) << bad;
    EXPECT_NE(error_of(q).find("is not a finite positive NVFP4 tensor scale"), std::string::npos) << error_of(q);
  }
  {
    Nvfp4Problem q = random_problem(rng, 3, 4, 40, FormatId::kE2M1, false, 0);
    q.sa.resize(3 * 3), q.sb.resize(3 * 4);  // the grids of K = 40
    EXPECT_EQ(error_of(q), "gemm: K = 40 is not a multiple of 16 (NVFP4 blocks of 16 along K)");
  }
  { Nvfp4Problem q = p; q.sa.pop_back(); EXPECT_EQ(error_of(q), "gemm: a.scale_codes: 5 E4M3FN codes, expected 3 x 2"); }
  {
    Nvfp4Problem q = p;
    q.gb = Granularity::tensor();
    q.sb.clear();
    EXPECT_NE(error_of(q).find("an NVFP4 operand pairs with NVFP4 only"), std::string::npos) << error_of(q);
  }
  {
    Nvfp4Problem q = p;
    q.ga = Granularity::nvfp4_column();
    EXPECT_NE(error_of(q).find("a.granularity: nvfp4_16x1 is not one the GEMM takes"), std::string::npos)
        << error_of(q);
  }
  EXPECT_EQ(error_of(p, {.model = M::hopper()}),
            "gemm: model fused:32:13:rtz: NVFP4 operands take fp32_sequential, exact_block or systolic");
}

}  // namespace
}  // namespace fp8q
