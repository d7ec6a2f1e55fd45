// AVX2 kernels of fp8q/numerics/max_abs.hpp: max_abs_kernel.hpp on AVX2. Compiled with -mavx2.
#include <immintrin.h>
#include <xsimd/xsimd.hpp>

#include <cstdint>

#include "isa/max_abs_kernel.hpp"

namespace fp8q::detail {
namespace {

using A = xsimd::avx2;

// The halves, then 64-, 32- (and 16-) bit swaps, in registers. Masked patterns are
// non-negative, so the signed 16-bit max orders them as the unsigned one would.
struct HmaxAvx2 {
  static std::uint16_t hmax(xsimd::batch<std::uint16_t, A> v) {
    __m128i x = _mm_max_epi16(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    x = _mm_max_epi16(x, _mm_shuffle_epi32(x, 0x4E));
    x = _mm_max_epi16(x, _mm_shuffle_epi32(x, 0xB1));
    x = _mm_max_epi16(x, _mm_shufflelo_epi16(x, 0xB1));
    return static_cast<std::uint16_t>(_mm_cvtsi128_si32(x));
  }
  static std::uint32_t hmax(xsimd::batch<std::uint32_t, A> v) {
    __m128i x = _mm_max_epu32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    x = _mm_max_epu32(x, _mm_shuffle_epi32(x, 0x4E));
    x = _mm_max_epu32(x, _mm_shuffle_epi32(x, 0xB1));
    return static_cast<std::uint32_t>(_mm_cvtsi128_si32(x));
  }
};

}  // namespace

const MaxAbsKernels* max_abs_kernels_avx2() { return &kMaxAbsKernels<A, HmaxAvx2>; }

}  // namespace fp8q::detail
