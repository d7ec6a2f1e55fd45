// Internal: decoding one-byte codes (FP8, and fp6 / fp4 one per byte) into fp32, bf16 or fp16
// by arithmetic, for the bulk conversion's table path (bulk.cpp). Not installed.
//
// With s = the sign bit's position, m the fraction bits and b the bias of the source, a code c
// of magnitude a = c & (2^s - 1) decodes to the fp32 bits
//   bits(fp32(float_of(a << (23 - m)) * 2^(127 - b))) | (c >> s) << 31
// (a's exponent and fraction fields land in fp32's; the product by a power of two normalises a
// subnormal source exactly, under the IEEE default environment), then to bf16 as its high half
// and to fp16 exactly. Codes whose reference result differs (NaN, Inf; in fnuz formats the code
// with only the sign set) are the "special" ones: a magnitude above max_mag, or that one code;
// the kernels take those from the reference table.
#pragma once

#include <cstddef>
#include <cstdint>

#include "fp8q/numerics/format.hpp"

namespace fp8q::detail {

enum class WideOut : unsigned char { kF32, kBF16, kF16 };

struct WidenParams {
  int sign_bit = 7;               // s
  int shift = 0;                  // 23 - m
  float multiplier = 1.0f;        // 2^(127 - b)
  std::uint32_t max_mag = 0;      // magnitudes 0 .. max_mag are arithmetic
  std::int32_t special_code = -1; // one more code taken from the table (fnuz NaN), or -1
  const void* table = nullptr;    // the reference results, 256 entries of the output's width
};

// Fills p for `from` and checks the formula against `table` (the reference result of every
// code, entries of 4 bytes for kF32, else 2) on every non-special code, under the default FP
// environment. False: the formula does not give the table here (a scale, e8m0, NaN policies
// that change finite codes): the caller applies the table.
bool make_widen_params(const Format& from, WideOut out, const void* table, WidenParams& p);

// Decodes n codes from in to out (entries of the output's width, any alignment). Runs under
// the default FP environment (the caller pins it).
using WidenFn = void (*)(const std::uint8_t* in, std::byte* out, std::size_t n, const WidenParams& p);

// Decodes n codes from the table (the kernels' path for special codes and for the tail);
// `bytes` is the output's width. Out of line: compiled once, with the baseline flags.
void widen_from_table(const std::uint8_t* in, std::byte* out, std::size_t n, const WidenParams& p, std::size_t bytes);

#if defined(FP8Q_HAVE_AVX2)
WidenFn widen_kernel_avx2(WideOut out);  // call only where Isa::kAvx2 is supported
#else
inline WidenFn widen_kernel_avx2(WideOut) { return nullptr; }  // not compiled for this target
#endif
#if defined(FP8Q_HAVE_NEON)
WidenFn widen_kernel_neon(WideOut out);
#else
inline WidenFn widen_kernel_neon(WideOut) { return nullptr; }  // not compiled for this target
#endif

}  // namespace fp8q::detail
