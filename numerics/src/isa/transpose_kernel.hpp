// Internal: the tile-column transpose of the fused cast + transpose (transpose_kernels.hpp),
// written once over an `Ops` type: SSE2 (transpose_base.cpp, 16 columns a block), AVX2
// (transpose_avx2.cpp, 32) and NEON (transpose_neon.cpp, 16). Included only inside an anonymous
// namespace, after the headers it includes, so that no inline function compiled with one ISA's
// flags reaches another translation unit. It moves bit patterns only: nothing here can change
// a code.
//
// A block is 8 rows x Ops::kWidth columns, transposed by three rounds of interleaving inside
// each 128-bit lane (lane l carries columns 16l .. 16l + 15):
//   round 1 (8-bit):  per 16-bit element, rows (2k, 2k+1) of one column;
//   round 2 (16-bit): per 32-bit element, rows 0-3 or 4-7 of one column;
//   round 3 (32-bit): per 64-bit element, rows 0-7 of columns 2m and 2m+1.
// 24 interleaves per block, every value in a register (a 16-row block needs 32 ymm and
// spills); the tile buffer's row stride is a constant, so every store address is one pointer
// plus an immediate.
//
// Ops: V, kWidth (16 per 128-bit lane), and
//   load(p)                 kWidth bytes at p (unaligned)
//   zip_lo8/hi8, zip_lo16/hi16, zip_lo32/hi32 (a, b)  the low / high halves of each 128-bit
//                           lane of a and b interleaved by 8, 16 or 32 bits (x86 unpack, NEON zip)
//   store_pair<j>(d, tb)    each lane l's low 8 bytes to tb + (j + 16 l) * kTileColumnRows,
//                           its high 8 bytes to tb + (j + 1 + 16 l) * kTileColumnRows
//   prefetch(p)
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "isa/transpose_kernels.hpp"

template <class Ops>
struct TransposeKernel {
  using V = typename Ops::V;
  static constexpr std::size_t kTb = fp8q::detail::kTileColumnRows;
  // Prefetch distance in rows: the chunk buffer's lines come from L2 or L3 (it is written a
  // whole chunk before it is read), and 48 rows are ~6 blocks of work ahead, a few hundred
  // cycles: more than an L3 hit takes, with few enough lines in flight.
  static constexpr std::size_t kAhead = 48;

  // tb[c * kTb + r] = src[r * ss + c], r < 8, c < kWidth. Written out without arrays so that
  // every value stays in a register at any -O level.
  static void block(const std::uint8_t* src, std::size_t ss, std::uint8_t* tb) {
    const V a0 = Ops::load(src), a1 = Ops::load(src + ss), a2 = Ops::load(src + 2 * ss), a3 = Ops::load(src + 3 * ss),
            a4 = Ops::load(src + 4 * ss), a5 = Ops::load(src + 5 * ss), a6 = Ops::load(src + 6 * ss),
            a7 = Ops::load(src + 7 * ss);
    // round 1: rows (0,1), (2,3), (4,5), (6,7); *l: columns 0-7, *h: columns 8-15 (per lane)
    const V b01l = Ops::zip_lo8(a0, a1), b01h = Ops::zip_hi8(a0, a1);
    const V b23l = Ops::zip_lo8(a2, a3), b23h = Ops::zip_hi8(a2, a3);
    const V b45l = Ops::zip_lo8(a4, a5), b45h = Ops::zip_hi8(a4, a5);
    const V b67l = Ops::zip_lo8(a6, a7), b67h = Ops::zip_hi8(a6, a7);
    // round 2: rows 0-3 (c0*) and 4-7 (c4*) of columns 0-3, 4-7, 8-11, 12-15
    const V c00 = Ops::zip_lo16(b01l, b23l), c01 = Ops::zip_hi16(b01l, b23l);
    const V c02 = Ops::zip_lo16(b01h, b23h), c03 = Ops::zip_hi16(b01h, b23h);
    const V c40 = Ops::zip_lo16(b45l, b67l), c41 = Ops::zip_hi16(b45l, b67l);
    const V c42 = Ops::zip_lo16(b45h, b67h), c43 = Ops::zip_hi16(b45h, b67h);
    // round 3: rows 0-7 of columns (0,1), (2,3), ... (14,15)
    Ops::template store_pair<0>(Ops::zip_lo32(c00, c40), tb);
    Ops::template store_pair<2>(Ops::zip_hi32(c00, c40), tb);
    Ops::template store_pair<4>(Ops::zip_lo32(c01, c41), tb);
    Ops::template store_pair<6>(Ops::zip_hi32(c01, c41), tb);
    Ops::template store_pair<8>(Ops::zip_lo32(c02, c42), tb);
    Ops::template store_pair<10>(Ops::zip_hi32(c02, c42), tb);
    Ops::template store_pair<12>(Ops::zip_lo32(c03, c43), tb);
    Ops::template store_pair<14>(Ops::zip_hi32(c03, c43), tb);
  }

  // tb[c * kTb + r] = src[r * ss + c] for r < nr, c < nc (transpose_kernels.hpp).
  static void tile_column(const std::uint8_t* src, std::size_t ss, std::size_t nr, std::size_t nc, std::uint8_t* tb,
                          const std::uint8_t* next) {
    constexpr std::size_t kW = Ops::kWidth;
    const std::size_t nr8 = nr / 8 * 8, ncw = nc / kW * kW;
    for (std::size_t i = 0; i < nr8; i += 8) {
      const std::uint8_t* s = src + i * ss;
      // the line of each of the rows kAhead further down (a tile column is one line wide)
      if (i + kAhead < nr)
        for (std::size_t k = 0; k < 8; ++k) Ops::prefetch(s + (kAhead + k) * ss);
      for (std::size_t j = 0; j < ncw; j += kW) block(s + j, ss, tb + j * kTb + i);
    }
    // the next tile column's first rows, which its own prefetches do not reach
    if (next != nullptr)
      for (std::size_t i = 0; i < std::min(nr, kAhead); ++i) Ops::prefetch(next + i * ss);
    // edges, byte by byte: the columns right of the blocks, then the rows below them
    for (std::size_t j = ncw; j < nc; ++j)
      for (std::size_t i = 0; i < nr8; ++i) tb[j * kTb + i] = src[i * ss + j];
    for (std::size_t j = 0; j < nc; ++j)
      for (std::size_t i = nr8; i < nr; ++i) tb[j * kTb + i] = src[i * ss + j];
  }
};
