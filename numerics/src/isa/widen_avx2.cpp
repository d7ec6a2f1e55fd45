// AVX2 + F16C decoding kernels (isa/widen.hpp): 32 codes per step, the formula on 8-lane
// vectors, special codes patched from the table afterwards (rare in data: one compare per
// vector finds them).
#include <immintrin.h>

#include "isa/widen.hpp"

namespace fp8q::detail {
namespace {

template <WideOut kOut>
void run(const std::uint8_t* in, std::byte* out, std::size_t n, const WidenParams& p) {
  constexpr std::size_t kBytes = kOut == WideOut::kF32 ? 4 : 2;
  const __m256i mag_mask = _mm256_set1_epi32((1 << p.sign_bit) - 1), max_mag = _mm256_set1_epi32(static_cast<int>(p.max_mag));
  const __m256i special = _mm256_set1_epi32(p.special_code);
  const __m128i shift = _mm_cvtsi32_si128(p.shift), sign_shift = _mm_cvtsi32_si128(31 - p.sign_bit);
  const __m256 multiplier = _mm256_set1_ps(p.multiplier);
  const __m256i sign_bit = _mm256_set1_epi32(static_cast<int>(0x80000000u));
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    unsigned patch = 0;
    __m256i f[4];
    for (int j = 0; j < 4; ++j) {
      const __m256i c = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(in + i + 8 * j)));
      const __m256i mag = _mm256_and_si256(c, mag_mask);
      const __m256 x = _mm256_mul_ps(_mm256_castsi256_ps(_mm256_sll_epi32(mag, shift)), multiplier);
      f[j] = _mm256_or_si256(_mm256_castps_si256(x), _mm256_and_si256(_mm256_sll_epi32(c, sign_shift), sign_bit));
      const __m256i odd = _mm256_or_si256(_mm256_cmpgt_epi32(mag, max_mag), _mm256_cmpeq_epi32(c, special));
      patch |= static_cast<unsigned>(_mm256_movemask_ps(_mm256_castsi256_ps(odd))) << (8 * j);
    }
    std::byte* o = out + i * kBytes;
    if constexpr (kOut == WideOut::kF32) {
      for (int j = 0; j < 4; ++j) _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + 32 * j), f[j]);
    } else if constexpr (kOut == WideOut::kBF16) {
      for (int j = 0; j < 4; j += 2) {  // high halves, packed (exact: the low halves are 0)
        const __m256i h = _mm256_packus_epi32(_mm256_srli_epi32(f[j], 16), _mm256_srli_epi32(f[j + 1], 16));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + 16 * j), _mm256_permute4x64_epi64(h, 0xD8));
      }
    } else {
      for (int j = 0; j < 4; ++j)  // exact: every non-special result is an fp16 value
        _mm_storeu_si128(reinterpret_cast<__m128i*>(o + 16 * j),
                         _mm256_cvtps_ph(_mm256_castsi256_ps(f[j]), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    }
    for (; patch != 0; patch &= patch - 1) {
      const int l = __builtin_ctz(patch);
      widen_from_table(in + i + l, o + l * kBytes, 1, p, kBytes);
    }
  }
  widen_from_table(in + i, out + i * kBytes, n - i, p, kBytes);
}

}  // namespace

WidenFn widen_kernel_avx2(WideOut out) {
  switch (out) {
    case WideOut::kF32: return &run<WideOut::kF32>;
    case WideOut::kBF16: return &run<WideOut::kBF16>;
    case WideOut::kF16: return &run<WideOut::kF16>;
  }
  return nullptr;
}

}  // namespace fp8q::detail
