// Internal: the fp32-sequential micro-kernel's interface, shared by the driver (fast_gemm.cpp)
// and each ISA's translation unit. Not installed.
#pragma once

#include <cstddef>

namespace fp8q::detail {

// The register tile: kMr rows of A by kNr columns of B (12 AVX2 accumulators of 8 lanes, plus
// 2 B vectors and 1 broadcast: 15 of the 16 ymm registers).
inline constexpr std::size_t kMr = 6, kNr = 16;
// The AVX-512 kernel's tile: kMr rows by kWideNr columns (24 zmm accumulators of 16 lanes,
// plus 4 B vectors and 1 broadcast), the bf16 pair kernel's (seq_bf16.hpp).
inline constexpr std::size_t kWideNr = 64;

// out[i * ldo + j] = the sequence acc = fp32(acc + fp32(a_k,i * b_k,j)) for k = 0 .. kc-1,
// starting from init[i * ldi + j] (or +0 when init is null; init may equal out): every product
// rounded (exact for decoded FP8 operands, so a fused multiply-add gives the same bits), every
// addition rounded, in k order. Packed operands: ap[k * kMr + i], bp[k * nr + j], nr = kNr
// (kWideNr for the AVX-512 kernel). Each lane is one output, so the vector width cannot change
// a result. With `add` (and init null) the tile's sum is added to out instead, out = fp32(out +
// acc): a systolic tile folded into its PSUM.
using SeqKernel = void (*)(std::size_t kc, const float* ap, const float* bp, const float* init, std::size_t ldi,
                          float* out, std::size_t ldo, bool add);

SeqKernel seq_kernel_generic();
#if defined(FP8Q_HAVE_AVX2)
SeqKernel seq_kernel_avx2();  // nullptr where the CPU lacks AVX2 + FMA
#else
inline SeqKernel seq_kernel_avx2() { return nullptr; }  // not compiled for this target
#endif
#if defined(FP8Q_HAVE_AVX512)
SeqKernel seq_kernel_avx512();  // kMr x kWideNr tiles; nullptr where the CPU lacks AVX-512
#else
inline SeqKernel seq_kernel_avx512() { return nullptr; }  // not compiled for this target
#endif

}  // namespace fp8q::detail
