// The trainium3_mx:1x32 column kernel on AVX-512F: the columns of isa/trn3mx.hpp in the fp64
// lanes of zmm registers, each lane the scalar path's operations in the same order.
// Compiled with -mavx512f; -ffp-contract=off keeps each product and sum a separate rounding
// (exact here in any case).
#include <immintrin.h>

#include "fp8q/numerics/isa.hpp"

#include <algorithm>

#include "fp8q/numerics/accumulation.hpp"
#include "trn3mx.hpp"

namespace fp8q::detail {
namespace {

constexpr std::size_t kInst = kTrn3MxInstructionK, kParts = kInst / 4, kGroup = kMxGroup;

// fp32 of the exact t + s per lane (t holds fp32 values): round to odd at 53 bits, then to fp32.
inline __m512d add_once(__m512d t, __m512d s) {
  const __m512d zero = _mm512_setzero_pd();
  const __m512i one = _mm512_set1_epi64(1), exponent = _mm512_set1_epi64(0x7FF0000000000000);
  const __m512d r = _mm512_add_pd(t, s);
  const __m512d bv = _mm512_sub_pd(r, t);
  const __m512d e = _mm512_add_pd(_mm512_sub_pd(t, _mm512_sub_pd(r, bv)), _mm512_sub_pd(s, bv));
  __m512i bits = _mm512_castpd_si512(r);
  const __mmask8 finite = _mm512_cmp_epi64_mask(_mm512_and_si512(bits, exponent), exponent, _MM_CMPINT_NE);
  const __mmask8 inexact = _mm512_cmp_pd_mask(e, zero, _CMP_NEQ_UQ);
  const __mmask8 even = _mm512_testn_epi64_mask(bits, one);
  const __mmask8 adjust = finite & inexact & even;
  // toward e: up in magnitude when e and r have the same sign
  const __mmask8 same = static_cast<__mmask8>(
      ~(_mm512_cmp_pd_mask(e, zero, _CMP_GT_OQ) ^ _mm512_cmp_pd_mask(r, zero, _CMP_GT_OQ)));
  bits = _mm512_mask_add_epi64(bits, adjust & same, bits, one);
  bits = _mm512_mask_sub_epi64(bits, adjust & static_cast<__mmask8>(~same), bits, one);
  return _mm512_maskz_cvtps_pd(0xFF, _mm512_maskz_cvtpd_ps(0xFF, _mm512_castsi512_pd(bits)));
}

// Four 8-lane vectors of columns at once: their rounding chains are independent, so the
// latency of one partition's add_once is hidden by the others'.
void columns(const double* a, const double* sa, const double* b, const double* sb, std::size_t ldb, std::size_t K,
             float* psum_io) {
  constexpr int kV = kTrn3Lanes / 8;
  __m256 psum[kV];
  for (int v = 0; v < kV; ++v) psum[v] = _mm256_loadu_ps(psum_io + 8 * v);
  for (std::size_t k0 = 0; k0 < K; k0 += kInst) {
    __m512d t[kV];
    for (int v = 0; v < kV; ++v) t[v] = _mm512_setzero_pd();
    for (std::size_t p = 0; p < kParts && k0 + 4 * p < K; ++p) {
      const std::size_t k = k0 + 4 * p, q = k / kGroup, len = std::min<std::size_t>(4, K - k);
      __m512d s[kV];
      for (int v = 0; v < kV; ++v) s[v] = _mm512_setzero_pd();
      for (std::size_t c = 0; c < len; ++c) {
        const __m512d x = _mm512_set1_pd(a[k + c]);
        for (int v = 0; v < kV; ++v) s[v] = _mm512_add_pd(s[v], _mm512_mul_pd(x, _mm512_loadu_pd(b + (k + c) * ldb + 8 * v)));
      }
      const __m512d scale = _mm512_set1_pd(sa[q]);
      for (int v = 0; v < kV; ++v)
        t[v] = add_once(t[v], _mm512_mul_pd(_mm512_mul_pd(s[v], scale), _mm512_loadu_pd(sb + q * ldb + 8 * v)));
    }
    for (int v = 0; v < kV; ++v) psum[v] = _mm256_add_ps(psum[v], _mm512_maskz_cvtpd_ps(0xFF, t[v]));  // PSUM: fp32(psum + t)
  }
  for (int v = 0; v < kV; ++v) _mm256_storeu_ps(psum_io + 8 * v, psum[v]);
}

}  // namespace

Trn3MxColumns trn3mx_columns_avx512() {
  return isa_supported(Isa::kAvx512) ? &columns : nullptr;
}

}  // namespace fp8q::detail
