// AVX2 kernels of the fused cast + transpose (transpose_kernels.hpp): transpose_kernel.hpp over
// 32-byte vectors (two 128-bit lanes), and the streaming copy. Compiled with -mavx2.
#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "isa/transpose_kernels.hpp"

namespace {

struct OpsTransposeAvx2 {
  using V = __m256i;
  static constexpr std::size_t kWidth = 32;
  static constexpr std::size_t kTb = fp8q::detail::kTileColumnRows;

  static V load(const std::uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
  static V zip_lo8(V a, V b) { return _mm256_unpacklo_epi8(a, b); }
  static V zip_hi8(V a, V b) { return _mm256_unpackhi_epi8(a, b); }
  static V zip_lo16(V a, V b) { return _mm256_unpacklo_epi16(a, b); }
  static V zip_hi16(V a, V b) { return _mm256_unpackhi_epi16(a, b); }
  static V zip_lo32(V a, V b) { return _mm256_unpacklo_epi32(a, b); }
  static V zip_hi32(V a, V b) { return _mm256_unpackhi_epi32(a, b); }
  template <std::size_t j>
  static void store_pair(V d, std::uint8_t* tb) {
    const __m128i lo = _mm256_castsi256_si128(d), hi = _mm256_extracti128_si256(d, 1);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(tb + j * kTb), lo);
    _mm_storeh_pd(reinterpret_cast<double*>(tb + (j + 1) * kTb), _mm_castsi128_pd(lo));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(tb + (j + 16) * kTb), hi);
    _mm_storeh_pd(reinterpret_cast<double*>(tb + (j + 17) * kTb), _mm_castsi128_pd(hi));
  }
  static void prefetch(const std::uint8_t* p) { _mm_prefetch(reinterpret_cast<const char*>(p), _MM_HINT_T0); }
};

// Every header it includes was included above, so this adds only the kernels, with internal
// linkage.
#include "isa/transpose_kernel.hpp"

// 32-byte non-temporal stores for the whole lines of dst (see transpose_kernels.hpp).
void copy_avx2(std::uint8_t* dst, const std::uint8_t* src, std::size_t n, bool stream) {
  if (!stream) {
    std::memcpy(dst, src, n);
    return;
  }
  std::size_t i = std::min(n, (64 - reinterpret_cast<std::uintptr_t>(dst) % 64) % 64);
  if (i != 0) std::memcpy(dst, src, i);
  for (; i + 64 <= n; i += 64) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i + 32));
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + i), a);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + i + 32), b);
  }
  if (i != n) std::memcpy(dst + i, src + i, n - i);
}

constexpr fp8q::detail::TransposeKernels kAvx2{&TransposeKernel<OpsTransposeAvx2>::tile_column, &copy_avx2};

}  // namespace

namespace fp8q::detail {
const TransposeKernels* transpose_kernels_avx2() { return &kAvx2; }
}  // namespace fp8q::detail
