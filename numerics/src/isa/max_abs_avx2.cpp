// AVX2 kernels of fp8q/numerics/max_abs.hpp (isa/max_abs_kernels.hpp), compiled with -mavx2.
// Bit patterns are compared, never values: nothing here depends on the FP environment.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "isa/max_abs_kernels.hpp"

namespace fp8q::detail {
namespace {

// Horizontal maxima, in registers: the halves, then 64-, 32- (and 16-) bit swaps. Signed
// 16-bit max is right for 16-bit lanes because masked patterns are non-negative.
inline std::uint16_t hmax16(__m256i v) {
  __m128i x = _mm_max_epi16(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  x = _mm_max_epi16(x, _mm_shuffle_epi32(x, 0x4E));
  x = _mm_max_epi16(x, _mm_shuffle_epi32(x, 0xB1));
  x = _mm_max_epi16(x, _mm_shufflelo_epi16(x, 0xB1));
  return static_cast<std::uint16_t>(_mm_cvtsi128_si32(x));
}
inline std::uint32_t hmax32(__m256i v) {
  __m128i x = _mm_max_epu32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  x = _mm_max_epu32(x, _mm_shuffle_epi32(x, 0x4E));
  x = _mm_max_epu32(x, _mm_shuffle_epi32(x, 0xB1));
  return static_cast<std::uint32_t>(_mm_cvtsi128_si32(x));
}

// Two accumulators over 64-byte steps, one more 32-byte step, then the last elements one by
// one (short arrays, e.g. the rows of a block, pay little besides the reduction).
std::uint16_t bits16_avx2(const void* in, std::size_t n) {
  const auto* p = static_cast<const unsigned char*>(in);
  const __m256i mask = _mm256_set1_epi16(0x7FFF);
  const auto load = [&](std::size_t i) {
    return _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 2 * i)), mask);
  };
  __m256i m0 = _mm256_setzero_si256(), m1 = m0;
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    m0 = _mm256_max_epi16(m0, load(i));
    m1 = _mm256_max_epi16(m1, load(i + 16));
  }
  if (i + 16 <= n) m0 = _mm256_max_epi16(m0, load(i)), i += 16;
  return max_abs_tail<std::uint16_t>(p, i, n, hmax16(_mm256_max_epi16(m0, m1)));
}

std::uint32_t bits32_avx2(const void* in, std::size_t n) {
  const auto* p = static_cast<const unsigned char*>(in);
  const __m256i mask = _mm256_set1_epi32(0x7FFFFFFF);
  const auto load = [&](std::size_t i) {
    return _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 4 * i)), mask);
  };
  __m256i m0 = _mm256_setzero_si256(), m1 = m0;
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    m0 = _mm256_max_epu32(m0, load(i));
    m1 = _mm256_max_epu32(m1, load(i + 8));
  }
  if (i + 8 <= n) m0 = _mm256_max_epu32(m0, load(i)), i += 8;
  return max_abs_tail<std::uint32_t>(p, i, n, hmax32(_mm256_max_epu32(m0, m1)));
}

constexpr MaxAbsKernels kAvx2{&bits16_avx2, &bits32_avx2};

}  // namespace

const MaxAbsKernels* max_abs_kernels_avx2() { return &kAvx2; }

}  // namespace fp8q::detail
