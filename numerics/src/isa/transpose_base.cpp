// The baseline kernels of the fused cast + transpose (transpose_kernels.hpp): on x86-64,
// transpose_kernel.hpp over SSE2 (part of x86-64) and a streaming copy; elsewhere byte loops
// (aarch64 takes transpose_neon.cpp's).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#if defined(__SSE2__)
#include <emmintrin.h>
#include <xmmintrin.h>
#endif

#include "isa/transpose_kernels.hpp"

namespace {

#if defined(__SSE2__)
struct OpsTransposeSse2 {
  using V = __m128i;
  static constexpr std::size_t kWidth = 16;
  static constexpr std::size_t kTb = fp8q::detail::kTileColumnRows;

  static V load(const std::uint8_t* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); }
  static V zip_lo8(V a, V b) { return _mm_unpacklo_epi8(a, b); }
  static V zip_hi8(V a, V b) { return _mm_unpackhi_epi8(a, b); }
  static V zip_lo16(V a, V b) { return _mm_unpacklo_epi16(a, b); }
  static V zip_hi16(V a, V b) { return _mm_unpackhi_epi16(a, b); }
  static V zip_lo32(V a, V b) { return _mm_unpacklo_epi32(a, b); }
  static V zip_hi32(V a, V b) { return _mm_unpackhi_epi32(a, b); }
  template <std::size_t j>
  static void store_pair(V d, std::uint8_t* tb) {
    _mm_storel_epi64(reinterpret_cast<__m128i*>(tb + j * kTb), d);
    _mm_storeh_pd(reinterpret_cast<double*>(tb + (j + 1) * kTb), _mm_castsi128_pd(d));
  }
  static void prefetch(const std::uint8_t* p) { _mm_prefetch(reinterpret_cast<const char*>(p), _MM_HINT_T0); }
};

#include "isa/transpose_kernel.hpp"

constexpr auto kTileColumn = &TransposeKernel<OpsTransposeSse2>::tile_column;
#else
// tb[c * kTileColumnRows + r] = src[r * ss + c] for r < nr, c < nc, byte by byte.
void tile_column_bytes(const std::uint8_t* src, std::size_t ss, std::size_t nr, std::size_t nc, std::uint8_t* tb,
                       const std::uint8_t*) {
  for (std::size_t j = 0; j < nc; ++j)
    for (std::size_t i = 0; i < nr; ++i) tb[j * fp8q::detail::kTileColumnRows + i] = src[i * ss + j];
}
constexpr auto kTileColumn = &tile_column_bytes;
#endif

// dst[0, n) = src[0, n), the whole 64-byte lines of dst streamed with `stream` (SSE2).
void copy_base(std::uint8_t* dst, const std::uint8_t* src, std::size_t n, bool stream) {
#if defined(__SSE2__)
  if (stream) {
    std::size_t i = std::min(n, (64 - reinterpret_cast<std::uintptr_t>(dst) % 64) % 64);
    if (i != 0) std::memcpy(dst, src, i);
    for (; i + 64 <= n; i += 64)
      for (std::size_t k = 0; k < 64; k += 16)
        _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + k),
                         _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + k)));
    if (i != n) std::memcpy(dst + i, src + i, n - i);
    return;
  }
#else
  (void)stream;
#endif
  std::memcpy(dst, src, n);
}

constexpr fp8q::detail::TransposeKernels kBase{kTileColumn, &copy_base};

}  // namespace

namespace fp8q::detail {
const TransposeKernels* transpose_kernels_base() { return &kBase; }
}  // namespace fp8q::detail
