// The AVX2 + FMA exact_block micro-kernel: exact_block_kernel.hpp over xsimd, one row of 8
// outputs in two ymm vectors of 4 doubles (12 accumulators), the tile's 16 columns in two passes.
//
// Direct blocks use vfmadd231pd, exact here (exact_block.hpp): 12 independent accumulators keep
// both FMA pipes busy (Zen 3: 4 cycles latency, 32 doubles in flight needed, 48 here).
// vcvtpd2ps rounds each block sum once under MXCSR 0x1F80 (nearest-even, no FTZ/DAZ: the
// driver's ScopedDefaultFpEnv) and vaddps adds it to the accumulator.
#include <immintrin.h>
#include <xsimd/xsimd.hpp>

#include <cstddef>
#include <cstdint>

#include "fp8q/numerics/isa.hpp"
#include "isa/exact_block.hpp"

namespace {

#include "isa/exact_block_kernel.hpp"

using A = xsimd::avx2;
using Bd = xsimd::batch<double, A>;
using Bb = xsimd::batch_bool<double, A>;

// 8 fp64 lanes as two batches; a mask as two batch masks (all bits of a lane set: true). Two
// named halves, not an array: GCC keeps the former in registers.
struct D2 {
  Bd lo, hi;
};
struct M2 {
  Bb lo, hi;
  friend M2 operator&(M2 a, M2 b) { return {a.lo & b.lo, a.hi & b.hi}; }
  friend M2 operator~(M2 a) { return {~a.lo, ~a.hi}; }
};

struct OpsXbAvx2 {
  static constexpr std::size_t kLanes = 8;
  using D = D2;
  using Mask = M2;

  template <class F>
  static D map(D a, D b, F f) { return {f(a.lo, b.lo), f(a.hi, b.hi)}; }
  template <class F>
  static M2 test(D a, F f) { return {f(a.lo), f(a.hi)}; }
  static __m256i bits(Bd x) { return _mm256_castpd_si256(x); }

  static D set1(double x) { return {Bd(x), Bd(x)}; }
  static D load(const double* p) { return {Bd::load_unaligned(p), Bd::load_unaligned(p + 4)}; }
  static D fmadd(D a, D b, D c) {  // vfmadd231pd (xsimd::avx2 alone would multiply and add)
    return {_mm256_fmadd_pd(a.lo, b.lo, c.lo), _mm256_fmadd_pd(a.hi, b.hi, c.hi)};
  }
  static D mul(D a, D b) { return map(a, b, [](Bd x, Bd y) { return x * y; }); }
  static D add(D a, D b) { return map(a, b, [](Bd x, Bd y) { return x + y; }); }
  static D sub(D a, D b) { return map(a, b, [](Bd x, Bd y) { return x - y; }); }
  static Mask abs_ge(D p, D t) {  // vcmppd _CMP_GE_OQ: false when unordered
    return {xsimd::abs(p.lo) >= t.lo, xsimd::abs(p.hi) >= t.hi};
  }
  static D blend(Mask m, D no, D yes) {
    return {xsimd::select(m.lo, yes.lo, no.lo), xsimd::select(m.hi, yes.hi, no.hi)};
  }
  static Mask nonzero(D x) {  // vcmppd _CMP_NEQ_OQ: false when unordered
    return test(x, [](Bd v) { return v != Bd(0.0); });
  }
  static Mask even(D x) {
    return test(x, [](Bd v) {
      const __m256i low = _mm256_and_si256(bits(v), _mm256_set1_epi64x(1));
      return Bb(_mm256_castsi256_pd(_mm256_cmpeq_epi64(low, _mm256_setzero_si256())));
    });
  }
  static Mask signs_differ(D x, D y) {  // the xor's sign bit: a signed compare with 0
    return {Bb(_mm256_castsi256_pd(_mm256_cmpgt_epi64(_mm256_setzero_si256(), bits(x.lo ^ y.lo)))),
             Bb(_mm256_castsi256_pd(_mm256_cmpgt_epi64(_mm256_setzero_si256(), bits(x.hi ^ y.hi))))};
  }
  static Bd step_half(Bd x, Bb up, Bb down) {  // encoding + 1 where up, - 1 where down
    const __m256i one = _mm256_set1_epi64x(1);
    const __m256i u = _mm256_add_epi64(bits(x), _mm256_and_si256(_mm256_castpd_si256(up), one));
    return _mm256_castsi256_pd(_mm256_sub_epi64(u, _mm256_and_si256(_mm256_castpd_si256(down), one)));
  }
  static D step(D x, Mask up, Mask down) { return {step_half(x.lo, up.lo, down.lo), step_half(x.hi, up.hi, down.hi)}; }
  static void add_rounded(float* acc, D x) {  // vcvtpd2ps, then vaddps
    const __m256 v = _mm256_set_m128(_mm256_cvtpd_ps(x.hi), _mm256_cvtpd_ps(x.lo));
    _mm256_storeu_ps(acc, _mm256_add_ps(_mm256_loadu_ps(acc), v));
  }
};

}  // namespace

namespace fp8q::detail {

XbKernel exact_block_kernel_avx2() {
  return isa_supported(Isa::kAvx2) ? &XbKernelT<OpsXbAvx2>::run : nullptr;
}

}  // namespace fp8q::detail
