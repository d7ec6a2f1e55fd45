// Internal: the kernels of the fused cast + transpose (cast_transpose.cpp) that depend on the
// instruction set: the transpose of one tile of codes and the amax of a stretch of the input.
// The baseline (SSE2, part of x86-64) versions live in cast_transpose.cpp; AVX2 ones in
// transpose_avx2.cpp, compiled alone with -mavx2. Not installed.
#pragma once

#include <cstddef>
#include <cstdint>

namespace fp8q::detail {

// Tiles are at most kTransposeTile x kTransposeTile codes.
inline constexpr std::size_t kTransposeTile = 64;

struct TransposeKernels {
  // dst[c * dst_stride + r] = src[r * src_stride + c] for r < nr, c < nc (nr, nc <= 64).
  void (*tile)(const std::uint8_t* src, std::size_t src_stride, std::uint8_t* dst, std::size_t dst_stride,
               std::size_t nr, std::size_t nc);
  // max over i < n of (p[i] & 0x7FFF): for bf16 and fp16 the sign-cleared pattern orders
  // magnitudes (NaN patterns above Inf), so this is the pattern of the largest |x|.
  std::uint16_t (*amax16)(const void* p, std::size_t n);  // p: 2-byte codes, any alignment
  // max over i < n of (p[i] & 0x7FFFFFFF): the same for fp32 patterns.
  std::uint32_t (*amax32)(const void* p, std::size_t n);  // p: 4-byte codes, any alignment
};

// nullptr where this binary has no AVX2 build of them (the caller keeps the baseline).
const TransposeKernels* transpose_kernels_avx2();

}  // namespace fp8q::detail
