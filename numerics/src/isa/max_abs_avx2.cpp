// AVX2 kernels of fp8q/numerics/max_abs.hpp (isa/max_abs_kernels.hpp), compiled with -mavx2.
// Bit patterns are compared, never values: nothing here depends on the FP environment.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "isa/max_abs_kernels.hpp"

namespace fp8q::detail {
namespace {

// The lane operations of one pattern width. Masked patterns are non-negative, so the signed
// 16-bit max orders them as the unsigned one would. hmax: the halves, then 64-, 32- (and 16-)
// bit swaps, in registers.
struct Lanes16 {
  using T = std::uint16_t;
  static __m256i mask() { return _mm256_set1_epi16(0x7FFF); }
  static __m256i max(__m256i a, __m256i b) { return _mm256_max_epi16(a, b); }
  static T hmax(__m256i v) {
    __m128i x = _mm_max_epi16(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    x = _mm_max_epi16(x, _mm_shuffle_epi32(x, 0x4E));
    x = _mm_max_epi16(x, _mm_shuffle_epi32(x, 0xB1));
    x = _mm_max_epi16(x, _mm_shufflelo_epi16(x, 0xB1));
    return static_cast<T>(_mm_cvtsi128_si32(x));
  }
};
struct Lanes32 {
  using T = std::uint32_t;
  static __m256i mask() { return _mm256_set1_epi32(0x7FFFFFFF); }
  static __m256i max(__m256i a, __m256i b) { return _mm256_max_epu32(a, b); }
  static T hmax(__m256i v) {
    __m128i x = _mm_max_epu32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    x = _mm_max_epu32(x, _mm_shuffle_epi32(x, 0x4E));
    x = _mm_max_epu32(x, _mm_shuffle_epi32(x, 0xB1));
    return static_cast<T>(_mm_cvtsi128_si32(x));
  }
};

// Two accumulators over 64-byte steps, one more 32-byte step, then the last elements one by
// one (short arrays, e.g. the rows of a block, pay little besides the reduction).
template <class L>
typename L::T bits_avx2(const void* in, std::size_t n) {
  using T = typename L::T;
  constexpr std::size_t kLanes = 32 / sizeof(T);
  const auto* p = static_cast<const unsigned char*>(in);
  const __m256i mask = L::mask();
  const auto load = [&](std::size_t i) {
    return _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + sizeof(T) * i)), mask);
  };
  __m256i m0 = _mm256_setzero_si256(), m1 = m0;
  std::size_t i = 0;
  for (; i + 2 * kLanes <= n; i += 2 * kLanes) {
    m0 = L::max(m0, load(i));
    m1 = L::max(m1, load(i + kLanes));
  }
  if (i + kLanes <= n) m0 = L::max(m0, load(i)), i += kLanes;
  return max_abs_tail<T>(p, i, n, L::hmax(L::max(m0, m1)));
}

constexpr MaxAbsKernels kAvx2{&bits_avx2<Lanes16>, &bits_avx2<Lanes32>};

}  // namespace

const MaxAbsKernels* max_abs_kernels_avx2() { return &kAvx2; }

}  // namespace fp8q::detail
