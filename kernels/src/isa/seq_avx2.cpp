// The AVX2 fp32-sequential micro-kernel: 6 x 16 outputs in 12 ymm accumulators. Compiled
// with -mavx2 -mfma: each step is vfmadd231ps, acc = fp32(acc + a * b) with one rounding.
// That is the definition's fp32(acc + fp32(a * b)) because the operands are decoded FP8
// values, whose product is exact in fp32 (at most 5 + 5 significand bits, and magnitudes from
// 2^-32 to 2^32, inside fp32's normal range), so the product's own rounding never does
// anything. One FMA instead of a multiply and an add halves the instructions per product.
#include <immintrin.h>

#include "fp8q/numerics/isa.hpp"

#include "seq.hpp"

namespace fp8q::detail {
namespace {

static_assert(kMr == 6 && kNr == 16, "the register tile below is written for 6 x 16");

// Twelve named accumulators rather than an array: GCC keeps them in registers (with an
// array it stored them to the stack every iteration). 12 + 2 (B) + 1 (A) + 1 (product) = 16.
void kernel(std::size_t kc, const float* ap, const float* bp, const float* init, std::size_t ldi, float* out,
            std::size_t ldo, bool add) {
  auto load = [&](std::size_t i, std::size_t h) {
    return init != nullptr ? _mm256_loadu_ps(init + i * ldi + 8 * h) : _mm256_setzero_ps();
  };
  __m256 c00 = load(0, 0), c01 = load(0, 1), c10 = load(1, 0), c11 = load(1, 1), c20 = load(2, 0), c21 = load(2, 1);
  __m256 c30 = load(3, 0), c31 = load(3, 1), c40 = load(4, 0), c41 = load(4, 1), c50 = load(5, 0), c51 = load(5, 1);
  for (std::size_t k = 0; k < kc; ++k, ap += kMr, bp += kNr) {
    const __m256 b0 = _mm256_loadu_ps(bp), b1 = _mm256_loadu_ps(bp + 8);
    __m256 a = _mm256_broadcast_ss(ap + 0);
    c00 = _mm256_fmadd_ps(a, b0, c00), c01 = _mm256_fmadd_ps(a, b1, c01);
    a = _mm256_broadcast_ss(ap + 1);
    c10 = _mm256_fmadd_ps(a, b0, c10), c11 = _mm256_fmadd_ps(a, b1, c11);
    a = _mm256_broadcast_ss(ap + 2);
    c20 = _mm256_fmadd_ps(a, b0, c20), c21 = _mm256_fmadd_ps(a, b1, c21);
    a = _mm256_broadcast_ss(ap + 3);
    c30 = _mm256_fmadd_ps(a, b0, c30), c31 = _mm256_fmadd_ps(a, b1, c31);
    a = _mm256_broadcast_ss(ap + 4);
    c40 = _mm256_fmadd_ps(a, b0, c40), c41 = _mm256_fmadd_ps(a, b1, c41);
    a = _mm256_broadcast_ss(ap + 5);
    c50 = _mm256_fmadd_ps(a, b0, c50), c51 = _mm256_fmadd_ps(a, b1, c51);
  }
  const __m256 c[kMr][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}, {c50, c51}};
  for (std::size_t i = 0; i < kMr; ++i)
    for (std::size_t h = 0; h < 2; ++h) {
      float* o = out + i * ldo + 8 * h;
      _mm256_storeu_ps(o, add ? _mm256_add_ps(_mm256_loadu_ps(o), c[i][h]) : c[i][h]);
    }
}

}  // namespace

SeqKernel seq_kernel_avx2() {
  return isa_supported(Isa::kAvx2) ? &kernel : nullptr;
}

}  // namespace fp8q::detail
