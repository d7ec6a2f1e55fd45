// Internal: the exact_block micro-kernel's interface, shared by its driver
// (fast_exact_block.cpp) and each ISA's translation unit. Not installed.
//
// The kernel adds, for a kXbMr x kXbNr tile of outputs, the exact sum of each block of
// products, rounded once to fp32, into an fp32 accumulator: acc = fp32(acc + fp32(sum)), block
// after block. Operands are decoded FP8 / fp6 / fp4 values in fp64, already multiplied by their
// MX scale 2^e (exact: a value has <= 4 significant bits and |e| <= 127). A product then has
// <= 8 significant bits and is exact in fp64, and the products of one output's block share the
// factor 2^(e_a + e_b), so whether an fp64 sum of them is exact does not depend on the scales.
//
// Two ways to sum a block, chosen per tile and block by the driver from the operands' exponents
// (so the choice never depends on the data of other tiles):
//
//   kXbDirect: acc64 = acc64 + a_k * b_k in fp64. Exact when every partial sum fits 53 bits:
//     with t = the largest floor(log2|x|) and u = the smallest exponent of a lowest set bit
//     among the block's nonzero operands of the tile's A rows (t_a, u_a) and B columns (t_b, u_b),
//     every partial sum is a multiple of 2^(u_a + u_b) below len * 2^(t_a + t_b + 2), so
//       (t_a + t_b + 2 + ceil(log2 len)) - (u_a + u_b) <= 53
//     makes each fp64 operation exact (e4m3fn x e4m3fn: 41 always; e5m2 x e5m2: up to 71).
//     The exact sum is then rounded once to fp32 (nearest-even).
//   kXbSplit: two exact fp64 sums, lo of the products with |p| < thr and hi of the others
//     (thr = 2^(u_a + u_b + 53 - ceil(log2 len)) times the output's scales: lo stays below
//     2^53 units of 2^(u_a + u_b); a hi product has <= w significant bits, so it is a multiple
//     of thr / 2^(w - 1) and hi stays below 2^53 of those whenever the driver's bound holds).
//     hi + lo = s + err exactly (TwoSum); s is made round-to-odd at 53 bits (moved one ulp
//     toward err when err != 0 and s is even), and rounding that to fp32 is the correctly
//     rounded hi + lo, since 53 >= 24 + 2 (Boldo & Melquiond, IEEE TC 57(4), 2008).
//
// Special values need no separate path: a NaN or infinite product makes the fp64 sum NaN or
// infinite exactly as the definition says (Inf - Inf and Inf * 0 are NaN), and finite sums
// stay below 2^(33 + 5 + 254) << 2^1024. Every fp64 sum starts at -0 (-0 + x = x for every x),
// so a block whose products are all -0 sums to -0, as the exact sum does: an accumulator that
// starts at an accumulator input C = -0 stays -0 (gemm.hpp). All arithmetic is under the caller-independent FP
// environment the driver sets (ScopedDefaultFpEnv).
#pragma once

#include <cstddef>
#include <cstdint>

namespace fp8q::detail {

// Register tile: 6 rows x 16 columns; AVX-512 holds it in 12 accumulators of 8 doubles, AVX2 in
// two passes of 8 columns, 12 accumulators of 4 (12 FMA chains: enough to hide the FMA latency
// on two pipes; one B vector loaded per 6 broadcasts would leave the loads the bound).
inline constexpr std::size_t kXbMr = 6, kXbNr = 16;

enum XbMode : std::uint8_t { kXbDirect = 0, kXbSplit = 1 };

struct XbTile {
  std::size_t nblocks = 0;
  const std::uint32_t* len = nullptr;  // products in each block (>= 1)
  const std::uint8_t* mode = nullptr;  // XbMode of each block
  // kXbSplit blocks: thresholds thr[(block * kXbMr + i) * kXbNr + j]; other blocks: unused.
  const double* thr = nullptr;
  const double* ap = nullptr;  // ap[k * kXbMr + i], k over all blocks in order
  const double* bp = nullptr;  // bp[k * kXbNr + j]
  float* acc = nullptr;        // acc[i * ld + j], updated in place block after block
  std::size_t ld = 0;
};

using XbKernel = void (*)(const XbTile& tile);

XbKernel exact_block_kernel_generic();
#if defined(FP8Q_HAVE_AVX2)
XbKernel exact_block_kernel_avx2();  // nullptr where the CPU lacks AVX2 + FMA
#else
inline XbKernel exact_block_kernel_avx2() { return nullptr; }  // not compiled for this target
#endif
#if defined(FP8Q_HAVE_AVX512)
XbKernel exact_block_kernel_avx512();  // nullptr where the CPU lacks AVX-512
#else
inline XbKernel exact_block_kernel_avx512() { return nullptr; }  // not compiled for this target
#endif

}  // namespace fp8q::detail
