// The trainium3_mx micro-kernel (isa/trn3mx_kernel.hpp) on AVX-512F: 8 fp64 lanes per zmm
// register, masks in k registers; 4 rows x 16 columns per register tile (8 rounding chains).
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "fp8q/numerics/isa.hpp"
#include "isa/trn3mx.hpp"

namespace {
#include "isa/trn3mx_kernel.hpp"

struct OpsTrn3Avx512 {
  static constexpr std::size_t kLanes = 8;
  using D = __m512d;
  using M = __mmask8;
  using P = __m256;
  static __m512i bits(D x) { return _mm512_castpd_si512(x); }
  static D zero() { return _mm512_setzero_pd(); }
  static D set1(double x) { return _mm512_set1_pd(x); }
  static D load(const double* p) { return _mm512_loadu_pd(p); }
  static D add(D a, D b) { return _mm512_add_pd(a, b); }
  static D sub(D a, D b) { return _mm512_sub_pd(a, b); }
  static D mul(D a, D b) { return _mm512_mul_pd(a, b); }
  static D fma(D x, D y, D s) { return _mm512_fmadd_pd(x, y, s); }
  static M finite(D r) {
    const __m512i exponent = _mm512_set1_epi64(0x7FF0000000000000);
    return _mm512_cmp_epi64_mask(_mm512_and_si512(bits(r), exponent), exponent, _MM_CMPINT_NE);
  }
  static M nonzero(D e) { return _mm512_cmp_pd_mask(e, zero(), _CMP_NEQ_UQ); }
  static M even(D r) { return _mm512_testn_epi64_mask(bits(r), _mm512_set1_epi64(1)); }
  static M differ(D e, D r) {
    return static_cast<M>(_mm512_cmp_pd_mask(e, zero(), _CMP_GT_OQ) ^ _mm512_cmp_pd_mask(r, zero(), _CMP_GT_OQ));
  }
  static M m_and(M a, M b) { return static_cast<M>(a & b); }
  static M m_andnot(M a, M b) { return static_cast<M>(~a & b); }
  static M m_or(M a, M b) { return static_cast<M>(a | b); }
  static bool any(M m) { return m != 0; }
  static M inexact(D x, D t, D s) {
    return static_cast<M>(_mm512_cmp_pd_mask(sub(x, t), s, _CMP_NEQ_OQ) | _mm512_cmp_pd_mask(sub(x, s), t, _CMP_NEQ_OQ));
  }
  static M midpoint(D x) {
    const __m512i low = _mm512_and_si512(bits(x), _mm512_set1_epi64(0x1FFFFFFF));
    return _mm512_cmpeq_epi64_mask(low, _mm512_set1_epi64(0x10000000));
  }
  static M below_normal(D x) {  // |x|'s pattern - 1 < 2^-126's pattern - 1, unsigned
    const __m512i abs = _mm512_and_si512(bits(x), _mm512_set1_epi64(0x7FFFFFFFFFFFFFFF));
    return _mm512_cmp_epu64_mask(_mm512_sub_epi64(abs, _mm512_set1_epi64(1)),
                                 _mm512_set1_epi64(0x380FFFFFFFFFFFFF), _MM_CMPINT_LT);
  }
  // rounded up and down, the two results are one pattern or adjacent ones, exactly one of them
  // odd: take down where it is odd, else up (an exact zero then keeps up's +0, as nearest-even)
  static D add_odd(D t, D s) {
    const D up = _mm512_maskz_add_round_pd(0xFF, t, s, _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC);
    const D down = _mm512_maskz_add_round_pd(0xFF, t, s, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    return _mm512_mask_blend_pd(_mm512_test_epi64_mask(bits(down), _mm512_set1_epi64(1)), up, down);
  }
  static D step(D r, M up, M down) {
    const __m512i one = _mm512_set1_epi64(1);
    __m512i b = _mm512_mask_add_epi64(bits(r), up, bits(r), one);
    return _mm512_castsi512_pd(_mm512_mask_sub_epi64(b, down, b, one));
  }
  // the zero-masked forms: the same conversions, without GCC 12's uninitialised-operand warning
  static D round_f32(D x) { return _mm512_maskz_cvtps_pd(0xFF, _mm512_maskz_cvtpd_ps(0xFF, x)); }
  // x + c - c with c = 1.5 * 2^(e + 29), 2^e <= |x| < 2^(e + 1): x + c lies in c's binade, whose
  // ulp is fp32's at x, 2^(e - 23), and c is an even multiple of it, so the sum rounds x as fp32
  // does, ties to even; the difference is exact. Two FMAs for the two conversions
  static D round_f32_bounded(D x) {
    const D e = _mm512_castsi512_pd(_mm512_and_si512(bits(x), _mm512_set1_epi64(0x7FF0000000000000)));
    const D k = _mm512_set1_pd(0x1.8p29);
    return _mm512_fnmadd_pd(e, k, _mm512_fmadd_pd(e, k, x));
  }
  static P p_load(const float* p) { return _mm256_loadu_ps(p); }
  static void p_store(float* p, P v) { _mm256_storeu_ps(p, v); }
  static P p_add(P psum, D t) { return _mm256_add_ps(psum, _mm512_maskz_cvtpd_ps(0xFF, t)); }
};
}  // namespace

namespace fp8q::detail {
Trn3MxKernel trn3mx_kernel_avx512() {
  return isa_supported(Isa::kAvx512) ? Trn3MxKernelT<OpsTrn3Avx512, 4, 2>::kernel() : Trn3MxKernel{};
}
}  // namespace fp8q::detail
