// The AVX-512 (F) exact_block micro-kernel: exact_block_kernel.hpp over zmm registers, a row of
// 16 outputs in two accumulators of 8 fp64 (12 accumulators).
//
// Direct blocks use vfmadd231pd, exact here (exact_block.hpp); vcvtpd2ps rounds each block sum
// once under MXCSR 0x1F80 (nearest-even, no FTZ/DAZ: the driver's ScopedDefaultFpEnv) and vaddps
// adds it to the accumulator. Each operation below is the one the test's emulation
// (tests/kernels/ops_lanes16_models.hpp) reproduces lane by lane.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "fp8q/numerics/isa.hpp"
#include "isa/exact_block.hpp"

namespace {

#include "isa/exact_block_kernel.hpp"

struct OpsXbAvx512 {
  static constexpr std::size_t kLanes = 8;
  using D = __m512d;
  using Mask = __mmask8;

  static D set1(double x) { return _mm512_set1_pd(x); }
  static D load(const double* p) { return _mm512_loadu_pd(p); }
  static D fmadd(D a, D b, D c) { return _mm512_fmadd_pd(a, b, c); }
  static D mul(D a, D b) { return _mm512_mul_pd(a, b); }
  static D add(D a, D b) { return _mm512_add_pd(a, b); }
  static D sub(D a, D b) { return _mm512_sub_pd(a, b); }
  static Mask abs_ge(D p, D t) { return _mm512_cmp_pd_mask(_mm512_abs_pd(p), t, _CMP_GE_OQ); }
  static D blend(Mask m, D no, D yes) { return _mm512_mask_blend_pd(m, no, yes); }
  static Mask nonzero(D x) { return _mm512_cmp_pd_mask(x, _mm512_setzero_pd(), _CMP_NEQ_OQ); }
  static Mask even(D x) { return _mm512_testn_epi64_mask(_mm512_castpd_si512(x), _mm512_set1_epi64(1)); }
  static Mask signs_differ(D x, D y) {  // the xor's sign bit: a signed compare with 0
    return _mm512_cmplt_epi64_mask(_mm512_xor_si512(_mm512_castpd_si512(x), _mm512_castpd_si512(y)),
                                   _mm512_setzero_si512());
  }
  static D step(D x, Mask up, Mask down) {
    const __m512i one = _mm512_set1_epi64(1);
    __m512i u = _mm512_castpd_si512(x);
    u = _mm512_mask_add_epi64(u, up, u, one);
    u = _mm512_mask_sub_epi64(u, down, u, one);
    return _mm512_castsi512_pd(u);
  }
  // masked form: GCC warns on the unmasked intrinsic's undefined source
  static void add_rounded(float* acc, D x) {
    _mm256_storeu_ps(acc, _mm256_add_ps(_mm256_loadu_ps(acc), _mm512_maskz_cvtpd_ps(0xFF, x)));
  }
};

}  // namespace

namespace fp8q::detail {

XbKernel exact_block_kernel_avx512() {
  return isa_supported(Isa::kAvx512) ? &XbKernelT<OpsXbAvx512, 2>::run : nullptr;
}

}  // namespace fp8q::detail
