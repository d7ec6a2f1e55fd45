// The AVX2 fused micro-kernel: 5 x 16 outputs, the arithmetic of fused.hpp.
//
// Per step: (1) E from int8 model exponents, two K slots per ymm (vpaddsb + vpmaxsb: 4 uops per
// 32 (output, k) pairs); (2) per output the scale 2^(f - E) and the truncated C; (3) per product
// vmulps (a * b), vmulps (* 2^(f - E)), vcvttps2dq (truncation toward zero) and vpaddd into 10
// int32 accumulators; (4) each sum rounded to f + 1 bits on its fp64 bits and scaled back.
// Compiled with -mavx2 only; every float operation here is exact (fused.hpp), so neither FMA
// nor the rounding mode could change a bit (MXCSR is 0x1F80 anyway).
#include <immintrin.h>

#include "fp8q/numerics/isa.hpp"

#include "fused.hpp"

namespace fp8q::detail {
namespace {

static_assert(kFuMr == 5 && kFuNr == 16, "the register tile below is written for 5 x 16");

// Pass 1: E_prod[i][0..16) = max over the step's K slots of e_a[k][i] + e_b[k][j] (saturated).
inline void step_exponents(std::size_t n, const std::uint16_t* am, const std::int8_t* bm, __m128i e[kFuMr]) {
  // vpshufb on a broadcast pair (e[k], e[k+1]): low lane all byte 0, high lane all byte 1
  const __m256i pick = _mm256_setr_epi64x(0, 0, 0x0101010101010101, 0x0101010101010101);
  __m256i m0 = _mm256_set1_epi8(-128), m1 = m0, m2 = m0, m3 = m0, m4 = m0;
  for (std::size_t k = 0; k < n; k += 2, am += kFuMr, bm += 2 * kFuNr) {
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bm));  // slots k, k + 1
    auto row = [&](std::size_t i) {
      const __m256i a = _mm256_shuffle_epi8(_mm256_set1_epi16(static_cast<short>(am[i])), pick);
      return _mm256_adds_epi8(a, b);
    };
    m0 = _mm256_max_epi8(m0, row(0)), m1 = _mm256_max_epi8(m1, row(1)), m2 = _mm256_max_epi8(m2, row(2));
    m3 = _mm256_max_epi8(m3, row(3)), m4 = _mm256_max_epi8(m4, row(4));
  }
  const __m256i m[kFuMr] = {m0, m1, m2, m3, m4};
  for (std::size_t i = 0; i < kFuMr; ++i)
    e[i] = _mm_max_epi8(_mm256_castsi256_si128(m[i]), _mm256_extracti128_si256(m[i], 1));
}

// 2^x for int32 lanes x in [-126, 127], from the bits.
inline __m256 pow2(__m256i x) { return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(x, _mm256_set1_epi32(127)), 23)); }

// Round the integers of 4 fp64 lanes to R + 1 significant bits on their bits (magnitudes;
// the sign bit is untouched): drop = 52 - R low bits, nearest-even or toward zero.
inline __m256d round_bits(__m256d x, __m256i low_mask, __m256i half_minus_one, __m128i drop, bool nearest_even) {
  __m256i u = _mm256_castpd_si256(x);
  if (nearest_even) {
    const __m256i odd = _mm256_and_si256(_mm256_srl_epi64(u, drop), _mm256_set1_epi64x(1));
    u = _mm256_add_epi64(u, _mm256_add_epi64(half_minus_one, odd));
  }
  return _mm256_castsi256_pd(_mm256_andnot_si256(low_mask, u));
}

void kernel(const FuTile& t) {
  const float* ap = t.ap;
  const std::uint16_t* am = t.am;
  const float* bp = t.bp;
  const std::int8_t* bm = t.bm;
  const int f = t.align_bits, r = t.result_bits;
  const __m128i drop = _mm_cvtsi32_si128(52 - r);
  const __m256i low_mask = _mm256_set1_epi64x((std::int64_t{1} << (52 - r)) - 1);
  const __m256i half_minus_one = _mm256_set1_epi64x((std::int64_t{1} << (51 - r)) - 1);
  const __m256i abs_mask = _mm256_set1_epi32(0x7FFFFFFF);
  alignas(32) float scale[kFuMr][kFuNr];  // 2^(f - E)
  alignas(32) float unscale[kFuMr][kFuNr];  // 2^(E - f)
  for (std::size_t step = 0; step < t.nsteps; ++step) {
    const std::size_t n = t.len[step];
    __m128i e8[kFuMr];
    step_exponents(n, am, bm, e8);
    __m256i acc[kFuMr][2];
    for (std::size_t i = 0; i < kFuMr; ++i)
      for (std::size_t h = 0; h < 2; ++h) {
        float* cp = t.c + i * t.ld + 8 * h;
        const __m256 c = _mm256_loadu_ps(cp);
        const __m256i cu = _mm256_castps_si256(c);
        // e_C = max(biased exponent - 127, -126), or kFuZeroExp when C == 0
        const __m256i biased = _mm256_and_si256(_mm256_srli_epi32(cu, 23), _mm256_set1_epi32(0xFF));
        __m256i ec = _mm256_max_epi32(_mm256_sub_epi32(biased, _mm256_set1_epi32(127)), _mm256_set1_epi32(-126));
        const __m256i zero = _mm256_cmpeq_epi32(_mm256_and_si256(cu, abs_mask), _mm256_setzero_si256());
        ec = _mm256_blendv_epi8(ec, _mm256_set1_epi32(kFuZeroExp), zero);
        const __m128i e8h = h == 0 ? e8[i] : _mm_srli_si128(e8[i], 8);
        __m256i e = _mm256_max_epi32(_mm256_cvtepi8_epi32(e8h), ec);
        e = _mm256_max_epi32(e, _mm256_set1_epi32(kFuMinE));
        const __m256i fv = _mm256_set1_epi32(f);
        const __m256 s = pow2(_mm256_sub_epi32(fv, e));
        _mm256_store_ps(&scale[i][8 * h], s);
        _mm256_store_ps(&unscale[i][8 * h], pow2(_mm256_sub_epi32(e, fv)));
        acc[i][h] = _mm256_cvttps_epi32(_mm256_mul_ps(c, s));
      }
    __m256i c00 = acc[0][0], c01 = acc[0][1], c10 = acc[1][0], c11 = acc[1][1], c20 = acc[2][0], c21 = acc[2][1];
    __m256i c30 = acc[3][0], c31 = acc[3][1], c40 = acc[4][0], c41 = acc[4][1];
    for (std::size_t k = 0; k < n; ++k, ap += kFuMr, bp += kFuNr) {
      const __m256 b0 = _mm256_loadu_ps(bp), b1 = _mm256_loadu_ps(bp + 8);
      auto term = [&](__m256 a, __m256 b, const float* s) {
        return _mm256_cvttps_epi32(_mm256_mul_ps(_mm256_mul_ps(a, b), _mm256_load_ps(s)));
      };
      __m256 a = _mm256_broadcast_ss(ap + 0);
      c00 = _mm256_add_epi32(c00, term(a, b0, &scale[0][0])), c01 = _mm256_add_epi32(c01, term(a, b1, &scale[0][8]));
      a = _mm256_broadcast_ss(ap + 1);
      c10 = _mm256_add_epi32(c10, term(a, b0, &scale[1][0])), c11 = _mm256_add_epi32(c11, term(a, b1, &scale[1][8]));
      a = _mm256_broadcast_ss(ap + 2);
      c20 = _mm256_add_epi32(c20, term(a, b0, &scale[2][0])), c21 = _mm256_add_epi32(c21, term(a, b1, &scale[2][8]));
      a = _mm256_broadcast_ss(ap + 3);
      c30 = _mm256_add_epi32(c30, term(a, b0, &scale[3][0])), c31 = _mm256_add_epi32(c31, term(a, b1, &scale[3][8]));
      a = _mm256_broadcast_ss(ap + 4);
      c40 = _mm256_add_epi32(c40, term(a, b0, &scale[4][0])), c41 = _mm256_add_epi32(c41, term(a, b1, &scale[4][8]));
    }
    const __m256i sums[kFuMr][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}};
    for (std::size_t i = 0; i < kFuMr; ++i)
      for (std::size_t h = 0; h < 2; ++h) {
        const __m256i sv = sums[i][h];
        const __m256d lo = round_bits(_mm256_cvtepi32_pd(_mm256_castsi256_si128(sv)), low_mask, half_minus_one, drop,
                                      t.nearest_even);
        const __m256d hi = round_bits(_mm256_cvtepi32_pd(_mm256_extracti128_si256(sv, 1)), low_mask, half_minus_one,
                                      drop, t.nearest_even);
        const __m256 r = _mm256_set_m128(_mm256_cvtpd_ps(hi), _mm256_cvtpd_ps(lo));  // <= 24 bits: exact
        _mm256_storeu_ps(t.c + i * t.ld + 8 * h, _mm256_mul_ps(r, _mm256_load_ps(&unscale[i][8 * h])));
      }
    am += n / 2 * kFuMr;
    bm += n * kFuNr;
  }
}

}  // namespace

FuKernel fused_kernel_avx2() {
  return isa_supported(Isa::kAvx2) ? &kernel : nullptr;
}

}  // namespace fp8q::detail
