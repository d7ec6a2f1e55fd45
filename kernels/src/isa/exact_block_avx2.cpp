// The AVX2 + FMA exact_block micro-kernel: 6 x 8 outputs in 12 ymm accumulators of 4 doubles.
//
// Direct blocks use vfmadd231pd. A fused multiply-add rounds once, and here the exact value
// a * b + acc is representable (exact_block.hpp), so FMA and a separate multiply and add give
// the same, exact, result; FMA halves the uops (Zen 3: two FMA pipes, 4 cycles latency, so 12
// independent accumulators keep both busy: 2 x 4 x 4 = 32 doubles in flight, 48 here).
// vcvtpd2ps then rounds the exact block sum once to fp32 under MXCSR 0x1F80 (nearest-even,
// no FTZ/DAZ), and vaddps adds it to the accumulator.
#include <immintrin.h>

#include "fp8q/numerics/isa.hpp"

#include "exact_block.hpp"

namespace fp8q::detail {
namespace {

static_assert(kXbMr == 6 && kXbNr == 8, "the register tile below is written for 6 x 8");

// acc[0..8) = fp32(acc + fp32(lo | hi)): one row's two fp64 vectors rounded and added.
inline void add_row(float* acc, __m256d lo, __m256d hi) {
  const __m256 v = _mm256_set_m128(_mm256_cvtpd_ps(hi), _mm256_cvtpd_ps(lo));
  _mm256_storeu_ps(acc, _mm256_add_ps(_mm256_loadu_ps(acc), v));
}

// The exact block sum of one output per lane, as a direct fp64 sum. Inlined into the block
// loop (the split path is not, so its constants do not take registers here: with one more
// live ymm, GCC spilled an accumulator and the loop ran at half speed).
inline __attribute__((always_inline)) void direct_block(std::size_t n, const double* ap, const double* bp, float* acc,
                                                        std::size_t ld) {
  // sums start at -0: -0 + x = x, and -0 stays only when every product is -0 (the exact sum's sign)
  __m256d c00 = _mm256_set1_pd(-0.0), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
  __m256d c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
  for (std::size_t k = 0; k < n; ++k, ap += kXbMr, bp += kXbNr) {
    const __m256d b0 = _mm256_loadu_pd(bp), b1 = _mm256_loadu_pd(bp + 4);
    __m256d a = _mm256_broadcast_sd(ap + 0);
    c00 = _mm256_fmadd_pd(a, b0, c00), c01 = _mm256_fmadd_pd(a, b1, c01);
    a = _mm256_broadcast_sd(ap + 1);
    c10 = _mm256_fmadd_pd(a, b0, c10), c11 = _mm256_fmadd_pd(a, b1, c11);
    a = _mm256_broadcast_sd(ap + 2);
    c20 = _mm256_fmadd_pd(a, b0, c20), c21 = _mm256_fmadd_pd(a, b1, c21);
    a = _mm256_broadcast_sd(ap + 3);
    c30 = _mm256_fmadd_pd(a, b0, c30), c31 = _mm256_fmadd_pd(a, b1, c31);
    a = _mm256_broadcast_sd(ap + 4);
    c40 = _mm256_fmadd_pd(a, b0, c40), c41 = _mm256_fmadd_pd(a, b1, c41);
    a = _mm256_broadcast_sd(ap + 5);
    c50 = _mm256_fmadd_pd(a, b0, c50), c51 = _mm256_fmadd_pd(a, b1, c51);
  }
  add_row(acc + 0 * ld, c00, c01);
  add_row(acc + 1 * ld, c10, c11);
  add_row(acc + 2 * ld, c20, c21);
  add_row(acc + 3 * ld, c30, c31);
  add_row(acc + 4 * ld, c40, c41);
  add_row(acc + 5 * ld, c50, c51);
}

// hi + lo rounded once (see exact_block.hpp): TwoSum, then round-to-odd at 53 bits.
inline __m256d round_to_odd_sum(__m256d hi, __m256d lo) {
  const __m256d s = _mm256_add_pd(hi, lo);
  const __m256d bb = _mm256_sub_pd(s, hi);
  const __m256d err = _mm256_add_pd(_mm256_sub_pd(hi, _mm256_sub_pd(s, bb)), _mm256_sub_pd(lo, bb));
  const __m256i one = _mm256_set1_epi64x(1);
  const __m256i su = _mm256_castpd_si256(s);
  // err != 0 and not NaN (ordered), and s even
  const __m256i fix = _mm256_and_si256(_mm256_castpd_si256(_mm256_cmp_pd(err, _mm256_setzero_pd(), _CMP_NEQ_OQ)),
                                       _mm256_cmpeq_epi64(_mm256_and_si256(su, one), _mm256_setzero_si256()));
  // one ulp away from zero when err has the sign of s, toward zero otherwise
  const __m256i opposite = _mm256_srli_epi64(_mm256_xor_si256(su, _mm256_castpd_si256(err)), 63);
  const __m256i step = _mm256_sub_epi64(one, _mm256_add_epi64(opposite, opposite));
  return _mm256_castsi256_pd(_mm256_add_epi64(su, _mm256_and_si256(step, fix)));
}

// Two exact fp64 sums per output, split by |p| >= thr; one row at a time (4 accumulators).
__attribute__((noinline)) void split_block(std::size_t n, const double* ap, const double* bp, const double* thr, float* acc, std::size_t ld) {
  const __m256d abs_mask = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7FFFFFFFFFFFFFFF));
  const __m256d neg_zero = _mm256_set1_pd(-0.0);  // the start and the filler: keeps an all -0 sum -0
  for (std::size_t i = 0; i < kXbMr; ++i) {
    const __m256d t0 = _mm256_loadu_pd(thr + i * kXbNr), t1 = _mm256_loadu_pd(thr + i * kXbNr + 4);
    __m256d hi0 = neg_zero, hi1 = hi0, lo0 = hi0, lo1 = hi0;
    for (std::size_t k = 0; k < n; ++k) {
      const __m256d a = _mm256_broadcast_sd(ap + k * kXbMr + i);
      const __m256d p0 = _mm256_mul_pd(a, _mm256_loadu_pd(bp + k * kXbNr));
      const __m256d p1 = _mm256_mul_pd(a, _mm256_loadu_pd(bp + k * kXbNr + 4));
      // ordered compare: a NaN product (or a NaN threshold) goes to lo
      const __m256d m0 = _mm256_cmp_pd(_mm256_and_pd(p0, abs_mask), t0, _CMP_GE_OQ);
      const __m256d m1 = _mm256_cmp_pd(_mm256_and_pd(p1, abs_mask), t1, _CMP_GE_OQ);
      hi0 = _mm256_add_pd(hi0, _mm256_blendv_pd(neg_zero, p0, m0)), lo0 = _mm256_add_pd(lo0, _mm256_blendv_pd(p0, neg_zero, m0));
      hi1 = _mm256_add_pd(hi1, _mm256_blendv_pd(neg_zero, p1, m1)), lo1 = _mm256_add_pd(lo1, _mm256_blendv_pd(p1, neg_zero, m1));
    }
    add_row(acc + i * ld, round_to_odd_sum(hi0, lo0), round_to_odd_sum(hi1, lo1));
  }
}

void kernel(const XbTile& t) {
  const double* ap = t.ap;
  const double* bp = t.bp;
  for (std::size_t blk = 0; blk < t.nblocks; ++blk) {
    const std::size_t n = t.len[blk];
    if (t.mode[blk] == kXbDirect) direct_block(n, ap, bp, t.acc, t.ld);
    else split_block(n, ap, bp, t.thr + blk * kXbMr * kXbNr, t.acc, t.ld);
    ap += n * kXbMr;
    bp += n * kXbNr;
  }
}

}  // namespace

XbKernel exact_block_kernel_avx2() {
  return isa_supported(Isa::kAvx2) ? &kernel : nullptr;
}

}  // namespace fp8q::detail
