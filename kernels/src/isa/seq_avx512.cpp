// The AVX-512 fp32-sequential micro-kernel: 6 x 64 outputs in 24 zmm accumulators, one K step
// per vfmadd231ps: seq_avx2.cpp's arithmetic on 16 lanes (acc = fp32(acc + a * b), one
// rounding, the definition's because the products of decoded FP8 values are exact in fp32),
// on the bf16 pair kernel's tile. Compiled with -mavx512f -mavx512bw. Each lane is one output.
// Subnormal init values need nothing special: vfmadd231ps keeps them (MXCSR 0x1F80).
#include <immintrin.h>

#include "fp8q/numerics/isa.hpp"

#include "seq.hpp"

namespace fp8q::detail {
namespace {

static_assert(kMr == 6 && kWideNr == 64, "the register tile below is written for 6 x 64");

// Twenty-four named accumulators (an array would be stored to the stack each iteration, as in
// seq_avx2.cpp). Per K step: 4 B loads, 6 broadcasts, 24 vfmadd231ps.
void kernel(std::size_t kc, const float* ap, const float* bp, const float* init, std::size_t ldi, float* out,
            std::size_t ldo, bool add) {
  auto load = [&](std::size_t i, std::size_t h) {
    return init != nullptr ? _mm512_loadu_ps(init + i * ldi + 16 * h) : _mm512_setzero_ps();
  };
#define FP8Q_ROW(i) __m512 c##i##0 = load(i, 0), c##i##1 = load(i, 1), c##i##2 = load(i, 2), c##i##3 = load(i, 3)
  FP8Q_ROW(0); FP8Q_ROW(1); FP8Q_ROW(2); FP8Q_ROW(3); FP8Q_ROW(4); FP8Q_ROW(5);
#undef FP8Q_ROW
  for (std::size_t k = 0; k < kc; ++k, ap += kMr, bp += kWideNr) {
    const __m512 b0 = _mm512_loadu_ps(bp), b1 = _mm512_loadu_ps(bp + 16);
    const __m512 b2 = _mm512_loadu_ps(bp + 32), b3 = _mm512_loadu_ps(bp + 48);
#define FP8Q_ROW(i)                                                                  \
  {                                                                                  \
    const __m512 a = _mm512_set1_ps(ap[i]);                                          \
    c##i##0 = _mm512_fmadd_ps(a, b0, c##i##0), c##i##1 = _mm512_fmadd_ps(a, b1, c##i##1); \
    c##i##2 = _mm512_fmadd_ps(a, b2, c##i##2), c##i##3 = _mm512_fmadd_ps(a, b3, c##i##3); \
  }
    FP8Q_ROW(0) FP8Q_ROW(1) FP8Q_ROW(2) FP8Q_ROW(3) FP8Q_ROW(4) FP8Q_ROW(5)
#undef FP8Q_ROW
  }
  const __m512 c[kMr][4] = {{c00, c01, c02, c03}, {c10, c11, c12, c13}, {c20, c21, c22, c23},
                            {c30, c31, c32, c33}, {c40, c41, c42, c43}, {c50, c51, c52, c53}};
  for (std::size_t i = 0; i < kMr; ++i)
    for (std::size_t h = 0; h < 4; ++h) {
      float* o = out + i * ldo + 16 * h;
      _mm512_storeu_ps(o, add ? _mm512_add_ps(_mm512_loadu_ps(o), c[i][h]) : c[i][h]);
    }
}

}  // namespace

SeqKernel seq_kernel_avx512() { return isa_supported(Isa::kAvx512) ? &kernel : nullptr; }

}  // namespace fp8q::detail
