// Internal: the fp32-sequential micro-kernel on bf16 pairs (AVX-512 BF16 vdpbf16ps), shared by
// the driver (fast_gemm.cpp) and seq_avx512bf16.cpp. Not installed. docs/numerics.md states
// the instruction's lane arithmetic this relies on, as measured.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

namespace fp8q::detail {

// The register tile: kPairMr rows of A by kPairNr columns of B (24 zmm accumulators of 16
// lanes, plus 4 B vectors and 1 broadcast: 29 of the 32 zmm registers).
inline constexpr std::size_t kPairMr = 6, kPairNr = 64;

// Two K-consecutive operands in one 32-bit word: element k in the high bf16 half, k + 1 in
// the low half. vdpbf16ps computes per lane acc = fp32(fp32(acc + hi_a * hi_b) + lo_a * lo_b),
// so the high half is the one added first. Decoded FP8/fp6/fp4 values are exact in bf16 (at
// most 4 mantissa bits, exponents inside fp32's), so taking fp32's high half loses nothing.
inline std::uint32_t bf16_pair(float first, float second) {
  return (std::bit_cast<std::uint32_t>(first) & 0xFFFF0000u) | (std::bit_cast<std::uint32_t>(second) >> 16);
}
// The padding of an odd chunk's last pair: A gets -0 and B +0 in the second slot, so the
// padding product is -0, which leaves every fp32 value unchanged (x + -0 = x, also for
// x = +0 and -0 under nearest-even), where a +0 product would turn a -0 sum into +0.
inline constexpr float kPadA = -0.0f, kPadB = 0.0f;

// out[i * ldo + j] = the sequence acc = fp32(acc + a_k,i * b_k,j) over the 2 * pairs packed
// elements, starting from init[i * ldi + j] (or +0 when init is null; init may equal out), as
// SeqKernel (seq.hpp). Packed operands: ap[q * kPairMr + i], bp[q * kPairNr + j] for pair q.
// A subnormal init (which the driver never passes: its partial sums are sums of products,
// multiples of 2^-34) is handled too, although the instruction treats it as zero. `add` as
// SeqKernel's: out = fp32(out + acc).
using PairKernel = void (*)(std::size_t pairs, const std::uint32_t* ap, const std::uint32_t* bp, const float* init,
                            std::size_t ldi, float* out, std::size_t ldo, bool add);

#if defined(FP8Q_HAVE_AVX512BF16)
PairKernel seq_kernel_avx512bf16();  // nullptr where the CPU lacks AVX-512 BF16
#else
inline PairKernel seq_kernel_avx512bf16() { return nullptr; }  // not compiled for this target
#endif

}  // namespace fp8q::detail
