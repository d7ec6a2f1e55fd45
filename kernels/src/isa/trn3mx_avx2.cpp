// The trainium3_mx:1x32 column kernel on AVX2: the columns of isa/trn3mx.hpp in the fp64 lanes
// of ymm registers, each lane the scalar path's operations in the same order, 16 columns per
// pass (16 ymm registers hold four chains and their temporaries). -ffp-contract=off keeps each
// product and sum a separate rounding (exact here in any case).
#include <immintrin.h>

#include "fp8q/numerics/isa.hpp"

#include <algorithm>

#include "fp8q/numerics/accumulation.hpp"
#include "trn3mx.hpp"

namespace fp8q::detail {
namespace {

constexpr std::size_t kInst = kTrn3MxInstructionK, kParts = kInst / 4, kGroup = kMxGroup;
constexpr int kV = 4;  // vectors of 4 columns per pass

// fp32 of the exact t + s per lane (t holds fp32 values): round to odd at 53 bits, then to fp32.
inline __m256d add_once(__m256d t, __m256d s) {
  const __m256d zero = _mm256_setzero_pd();
  const __m256i one = _mm256_set1_epi64x(1), exponent = _mm256_set1_epi64x(0x7FF0000000000000);
  const __m256d r = _mm256_add_pd(t, s);
  const __m256d bv = _mm256_sub_pd(r, t);
  const __m256d e = _mm256_add_pd(_mm256_sub_pd(t, _mm256_sub_pd(r, bv)), _mm256_sub_pd(s, bv));
  __m256i bits = _mm256_castpd_si256(r);
  const __m256i not_finite = _mm256_cmpeq_epi64(_mm256_and_si256(bits, exponent), exponent);
  const __m256i inexact = _mm256_castpd_si256(_mm256_cmp_pd(e, zero, _CMP_NEQ_UQ));
  const __m256i even = _mm256_cmpeq_epi64(_mm256_and_si256(bits, one), _mm256_setzero_si256());
  const __m256i adjust = _mm256_andnot_si256(not_finite, _mm256_and_si256(inexact, even));
  // toward e: up in magnitude when e and r have the same sign
  const __m256i differ = _mm256_castpd_si256(
      _mm256_xor_pd(_mm256_cmp_pd(e, zero, _CMP_GT_OQ), _mm256_cmp_pd(r, zero, _CMP_GT_OQ)));
  bits = _mm256_add_epi64(bits, _mm256_and_si256(_mm256_andnot_si256(differ, adjust), one));
  bits = _mm256_sub_epi64(bits, _mm256_and_si256(_mm256_and_si256(differ, adjust), one));
  return _mm256_cvtps_pd(_mm256_cvtpd_ps(_mm256_castsi256_pd(bits)));
}

// kV * 4 columns: independent rounding chains, so one chain's add_once latency is hidden by the
// others'.
void pass(const double* a, const double* sa, const double* b, const double* sb, std::size_t ldb, std::size_t K,
          float* psum_io) {
  __m128 psum[kV];
  for (int v = 0; v < kV; ++v) psum[v] = _mm_loadu_ps(psum_io + 4 * v);
  for (std::size_t k0 = 0; k0 < K; k0 += kInst) {
    __m256d t[kV];
    for (int v = 0; v < kV; ++v) t[v] = _mm256_setzero_pd();
    for (std::size_t p = 0; p < kParts && k0 + 4 * p < K; ++p) {
      const std::size_t k = k0 + 4 * p, q = k / kGroup, len = std::min<std::size_t>(4, K - k);
      __m256d s[kV];
      for (int v = 0; v < kV; ++v) s[v] = _mm256_setzero_pd();
      for (std::size_t c = 0; c < len; ++c) {
        const __m256d x = _mm256_broadcast_sd(a + k + c);
        for (int v = 0; v < kV; ++v) s[v] = _mm256_add_pd(s[v], _mm256_mul_pd(x, _mm256_loadu_pd(b + (k + c) * ldb + 4 * v)));
      }
      const __m256d scale = _mm256_broadcast_sd(sa + q);
      for (int v = 0; v < kV; ++v)
        t[v] = add_once(t[v], _mm256_mul_pd(_mm256_mul_pd(s[v], scale), _mm256_loadu_pd(sb + q * ldb + 4 * v)));
    }
    for (int v = 0; v < kV; ++v) psum[v] = _mm_add_ps(psum[v], _mm256_cvtpd_ps(t[v]));  // PSUM: fp32(psum + t)
  }
  for (int v = 0; v < kV; ++v) _mm_storeu_ps(psum_io + 4 * v, psum[v]);
}

void columns(const double* a, const double* sa, const double* b, const double* sb, std::size_t ldb, std::size_t K,
             float* psum_io) {
  static_assert(kTrn3Lanes % (4 * kV) == 0);
  for (std::size_t j = 0; j < kTrn3Lanes; j += 4 * kV) pass(a, sa, b + j, sb + j, ldb, K, psum_io + j);
}

}  // namespace

Trn3MxColumns trn3mx_columns_avx2() { return isa_supported(Isa::kAvx2) ? &columns : nullptr; }

}  // namespace fp8q::detail
