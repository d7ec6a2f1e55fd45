// Internal: the kernels of the fused cast + transpose (cast_transpose.cpp) that depend on the
// instruction set: the transpose of one tile column of codes and the copy of codes to an
// output (streamed or not); each piece's amax comes from isa/max_abs_kernels.hpp. The
// tile transposes are one text, isa/transpose_kernel.hpp, over SSE2 (the x86-64 baseline,
// transpose_base.cpp, which has a byte loop for other targets), AVX2 (transpose_avx2.cpp,
// compiled alone with -mavx2) and NEON (transpose_neon.cpp). Not installed.
#pragma once

#include <cstddef>
#include <cstdint>

namespace fp8q::detail {

// A tile column is at most kTransposeTile columns wide and kTileColumnRows rows high.
inline constexpr std::size_t kTransposeTile = 64;
inline constexpr std::size_t kTileColumnRows = 256;

struct TransposeKernels {
  // tb[c * kTileColumnRows + r] = src[r * src_stride + c] for r < nr, c < nc
  // (nr <= kTileColumnRows, nc <= kTransposeTile). `next` (or nullptr) is the tile column to
  // be transposed next, same rows and stride: the first lines of its rows are prefetched.
  void (*tile_column)(const std::uint8_t* src, std::size_t src_stride, std::size_t nr, std::size_t nc,
                      std::uint8_t* tb, const std::uint8_t* next);
  // dst[0, n) = src[0, n). With `stream`, the 64-byte lines of dst that the copy covers whole
  // are written with non-temporal stores (no read for ownership, not kept in cache); the
  // partial lines at either end, and everything without `stream`, by ordinary stores.
  void (*copy)(std::uint8_t* dst, const std::uint8_t* src, std::size_t n, bool stream);
};

// nullptr where this binary has no AVX2 / NEON build of them (the caller keeps the baseline).
// The baseline kernels: every target has them.
const TransposeKernels* transpose_kernels_base();
#if defined(FP8Q_HAVE_AVX2)
const TransposeKernels* transpose_kernels_avx2();  // call only where Isa::kAvx2 is supported
#else
inline const TransposeKernels* transpose_kernels_avx2() { return nullptr; }  // not compiled for this target
#endif
#if defined(FP8Q_HAVE_NEON)
const TransposeKernels* transpose_kernels_neon();
#else
inline const TransposeKernels* transpose_kernels_neon() { return nullptr; }  // not compiled for this target
#endif

}  // namespace fp8q::detail
