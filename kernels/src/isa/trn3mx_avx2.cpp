// The trainium3_mx micro-kernel (isa/trn3mx_kernel.hpp) on AVX2 + FMA: 4 fp64 lanes per ymm
// register, masks as all-ones lanes; 2 rows x 8 columns per register tile (4 rounding chains,
// which with their sums and temporaries fill the 16 ymm registers).
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "fp8q/numerics/isa.hpp"
#include "isa/trn3mx.hpp"

namespace {
#include "isa/trn3mx_kernel.hpp"

struct OpsTrn3Avx2 {
  static constexpr std::size_t kLanes = 4;
  using D = __m256d;
  using M = __m256i;  // all bits of a lane set (true) or clear
  using P = __m128;
  static __m256i bits(D x) { return _mm256_castpd_si256(x); }
  static __m256i i64(std::int64_t x) { return _mm256_set1_epi64x(x); }
  static D zero() { return _mm256_setzero_pd(); }
  static D set1(double x) { return _mm256_set1_pd(x); }
  static D load(const double* p) { return _mm256_loadu_pd(p); }
  static D add(D a, D b) { return _mm256_add_pd(a, b); }
  static D sub(D a, D b) { return _mm256_sub_pd(a, b); }
  static D mul(D a, D b) { return _mm256_mul_pd(a, b); }
  static D fma(D x, D y, D s) { return _mm256_fmadd_pd(x, y, s); }
  static M finite(D r) {
    const __m256i exponent = i64(0x7FF0000000000000);
    return _mm256_xor_si256(_mm256_cmpeq_epi64(_mm256_and_si256(bits(r), exponent), exponent), i64(-1));
  }
  static M nonzero(D e) { return _mm256_castpd_si256(_mm256_cmp_pd(e, zero(), _CMP_NEQ_UQ)); }
  static M even(D r) { return _mm256_cmpeq_epi64(_mm256_and_si256(bits(r), i64(1)), _mm256_setzero_si256()); }
  static M differ(D e, D r) {
    return _mm256_castpd_si256(_mm256_xor_pd(_mm256_cmp_pd(e, zero(), _CMP_GT_OQ), _mm256_cmp_pd(r, zero(), _CMP_GT_OQ)));
  }
  static M m_and(M a, M b) { return _mm256_and_si256(a, b); }
  static M m_andnot(M a, M b) { return _mm256_andnot_si256(a, b); }
  static M m_or(M a, M b) { return _mm256_or_si256(a, b); }
  static bool any(M m) { return _mm256_testz_si256(m, m) == 0; }
  static M inexact(D x, D t, D s) {
    return _mm256_castpd_si256(
        _mm256_or_pd(_mm256_cmp_pd(sub(x, t), s, _CMP_NEQ_OQ), _mm256_cmp_pd(sub(x, s), t, _CMP_NEQ_OQ)));
  }
  static M midpoint(D x) { return _mm256_cmpeq_epi64(_mm256_and_si256(bits(x), i64(0x1FFFFFFF)), i64(0x10000000)); }
  static M below_normal(D x) {  // 0 < |x|'s pattern < 2^-126's (signed compares of patterns below 2^63)
    const __m256i abs = _mm256_and_si256(bits(x), i64(0x7FFFFFFFFFFFFFFF));
    return _mm256_andnot_si256(_mm256_cmpeq_epi64(abs, _mm256_setzero_si256()),
                               _mm256_cmpgt_epi64(i64(0x3810000000000000), abs));
  }
  static D step(D r, M up, M down) {
    const __m256i one = i64(1);
    const __m256i b = _mm256_add_epi64(bits(r), _mm256_and_si256(up, one));
    return _mm256_castsi256_pd(_mm256_sub_epi64(b, _mm256_and_si256(down, one)));
  }
  static D round_f32(D x) { return _mm256_cvtps_pd(_mm256_cvtpd_ps(x)); }
  static P p_load(const float* p) { return _mm_loadu_ps(p); }
  static void p_store(float* p, P v) { _mm_storeu_ps(p, v); }
  static P p_add(P psum, D t) { return _mm_add_ps(psum, _mm256_cvtpd_ps(t)); }
};
}  // namespace

namespace fp8q::detail {
Trn3MxKernel trn3mx_kernel_avx2() {
  return isa_supported(Isa::kAvx2) ? Trn3MxKernelT<OpsTrn3Avx2, 2, 2>::kernel() : Trn3MxKernel{};
}
}  // namespace fp8q::detail
