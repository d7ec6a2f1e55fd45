// The trainium3_mx:1x32 column kernel (isa/trn3mx_kernel.hpp) on AVX-512F: 8 fp64 lanes per zmm
// register, masks in k registers, 32 columns in one pass. -ffp-contract=off keeps each product
// and sum a separate rounding (exact here in any case).
#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "fp8q/numerics/accumulation.hpp"
#include "fp8q/numerics/isa.hpp"
#include "isa/trn3mx.hpp"

namespace {
#include "isa/trn3mx_kernel.hpp"

struct OpsTrn3Avx512 {
  static constexpr std::size_t kLanes = 8;
  using D = __m512d;
  using M = __mmask8;
  using P = __m256;
  static D zero() { return _mm512_setzero_pd(); }
  static D set1(double x) { return _mm512_set1_pd(x); }
  static D load(const double* p) { return _mm512_loadu_pd(p); }
  static D add(D a, D b) { return _mm512_add_pd(a, b); }
  static D sub(D a, D b) { return _mm512_sub_pd(a, b); }
  static D mul(D a, D b) { return _mm512_mul_pd(a, b); }
  static M finite(D r) {
    const __m512i exponent = _mm512_set1_epi64(0x7FF0000000000000);
    return _mm512_cmp_epi64_mask(_mm512_and_si512(_mm512_castpd_si512(r), exponent), exponent, _MM_CMPINT_NE);
  }
  static M nonzero(D e) { return _mm512_cmp_pd_mask(e, zero(), _CMP_NEQ_UQ); }
  static M even(D r) { return _mm512_testn_epi64_mask(_mm512_castpd_si512(r), _mm512_set1_epi64(1)); }
  static M differ(D e, D r) {
    return static_cast<M>(_mm512_cmp_pd_mask(e, zero(), _CMP_GT_OQ) ^ _mm512_cmp_pd_mask(r, zero(), _CMP_GT_OQ));
  }
  static M m_and(M a, M b) { return static_cast<M>(a & b); }
  static M m_andnot(M a, M b) { return static_cast<M>(~a & b); }
  static D step(D r, M up, M down) {
    const __m512i one = _mm512_set1_epi64(1);
    __m512i bits = _mm512_castpd_si512(r);
    bits = _mm512_mask_add_epi64(bits, up, bits, one);
    return _mm512_castsi512_pd(_mm512_mask_sub_epi64(bits, down, bits, one));
  }
  // the zero-masked forms: the same conversions, without GCC 12's uninitialised-operand warning
  static D round_f32(D x) { return _mm512_maskz_cvtps_pd(0xFF, _mm512_maskz_cvtpd_ps(0xFF, x)); }
  static P p_load(const float* p) { return _mm256_loadu_ps(p); }
  static void p_store(float* p, P v) { _mm256_storeu_ps(p, v); }
  static P p_add(P psum, D t) { return _mm256_add_ps(psum, _mm512_maskz_cvtpd_ps(0xFF, t)); }
};
}  // namespace

namespace fp8q::detail {
Trn3MxColumns trn3mx_columns_avx512() {
  return isa_supported(Isa::kAvx512) ? &Trn3MxKernelT<OpsTrn3Avx512, 4>::columns : nullptr;
}
}  // namespace fp8q::detail
