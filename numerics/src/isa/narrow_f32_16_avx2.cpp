// AVX2 (+ F16C) fp32 -> bf16 and fp32 -> fp16 under nearest-even (narrow_f32_16.hpp), 16
// elements per step, the tail by the scalar loops.
//  - bf16: the scalar loop's integer rounding on 8 lanes, then the halves packed.
//  - fp16: vcvtps2ph with its rounding in the immediate (nearest-even whatever MXCSR says; fp32
//    subnormals are read as such under the default environment the caller pins) gives every
//    finite result and the overflow to Inf; a NaN keeps payload bits there, which are cleared to
//    the reference's sign | 0x7E00, and under saturation an infinite result steps down to +-0x7BFF.
#include <immintrin.h>

#include <cstring>

#include "narrow_f32_16.hpp"

namespace fp8q::detail {
namespace {

// The 32-bit lanes of two vectors as 16-bit lanes in element order (packs works within 128-bit
// lanes); the values fit (masks, or results below 0x10000 taken unsigned).
__m256i pack_signed(__m256i a, __m256i b) { return _mm256_permute4x64_epi64(_mm256_packs_epi32(a, b), 0xD8); }
__m256i pack_unsigned(__m256i a, __m256i b) { return _mm256_permute4x64_epi64(_mm256_packus_epi32(a, b), 0xD8); }

void bf16(const std::byte* in, std::byte* out, std::size_t n, bool saturate) {
  const __m256i abs_mask = _mm256_set1_epi32(0x7FFFFFFF), inf32 = _mm256_set1_epi32(0x7F800000);
  const __m256i round = _mm256_set1_epi32(0x7FFF), one = _mm256_set1_epi32(1), qnan = _mm256_set1_epi32(0x7FC0);
  const __m256i inf16 = _mm256_set1_epi32(0x7F80), inf = _mm256_set1_epi32(saturate ? 0x7F7F : 0x7F80);
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m256i r[2];
    for (int h = 0; h < 2; ++h) {
      __m256i u;
      std::memcpy(&u, in + 4 * (i + 8 * h), 32);
      const __m256i mag = _mm256_and_si256(u, abs_mask);
      __m256i m = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(mag, round), _mm256_and_si256(_mm256_srli_epi32(mag, 16), one)), 16);
      m = _mm256_blendv_epi8(m, inf, _mm256_cmpeq_epi32(m, inf16));
      m = _mm256_blendv_epi8(m, qnan, _mm256_cmpgt_epi32(mag, inf32));
      r[h] = _mm256_or_si256(m, _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x8000)));
    }
    const __m256i packed = pack_unsigned(r[0], r[1]);
    std::memcpy(out + 2 * i, &packed, 32);
  }
  f32_to_bf16_rne(in + 4 * i, out + 2 * i, n - i, saturate);
}

void f16(const std::byte* in, std::byte* out, std::size_t n, bool saturate) {
  const __m256i abs_mask = _mm256_set1_epi32(0x7FFFFFFF), inf32 = _mm256_set1_epi32(0x7F800000);
  const __m256i payload = _mm256_set1_epi16(0x01FF), abs16 = _mm256_set1_epi16(0x7FFF), inf16 = _mm256_set1_epi16(0x7C00);
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m256 x[2];
    __m256i nan[2];
    for (int h = 0; h < 2; ++h) {
      std::memcpy(&x[h], in + 4 * (i + 8 * h), 32);
      nan[h] = _mm256_cmpgt_epi32(_mm256_and_si256(_mm256_castps_si256(x[h]), abs_mask), inf32);
    }
    __m256i r = _mm256_set_m128i(_mm256_cvtps_ph(x[1], _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC),
                                 _mm256_cvtps_ph(x[0], _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    const __m256i nan16 = pack_signed(nan[0], nan[1]);
    r = _mm256_andnot_si256(_mm256_and_si256(nan16, payload), r);
    if (saturate) r = _mm256_add_epi16(r, _mm256_cmpeq_epi16(_mm256_and_si256(r, abs16), inf16));  // + (-1)
    std::memcpy(out + 2 * i, &r, 32);
  }
  f32_to_f16_rne(in + 4 * i, out + 2 * i, n - i, saturate);
}

}  // namespace

F32ToHalfFn f32_to_bf16_rne_avx2() { return &bf16; }
F32ToHalfFn f32_to_f16_rne_avx2() { return &f16; }

}  // namespace fp8q::detail
