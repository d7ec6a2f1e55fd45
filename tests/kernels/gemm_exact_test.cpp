// Integer-valued inputs (exact under every model: every partial sum is a small integer, so no
// rounding happens anywhere) against a double-precision product. Integer-valued FP8 codes
// are drawn from {-2, ..., 2} (with MX scales up to 2: |sum| <= 600 * 8 < 2^13, so even
// fused:32:13 keeps every bit); scales are powers of two, so the epilogue is exact too.
#include <gtest/gtest.h>

#include "fp8q/kernels/gemm.hpp"
#include "gemm_fixture.hpp"

namespace fp8q {
namespace {

using testing::Problem;
using M = AccumulationModel;
using S = testing::Scales;

std::uint8_t integer_code(std::mt19937_64& rng, const Format& f) {
  for (;;) {
    const auto code = static_cast<std::uint8_t>(rng() & 0xFF);
    const float v = decode_f32(code, f);
    if (std::isfinite(v) && v == std::trunc(v) && std::fabs(v) <= 2) return code;
  }
}

TEST(GemmExact, IntegerInputsMatchDoubleProductUnderEveryModel) {
  std::mt19937_64 rng(3);
  for (const auto& [m, n, k] : {std::tuple<std::size_t, std::size_t, std::size_t>{7, 9, 130}, {13, 5, 257}, {1, 33, 600}}) {
    for (const bool mx : {false, true}) {
      Problem p{.m = m, .n = n, .k = k, .fa = FormatId::kE4M3FN, .fb = FormatId::kE5M2};
      p.a.resize(m * k), p.b.resize(k * n);
      for (auto& x : p.a) x = integer_code(rng, format_of(p.fa));
      for (auto& x : p.b) x = integer_code(rng, format_of(p.fb));
      if (mx) {  // MX scales 2^-1 .. 2^1 on A and 2^0 on B: products stay multiples of 1/2
        p.sa = p.sb = S::kMx32;
        p.mx_a.resize(m * testing::cdiv(k, 32)), p.mx_b.assign(testing::cdiv(k, 32) * n, 127);
        for (auto& e : p.mx_a) e = static_cast<std::uint8_t>(126 + rng() % 3);
      } else {
        p.sa = S::kTensor, p.sb = S::kPerChannel;
        p.scale_a = {0.25f};
        for (std::size_t j = 0; j < n; ++j) p.scale_b.push_back(j % 2 == 0 ? 2.0f : 0.5f);
      }
      // the double-precision product
      std::vector<double> want(m * n);
      for (std::size_t i = 0; i < m; ++i)
        for (std::size_t j = 0; j < n; ++j) {
          double s = 0;
          for (std::size_t kk = 0; kk < k; ++kk) {
            double prod = double(decode_f32(p.a[i * k + kk], format_of(p.fa))) * decode_f32(p.b[kk * n + j], format_of(p.fb));
            if (mx) prod *= std::ldexp(1.0, p.mx_a[i * testing::cdiv(k, 32) + kk / 32] - 127);
            s += prod;
          }
          want[i * n + j] = mx ? s : s * 0.25 * p.scale_b[j];
        }
      for (const M& model : {M::fp32_sequential(), M::exact_block(32), M::systolic(128), M::systolic(5), M::hopper(),
                             M::fused(32, 13, Rounding::kTowardZero, 128), M::trainium3_mx(Trn3Layout::kWrapX),
                             M::trainium3_mx(Trn3Layout::k1x32)}) {
        std::vector<float> ref(m * n), fast(m * n);
        gemm_reference(p.args(), {.model = model, .threads = 2}, std::span<float>(ref));
        gemm(p.args(), {.model = model, .threads = 2}, std::span<float>(fast));
        for (std::size_t i = 0; i < m * n; ++i) {
          ASSERT_EQ(ref[i], want[i]) << model_name(model) << " mx " << mx << " element " << i;
          ASSERT_EQ(fast[i], want[i]) << model_name(model) << " mx " << mx << " element " << i;
        }
      }
    }
  }
}

}  // namespace
}  // namespace fp8q
