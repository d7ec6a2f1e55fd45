// Bad shapes, sizes, codes and scales give clear errors naming the tensor and field; device
// profiles reject what their chip cannot do and pick the documented model.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "fp8q/kernels/gemm.hpp"
#include "fp8q/kernels/profile.hpp"
#include "gemm_fixture.hpp"
#include "hostile_fp_env.hpp"

namespace fp8q {
namespace {

using testing::Problem;
using S = testing::Scales;
using M = AccumulationModel;

// The message of the std::invalid_argument that f throws ("" when it does not throw).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

Problem small() {
  std::mt19937_64 rng(1);
  return testing::random_problem(rng, 3, 4, 5, FormatId::kE4M3FN, FormatId::kE5M2, S::kTensor, S::kPerChannel, true, true, 0);
}

std::string gemm_error(const Problem& p, const GemmOptions& o = {}, std::size_t out = 12) {
  std::vector<float> d(out);
  const std::string fast = error_of([&] { gemm(p.args(), o, std::span<float>(d)); });
  const std::string ref = error_of([&] { gemm_reference(p.args(), o, std::span<float>(d)); });
  EXPECT_EQ(fast, ref);  // both paths check the same way
  return fast;
}

TEST(GemmErrors, NameTheTensorAndField) {
  Problem p = small();
  EXPECT_EQ(gemm_error(p), "");
  EXPECT_EQ(gemm_error(p, {}, 11), "gemm: output: 11 elements, expected 3 x 4");
  { Problem q = p; q.a.pop_back(); EXPECT_EQ(gemm_error(q), "gemm: a: 14 codes, expected 3 x 5"); }
  { Problem q = p; q.k = 4; EXPECT_EQ(gemm_error(q), "gemm: a: 15 codes, expected 3 x 4"); }
  { Problem q = p; q.scale_b.push_back(1); EXPECT_EQ(gemm_error(q), "gemm: b.scale_inv: 5 values, expected 4 for granularity col"); }
  { Problem q = p; q.scale_b[2] = 0; EXPECT_EQ(gemm_error(q), "gemm: b.scale_inv[2]: 0 is not a finite positive multiplier"); }
  { Problem q = p; q.scale_b[1] = -1e-40f;
    EXPECT_EQ(gemm_error(q), "gemm: b.scale_inv[1]: -9.9999461e-41 is not a finite positive multiplier"); }
  { Problem q = p; q.scale_a[0] = -1; EXPECT_NE(gemm_error(q).find("a.scale_inv[0]"), std::string::npos); }
  { Problem q = p; q.c.pop_back(); EXPECT_EQ(gemm_error(q), "gemm: c: 11 values, expected 3 x 4"); }
  { Problem q = p; q.bias.push_back(0); EXPECT_EQ(gemm_error(q), "gemm: bias: 5 values, expected N = 4"); }
  { Problem q = p; q.fa = FormatId::kE8M0; EXPECT_NE(gemm_error(q).find("a: format e8m0 is not an element format"), std::string::npos); }
  { Problem q = p; q.fb = FormatId::kBF16; EXPECT_NE(gemm_error(q).find("b: format bf16"), std::string::npos); }
  { Problem q = p; q.fa = FormatId::kE2M1; q.a.assign(15, 0x0F); q.a[7] = 0x13;
    EXPECT_EQ(gemm_error(q), "gemm: a[1, 2]: byte 19 is not a e2m1 code (4-bit codes, high bits must be 0)"); }
  { Problem q = p; q.sa = S::kBlock128; q.scale_a.assign(3, 1.0f);
    EXPECT_EQ(gemm_error(q), "gemm: a has granularity block1x128, b has granularity col: 1x128 / 128x128 block scaling needs both operands"); }
  { Problem q = p; q.sa = S::kMx32; q.scale_a.clear(); q.mx_a.assign(3, 127);
    EXPECT_EQ(gemm_error(q), "gemm: a has granularity mx, b has granularity col: an MX operand pairs with MX scales or none"); }
  { Problem q = p; q.sa = S::kMx32; q.scale_a.clear(); q.mx_a.assign(2, 127);
    EXPECT_EQ(gemm_error(q), "gemm: a.scale_codes: 2 E8M0 codes, expected 3 x 1"); }
  // each operand's granularity is stated on its own matrix: A [M, K], B [K, N]
  { GemmArgs g = p.args(); g.a.granularity = Granularity::column();
    EXPECT_EQ(error_of([&] { gemm_reference(g, {}, std::span<float>()); }),
              "gemm: a.granularity: col is not one the GEMM takes for A [M, K] (tensor row block1x128 mx nvfp4 nvfp4_16x16)"); }
  { GemmArgs g = p.args(); g.b.granularity = Granularity::mx();
    EXPECT_EQ(error_of([&] { gemm(g, {}, std::span<float>()); }),
              "gemm: b.granularity: mx is not one the GEMM takes for B [K, N] (tensor col block128x128 mx32x1 nvfp4_16x1 nvfp4_16x16)"); }
  { Problem q = p; q.sa = S::kNone; q.scale_a.clear(); EXPECT_EQ(gemm_error(q), ""); }  // tensor, no scale: 1
  EXPECT_NE(gemm_error(p, {.model = M::exact_block(0)}).find("block/tile size must be >= 1"), std::string::npos);
}

// The output may share no byte with an input: the fast paths clear it before they read C, so
// D = AB + C written over C gave AB + AB (the reference gave AB + C).
TEST(GemmErrors, OutputOverlappingAnInputIsRefused) {
  Problem p = small();
  for (const bool fast : {true, false}) {
    auto run = [&](std::span<float> out) {
      return error_of([&] { fast ? gemm(p.args(), {}, out) : gemm_reference(p.args(), {}, out); });
    };
    EXPECT_EQ(run(std::span(p.c)), "gemm: output overlaps c: write the result to memory no input uses");
    std::vector<float> wide(16);
    p.bias.assign(4, 0.5f);
    std::span<const float> bias_view(wide.data() + 11, 4);  // bias inside the output's last element
    std::copy(p.bias.begin(), p.bias.end(), wide.begin() + 11);
    GemmArgs a = p.args();
    a.bias = bias_view;
    const std::string e = error_of([&] {
      fast ? gemm(a, {}, std::span(wide).first(12)) : gemm_reference(a, {}, std::span(wide).first(12));
    });
    EXPECT_EQ(e, "gemm: output overlaps bias: write the result to memory no input uses");
    std::vector<float> apart(12);
    EXPECT_EQ(run(apart), "");
  }
}

// scale_inv is checked on its bits: a subnormal scale is a positive multiplier under the
// caller's DAZ too (a float comparison took it for 0), and the result does not change.
TEST(GemmErrors, SubnormalScaleAcceptedUnderTheCallersDaz) {
  Problem p = small();
  p.scale_a[0] = 1e-40f;
  std::vector<float> plain(12), daz(12);
  gemm(p.args(), {}, std::span<float>(plain));
  std::string e, r;
  {
    test::ScopedHostileFpEnv env(test::HostileRounding::kKeep);  // flush-to-zero
    e = error_of([&] { gemm(p.args(), {}, std::span<float>(daz)); });
    r = error_of([&] { gemm_reference(p.args(), {}, std::span<float>(daz)); });
  }
  EXPECT_EQ(e, "");
  EXPECT_EQ(r, "");
  EXPECT_EQ(std::memcmp(plain.data(), daz.data(), 48), 0);
}

TEST(Profiles, NamesAndModels) {
  for (const char* name : {"trn2", "trn3", "ocp", "hopper", "fp32"}) {
    const auto id = parse_profile(name);
    ASSERT_TRUE(id.has_value()) << name;
    EXPECT_EQ(device_profile(*id).name, name);
  }
  EXPECT_FALSE(parse_profile("h100").has_value());
  Problem p = small();
  EXPECT_EQ(gemm_options(device_profile(ProfileId::kHopper), p.args()).model, M::hopper());
  EXPECT_EQ(gemm_options(device_profile(ProfileId::kOcp), p.args()).model, M::fp32_sequential());
  EXPECT_EQ(gemm_options(device_profile(ProfileId::kOcp), p.args(), M::systolic(128), 3).model, M::systolic(128));
  EXPECT_EQ(gemm_options(device_profile(ProfileId::kOcp), p.args(), std::nullopt, 3).threads, 3);
  Problem mx = p;
  mx.sa = mx.sb = S::kMx32, mx.scale_a.clear(), mx.scale_b.clear(), mx.mx_a.assign(3, 127), mx.mx_b.assign(4, 127);
  EXPECT_EQ(gemm_options(device_profile(ProfileId::kOcp), mx.args()).model, M::exact_block(32));
  EXPECT_EQ(gemm_options(device_profile(ProfileId::kTrn3), mx.args()).model, M::trainium3_mx(Trn3Layout::kWrapX));
  const GemmOptions trn2 = gemm_options(device_profile(ProfileId::kTrn2), mx.args());
  EXPECT_EQ(trn2.model, M::systolic(128));
  EXPECT_TRUE(trn2.mx_dequantize_to_bf16);
  Problem t2 = p;
  t2.fa = FormatId::kE4M3, t2.fb = FormatId::kE3M4;
  EXPECT_EQ(gemm_options(device_profile(ProfileId::kTrn2), t2.args()).model, M::systolic(128));
}

TEST(Profiles, RejectWhatTheChipCannotDo) {
  Problem p = small();  // e4m3fn x e5m2
  EXPECT_EQ(error_of([&] { gemm_options(device_profile(ProfileId::kTrn2), p.args()); }),
            "profile trn2: a is e4m3fn, not a matmul format of trn2 (e4m3, e5m2, e3m4)");
  Problem mixed = p;
  mixed.fb = FormatId::kE4M3;
  EXPECT_EQ(error_of([&] { gemm_options(device_profile(ProfileId::kTrn3), mixed.args()); }),
            "profile trn3: a is e4m3fn and b is e4m3: trn3 never mixes e4m3fn with e4m3 in one matmul");
  Problem mx = p;
  mx.sa = mx.sb = S::kMx32, mx.scale_a.clear(), mx.scale_b.clear(), mx.mx_a.assign(3, 127), mx.mx_b.assign(4, 127);
  EXPECT_EQ(error_of([&] { gemm_options(device_profile(ProfileId::kHopper), mx.args()); }),
            "profile hopper: MX operands (E8M0 scales per 32 along K) are not supported: hopper has no MX matmul");
  mx.fa = FormatId::kE3M2;
  EXPECT_EQ(error_of([&] { gemm_options(device_profile(ProfileId::kTrn3), mx.args()); }),
            "profile trn3: a is e3m2, not a MX element format of trn3 (e4m3fn, e5m2, e2m1)");
  EXPECT_EQ(error_of([&] { gemm_options(device_profile(ProfileId::kOcp), mx.args()); }), "");
}

// Trainium2's MX path: operands dequantized to bf16 first. 448 * 2^127 overflows bf16 (Inf);
// 1 * 2^-127 survives as a bf16 subnormal times 1 (exact); e2m1 0.5 * 2^3 = 4.
TEST(Profiles, Trainium2DequantizesMxToBf16) {
  Problem p{.m = 1, .n = 1, .k = 2, .fa = FormatId::kE4M3FN, .fb = FormatId::kE4M3FN, .sa = S::kMx32, .sb = S::kMx32};
  p.a = {0x7E, 0x38}, p.b = {0x38, 0x38};  // 448, 1 | 1, 1
  p.mx_a = {127 + 127}, p.mx_b = {127};
  std::vector<float> d(1);
  const GemmOptions trn2 = gemm_options(device_profile(ProfileId::kTrn2), p.args());
  gemm(p.args(), trn2, std::span<float>(d));
  EXPECT_EQ(d[0], std::numeric_limits<float>::infinity());
  p.mx_a = {127 + 100};  // the fp32 profile keeps the products exact: 449 * 2^100, in range
  gemm(p.args(), gemm_options(device_profile(ProfileId::kFp32), p.args()), std::span<float>(d));
  EXPECT_EQ(d[0], 449.0f * 0x1p100f);
  gemm(p.args(), trn2, std::span<float>(d));
  EXPECT_EQ(d[0], 449.0f * 0x1p100f);  // 448 * 2^100 and 2^100 are bf16 values, exact
  p.mx_a = {0};  // 2^-127
  gemm(p.args(), trn2, std::span<float>(d));
  EXPECT_EQ(d[0], 449.0f * 0x1p-127f);  // 448 * 2^-127 and 2^-127 are bf16 subnormals, exact
}

}  // namespace
}  // namespace fp8q
