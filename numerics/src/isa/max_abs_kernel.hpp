// Internal: the max_abs kernel text, once over xsimd for any architecture A; the per-ISA file
// (max_abs_avx2.cpp, max_abs_neon.cpp) gives the horizontal max xsimd 8.1 lacks. Bit patterns
// are compared (unsigned), never values, so nothing depends on the FP environment. Not installed.
#pragma once

#include <xsimd/xsimd.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "isa/max_abs_kernels.hpp"

namespace fp8q::detail {

// The max of the sign-cleared T patterns of p[0, n): accumulators covering 64 bytes a step,
// then one register a step, then the last elements one by one (short arrays, e.g. the rows of
// a block, pay little besides the reduction). Hmax::hmax(batch<T, A>) reduces a register.
template <class A, class Hmax, class T>
T max_abs_bits(const void* in, std::size_t n) {
  using B = xsimd::batch<T, A>;
  constexpr std::size_t kLanes = B::size, kAcc = 64 / sizeof(B);
  static_assert(kAcc >= 1 && kAcc * sizeof(B) == 64, "registers of 16, 32 or 64 bytes");
  const auto* p = static_cast<const T*>(in);
  const B mask(static_cast<T>(static_cast<T>(~T{0}) >> 1));
  const auto load = [&](std::size_t i) { return B::load_unaligned(p + i) & mask; };
  B m[kAcc];
  for (auto& v : m) v = B(T{0});
  std::size_t i = 0;
  for (; i + kAcc * kLanes <= n; i += kAcc * kLanes)
    for (std::size_t a = 0; a < kAcc; ++a) m[a] = xsimd::max(m[a], load(i + a * kLanes));
  for (; i + kLanes <= n; i += kLanes) m[0] = xsimd::max(m[0], load(i));
  for (std::size_t a = 1; a < kAcc; ++a) m[0] = xsimd::max(m[0], m[a]);
  return max_abs_tail<T>(in, i, n, Hmax::hmax(m[0]));
}

// Blocks of 16 elements (NVFP4's), each in 1, 2 or 4 registers reduced in place: one call for a
// row of blocks instead of one max_abs_bits call, with its tail and reduction setup, per block.
template <class A, class Hmax, class T>
void max_abs_blocks16(const void* in, std::size_t blocks, std::uint32_t* m) {
  using B = xsimd::batch<T, A>;
  constexpr std::size_t kLanes = B::size, kRegs = 16 / kLanes;
  static_assert(kRegs >= 1 && kRegs * kLanes == 16, "16 lanes of T in whole registers");
  const auto* p = static_cast<const T*>(in);
  const B mask(static_cast<T>(static_cast<T>(~T{0}) >> 1));
  for (std::size_t b = 0; b < blocks; ++b, p += 16) {
    B v = B::load_unaligned(p) & mask;
    for (std::size_t k = 1; k < kRegs; ++k) v = xsimd::max(v, B::load_unaligned(p + k * kLanes) & mask);
    m[b] = std::max<std::uint32_t>(m[b], Hmax::hmax(v));
  }
}

// acc[i] = max(acc[i], |p[i]| pattern): the rows of a tall block folded into one row of
// maxima, reduced across the block's columns once (no reduction per row).
template <class A, class T>
void max_abs_accumulate(const void* in, std::size_t n, void* out) {
  using B = xsimd::batch<T, A>;
  const auto* p = static_cast<const T*>(in);
  auto* acc = static_cast<T*>(out);  // unaligned vector loads and stores only (they may alias)
  const B mask(static_cast<T>(static_cast<T>(~T{0}) >> 1));
  std::size_t i = 0;
  for (; i + B::size <= n; i += B::size)
    xsimd::max(B::load_unaligned(acc + i), B::load_unaligned(p + i) & mask).store_unaligned(acc + i);
  accumulate_tail<T>(in, i, n, out);
}

template <class A, class Hmax>
constexpr MaxAbsKernels kMaxAbsKernels{&max_abs_bits<A, Hmax, std::uint16_t>,
                                       &max_abs_bits<A, Hmax, std::uint32_t>,
                                       &max_abs_blocks16<A, Hmax, std::uint16_t>,
                                       &max_abs_blocks16<A, Hmax, std::uint32_t>,
                                       &max_abs_accumulate<A, std::uint16_t>,
                                       &max_abs_accumulate<A, std::uint32_t>};

}  // namespace fp8q::detail
