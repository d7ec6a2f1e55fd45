// AVX2 kernels of the fused cast + transpose (transpose_kernels.hpp). Compiled with -mavx2.
// They move bit patterns only: no arithmetic, so nothing here can change a code.
#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "isa/transpose_kernels.hpp"

namespace fp8q::detail {
namespace {

// 8 rows x 32 columns into the tile buffer: tb[c * kTileColumnRows + r] = src[r * ss + c],
// r < 8, c < 32, as eight 8-byte column pieces per 128-bit lane. Three rounds of interleaving
// inside each lane (the low lane carries columns 0-15, the high lane 16-31):
//   round 1 (8-bit):  b holds, per 16-bit element t, rows (2k, 2k+1) of one column;
//   round 2 (16-bit): c holds, per 32-bit element, rows 0-3 or 4-7 of one column;
//   round 3 (32-bit): d[m] holds, per 64-bit element, rows 0-7 of columns 2m and 2m+1.
// 24 shuffles and 8 lane extracts per 256 bytes, all live values in 16 registers (a 16-row
// version needs 32 and spills). The tile buffer's row stride is a constant, so every store
// address is the one pointer plus an immediate.
constexpr std::size_t kTb = kTileColumnRows;

// One column pair's store: the low lane's two 8-byte halves are columns j and j + 1, the high
// lane's columns j + 16 and j + 17.
template <std::size_t j>
inline void store_pair(__m256i d, std::uint8_t* tb) {
  const __m128i lo = _mm256_castsi256_si128(d), hi = _mm256_extracti128_si256(d, 1);
  _mm_storel_epi64(reinterpret_cast<__m128i*>(tb + j * kTb), lo);
  _mm_storeh_pd(reinterpret_cast<double*>(tb + (j + 1) * kTb), _mm_castsi128_pd(lo));
  _mm_storel_epi64(reinterpret_cast<__m128i*>(tb + (j + 16) * kTb), hi);
  _mm_storeh_pd(reinterpret_cast<double*>(tb + (j + 17) * kTb), _mm_castsi128_pd(hi));
}

// Written out without arrays so that every value stays in a register at any -O level.
inline void transpose8x32(const std::uint8_t* src, std::size_t ss, std::uint8_t* tb) {
  const auto row = [&](std::size_t k) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + k * ss)); };
  const __m256i a0 = row(0), a1 = row(1), a2 = row(2), a3 = row(3), a4 = row(4), a5 = row(5), a6 = row(6),
                a7 = row(7);
  // round 1: rows (0,1), (2,3), (4,5), (6,7); *l: columns 0-7, *h: columns 8-15 (per lane)
  const __m256i b01l = _mm256_unpacklo_epi8(a0, a1), b01h = _mm256_unpackhi_epi8(a0, a1);
  const __m256i b23l = _mm256_unpacklo_epi8(a2, a3), b23h = _mm256_unpackhi_epi8(a2, a3);
  const __m256i b45l = _mm256_unpacklo_epi8(a4, a5), b45h = _mm256_unpackhi_epi8(a4, a5);
  const __m256i b67l = _mm256_unpacklo_epi8(a6, a7), b67h = _mm256_unpackhi_epi8(a6, a7);
  // round 2: rows 0-3 (c0*) and 4-7 (c4*) of columns 0-3, 4-7, 8-11, 12-15
  const __m256i c00 = _mm256_unpacklo_epi16(b01l, b23l), c01 = _mm256_unpackhi_epi16(b01l, b23l);
  const __m256i c02 = _mm256_unpacklo_epi16(b01h, b23h), c03 = _mm256_unpackhi_epi16(b01h, b23h);
  const __m256i c40 = _mm256_unpacklo_epi16(b45l, b67l), c41 = _mm256_unpackhi_epi16(b45l, b67l);
  const __m256i c42 = _mm256_unpacklo_epi16(b45h, b67h), c43 = _mm256_unpackhi_epi16(b45h, b67h);
  // round 3: rows 0-7 of columns (0,1), (2,3), ... (14,15)
  store_pair<0>(_mm256_unpacklo_epi32(c00, c40), tb);
  store_pair<2>(_mm256_unpackhi_epi32(c00, c40), tb);
  store_pair<4>(_mm256_unpacklo_epi32(c01, c41), tb);
  store_pair<6>(_mm256_unpackhi_epi32(c01, c41), tb);
  store_pair<8>(_mm256_unpacklo_epi32(c02, c42), tb);
  store_pair<10>(_mm256_unpackhi_epi32(c02, c42), tb);
  store_pair<12>(_mm256_unpacklo_epi32(c03, c43), tb);
  store_pair<14>(_mm256_unpackhi_epi32(c03, c43), tb);
}

// Prefetch distance in rows: the chunk buffer's lines come from L2 or L3 (it is written a
// whole chunk before it is read), and 48 rows are ~6 blocks of work ahead, a few hundred
// cycles: more than an L3 hit takes, with few enough lines in flight.
constexpr std::size_t kAhead = 48;

void tile_column_avx2(const std::uint8_t* src, std::size_t ss, std::size_t nr, std::size_t nc, std::uint8_t* tb,
                      const std::uint8_t* next) {
  const std::size_t nr8 = nr / 8 * 8, nc32 = nc / 32 * 32;
  for (std::size_t i = 0; i < nr8; i += 8) {
    const std::uint8_t* s = src + i * ss;
    // the line of each of the rows kAhead further down (a tile column is one line wide)
    if (i + kAhead < nr)
      for (std::size_t k = 0; k < 8; ++k) _mm_prefetch(reinterpret_cast<const char*>(s + (kAhead + k) * ss), _MM_HINT_T0);
    for (std::size_t j = 0; j < nc32; j += 32) transpose8x32(s + j, ss, tb + j * kTb + i);
  }
  // the next tile column's first rows, which its own prefetches do not reach
  if (next != nullptr)
    for (std::size_t i = 0; i < std::min(nr, kAhead); ++i) _mm_prefetch(reinterpret_cast<const char*>(next + i * ss), _MM_HINT_T0);
  // edges, byte by byte: the columns right of the 32-wide slabs, then the rows below them
  for (std::size_t j = nc32; j < nc; ++j)
    for (std::size_t i = 0; i < nr8; ++i) tb[j * kTb + i] = src[i * ss + j];
  for (std::size_t j = 0; j < nc; ++j)
    for (std::size_t i = nr8; i < nr; ++i) tb[j * kTb + i] = src[i * ss + j];
}

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

constexpr TransposeKernels kAvx2{&tile_column_avx2, &copy_avx2};

}  // namespace

const TransposeKernels* transpose_kernels_avx2() { return &kAvx2; }

}  // namespace fp8q::detail
