// The trainium3_mx:1x32 column kernel (isa/trn3mx_kernel.hpp) on AVX2: 4 fp64 lanes per ymm
// register, 16 columns per pass (16 ymm registers hold four chains and their temporaries).
// -ffp-contract=off keeps each product and sum a separate rounding (exact here in any case).
#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "fp8q/numerics/accumulation.hpp"
#include "fp8q/numerics/isa.hpp"
#include "isa/trn3mx.hpp"

namespace {
#include "isa/trn3mx_kernel.hpp"

struct OpsTrn3Avx2 {
  static constexpr std::size_t kLanes = 4;
  using D = __m256d;
  using M = __m256i;  // all bits of a lane set (true) or clear
  using P = __m128;
  static D zero() { return _mm256_setzero_pd(); }
  static D set1(double x) { return _mm256_set1_pd(x); }
  static D load(const double* p) { return _mm256_loadu_pd(p); }
  static D add(D a, D b) { return _mm256_add_pd(a, b); }
  static D sub(D a, D b) { return _mm256_sub_pd(a, b); }
  static D mul(D a, D b) { return _mm256_mul_pd(a, b); }
  static M finite(D r) {
    const __m256i exponent = _mm256_set1_epi64x(0x7FF0000000000000);
    const __m256i bits = _mm256_and_si256(_mm256_castpd_si256(r), exponent);
    return _mm256_xor_si256(_mm256_cmpeq_epi64(bits, exponent), _mm256_set1_epi64x(-1));
  }
  static M nonzero(D e) { return _mm256_castpd_si256(_mm256_cmp_pd(e, zero(), _CMP_NEQ_UQ)); }
  static M even(D r) {
    const __m256i one = _mm256_set1_epi64x(1);
    return _mm256_cmpeq_epi64(_mm256_and_si256(_mm256_castpd_si256(r), one), _mm256_setzero_si256());
  }
  static M differ(D e, D r) {
    return _mm256_castpd_si256(_mm256_xor_pd(_mm256_cmp_pd(e, zero(), _CMP_GT_OQ), _mm256_cmp_pd(r, zero(), _CMP_GT_OQ)));
  }
  static M m_and(M a, M b) { return _mm256_and_si256(a, b); }
  static M m_andnot(M a, M b) { return _mm256_andnot_si256(a, b); }
  static D step(D r, M up, M down) {
    const __m256i one = _mm256_set1_epi64x(1);
    __m256i bits = _mm256_add_epi64(_mm256_castpd_si256(r), _mm256_and_si256(up, one));
    return _mm256_castsi256_pd(_mm256_sub_epi64(bits, _mm256_and_si256(down, one)));
  }
  static D round_f32(D x) { return _mm256_cvtps_pd(_mm256_cvtpd_ps(x)); }
  static P p_load(const float* p) { return _mm_loadu_ps(p); }
  static void p_store(float* p, P v) { _mm_storeu_ps(p, v); }
  static P p_add(P psum, D t) { return _mm_add_ps(psum, _mm256_cvtpd_ps(t)); }
};
}  // namespace

namespace fp8q::detail {
Trn3MxColumns trn3mx_columns_avx2() {
  return isa_supported(Isa::kAvx2) ? &Trn3MxKernelT<OpsTrn3Avx2, 4>::columns : nullptr;
}
}  // namespace fp8q::detail
