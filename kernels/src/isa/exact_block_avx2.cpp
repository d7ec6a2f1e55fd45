// The AVX2 + FMA exact_block micro-kernel: exact_block_kernel.hpp over xsimd, one row of 8
// outputs in two ymm vectors of 4 doubles (12 accumulators).
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

// 8 fp64 lanes as two batches; a mask as two batch masks (all bits of a lane set: true).
struct D2 {
  Bd p[2];
};
struct M2 {
  Bb p[2];
  friend M2 operator&(M2 a, M2 b) { return {{a.p[0] & b.p[0], a.p[1] & b.p[1]}}; }
  friend M2 operator~(M2 a) { return {{~a.p[0], ~a.p[1]}}; }
};

struct OpsXbAvx2 {
  static constexpr std::size_t kLanes = 8;
  using D = D2;
  using Mask = M2;

  template <class F>
  static D map(D a, D b, F f) { return {{f(a.p[0], b.p[0]), f(a.p[1], b.p[1])}}; }
  template <class F>
  static M2 test(D a, F f) { return {{f(a.p[0]), f(a.p[1])}}; }
  static __m256i bits(Bd x) { return _mm256_castpd_si256(x); }

  static D set1(double x) { return {{Bd(x), Bd(x)}}; }
  static D load(const double* p) { return {{Bd::load_unaligned(p), Bd::load_unaligned(p + 4)}}; }
  static D fmadd(D a, D b, D c) {  // vfmadd231pd (xsimd::avx2 alone would multiply and add)
    return {{_mm256_fmadd_pd(a.p[0], b.p[0], c.p[0]), _mm256_fmadd_pd(a.p[1], b.p[1], c.p[1])}};
  }
  static D mul(D a, D b) { return map(a, b, [](Bd x, Bd y) { return x * y; }); }
  static D add(D a, D b) { return map(a, b, [](Bd x, Bd y) { return x + y; }); }
  static D sub(D a, D b) { return map(a, b, [](Bd x, Bd y) { return x - y; }); }
  static Mask abs_ge(D p, D t) {  // vcmppd _CMP_GE_OQ: false when unordered
    return {{xsimd::abs(p.p[0]) >= t.p[0], xsimd::abs(p.p[1]) >= t.p[1]}};
  }
  static D blend(Mask m, D no, D yes) {
    return {{xsimd::select(m.p[0], yes.p[0], no.p[0]), xsimd::select(m.p[1], yes.p[1], no.p[1])}};
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
    return {{Bb(_mm256_castsi256_pd(_mm256_cmpgt_epi64(_mm256_setzero_si256(), bits(x.p[0] ^ y.p[0])))),
             Bb(_mm256_castsi256_pd(_mm256_cmpgt_epi64(_mm256_setzero_si256(), bits(x.p[1] ^ y.p[1]))))}};
  }
  static D step(D x, Mask up, Mask down) {  // encoding + 1 where up, - 1 where down
    D r;
    for (int h = 0; h < 2; ++h) {
      const __m256i one = _mm256_set1_epi64x(1);
      const __m256i u = _mm256_add_epi64(bits(x.p[h]), _mm256_and_si256(_mm256_castpd_si256(up.p[h]), one));
      r.p[h] = _mm256_castsi256_pd(_mm256_sub_epi64(u, _mm256_and_si256(_mm256_castpd_si256(down.p[h]), one)));
    }
    return r;
  }
  static void add_rounded(float* acc, D x) {  // vcvtpd2ps, then vaddps
    const __m256 v = _mm256_set_m128(_mm256_cvtpd_ps(x.p[1]), _mm256_cvtpd_ps(x.p[0]));
    _mm256_storeu_ps(acc, _mm256_add_ps(_mm256_loadu_ps(acc), v));
  }
};

}  // namespace

namespace fp8q::detail {

XbKernel exact_block_kernel_avx2() {
  return isa_supported(Isa::kAvx2) ? &XbKernelT<OpsXbAvx2>::run : nullptr;
}

}  // namespace fp8q::detail
