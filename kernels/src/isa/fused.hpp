// Internal: the fused (NVIDIA tensor core) micro-kernel's interface, shared by its driver
// (fast_fused.cpp) and each ISA's translation unit. Not installed.
//
// One step of fused:n:alignA:resultR (accumulation.hpp; groups of 1) for a kFuMr x kFuNr tile,
// per output:
//   E  = max(model exponent of each nonzero product (e_a + e_b), of a nonzero C)
//   S  = trunc(C * 2^(A - E)) + sum_k trunc(a_k * b_k * 2^(A - E))     (integers)
//   C' = S rounded to R + 1 significant bits (toward zero or nearest-even), times 2^(E - A)
// which is the definition: trunc(x * 2^(A - E)) * 2^(E - A) is x truncated toward zero to a
// multiple of 2^(E - A), the truncated terms are added exactly, and S * 2^(E - A) rounded to
// R mantissa bits is the next C (a normal number: see below).
//
// Why host fp32 arithmetic computes it exactly (operands are decoded finite values of an
// element format without MX scales; the driver handles NaN and Inf apart):
//   - a_k * b_k is exact in fp32 (<= 8 significant bits, 2^-34 <= |p| < 2^32);
// (f below stands for A, 1 <= A <= 26, and for R in the rounding, 1 <= R <= 23)
//   - |p| < 2^(e_a + 1) * 2^(e_b + 1) <= 2^(E + 2), so p * 2^(f - E) < 2^(f + 2) is a power-of-two
//     scaling of a normal number into the normal range: exact, and vcvttps2dq (cvtt) truncates
//     it toward zero into an int32;
//   - C (a value with <= f + 1 significant bits, at least 2^(E' - f) >= 2^-57 when nonzero, or
//     the accumulator input C0 of the first step: any fp32 value with 2^-100 <= |C0| < 2^126,
//     or 0, which the driver checks) scales the same way: |C| < 2^(e_C + 1) <= 2^(E + 1), with
//     -100 <= E <= 126 (a rounding up may reach 2^126), so 2^(f - E) and 2^(E - f) are normal
//     for 1 <= f <= 26; a step's result stays below 2^127 (no overflow);
//   - |S| < (n + 1) * 2^(f + 2) <= 2^31 (the driver's condition) fits an int32, converts to
//     fp64 exactly, is rounded there on its bits to R + 1, and the result (<= 24 bits) converts
//     to fp32 exactly; times 2^(E - f) it is a normal fp32 number (E >= -100 is forced when
//     every term is zero, so 2^(E - f) >= 2^-126), so the reference's rounding to R mantissa
//     bits is this rounding to R + 1 significant bits.
// The model exponents are int8: operand exponents lie in [-15, 15], and a zero (or special)
// operand has kFuZeroExp, so a sum with it (saturated) stays below every product's.
#pragma once

#include <cstddef>
#include <cstdint>

namespace fp8q::detail {

// Register tile: 5 rows x 16 columns: 10 AVX2 int32 accumulators, 2 B vectors, the broadcast
// A value and two products fit the 16 ymm registers (with 6 rows GCC spilled an accumulator).
inline constexpr std::size_t kFuMr = 5, kFuNr = 16;
inline constexpr std::int8_t kFuZeroExp = -100;
inline constexpr int kFuMinE = -100;  // E when every term of a step is zero
inline constexpr int kFuMaxAlign = 26;  // 2^(E - A) >= 2^(-100 - 26) is normal

struct FuTile {
  std::size_t nsteps = 0;
  const std::uint32_t* len = nullptr;  // K slots of each step: even; padding slots hold zeros
  const float* ap = nullptr;           // ap[k * kFuMr + i]: decoded finite values (0 for specials)
  const std::uint16_t* am = nullptr;   // am[(k / 2) * kFuMr + i] = e[k][i] | e[k + 1][i] << 8 (int8 each)
  const float* bp = nullptr;           // bp[k * kFuNr + j]
  const std::int8_t* bm = nullptr;     // bm[k * kFuNr + j]
  int align_bits = 13;   // A
  int result_bits = 13;  // R
  bool nearest_even = false;  // rounding of each step's sum: nearest-even, or toward zero
  float* c = nullptr;         // C[i * ld + j], carried from step to step, updated in place
  std::size_t ld = 0;
};

using FuKernel = void (*)(const FuTile& tile);

FuKernel fused_kernel_generic();
#if defined(FP8Q_HAVE_AVX2)
FuKernel fused_kernel_avx2();  // nullptr where the CPU lacks AVX2
#else
inline FuKernel fused_kernel_avx2() { return nullptr; }  // not compiled for this target
#endif
#if defined(FP8Q_HAVE_AVX512)
FuKernel fused_kernel_avx512();  // nullptr where the CPU lacks AVX-512
#else
inline FuKernel fused_kernel_avx512() { return nullptr; }  // not compiled for this target
#endif

}  // namespace fp8q::detail
