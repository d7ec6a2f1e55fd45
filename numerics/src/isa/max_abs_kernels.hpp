// Internal: the kernels behind fp8q/numerics/max_abs.hpp, one set per instruction set (the
// baseline in max_abs.cpp; AVX2 and NEON from the one text in max_abs_kernel.hpp). Inputs may
// have any alignment. Not installed.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "fp8q/numerics/format.hpp"
#include "fp8q/numerics/isa.hpp"

namespace fp8q::detail {

struct MaxAbsKernels {
  std::uint16_t (*bits16)(const void* p, std::size_t n);  // max of (2-byte pattern & 0x7FFF)
  std::uint32_t (*bits32)(const void* p, std::size_t n);  // max of (4-byte pattern & 0x7FFFFFFF)
  // Blocks of 16 consecutive elements: m[b] = max(m[b], the block's bits16 / bits32), b < blocks.
  void (*blocks16_16)(const void* p, std::size_t blocks, std::uint32_t* m);
  void (*blocks16_32)(const void* p, std::size_t blocks, std::uint32_t* m);
  // Elementwise: pattern acc[i] = max(acc[i], sign-cleared pattern of element i), i < n (acc of
  // any alignment, read and written as patterns).
  void (*accumulate16)(const void* p, std::size_t n, void* acc);
  void (*accumulate32)(const void* p, std::size_t n, void* acc);
};

// The scalar part every kernel ends with: the max of m and the sign-cleared patterns of
// elements [i, n) of p (T = std::uint16_t or std::uint32_t; p of any alignment).
template <class T>
inline T max_abs_tail(const void* p, std::size_t i, std::size_t n, T m) {
  constexpr T kMask = static_cast<T>(static_cast<T>(~T{0}) >> 1);
  for (; i < n; ++i) {
    T v;
    std::memcpy(&v, static_cast<const unsigned char*>(p) + sizeof(T) * i, sizeof(T));
    m = std::max<T>(m, static_cast<T>(v & kMask));
  }
  return m;
}

// The pattern acc[i] = max(acc[i], sign-cleared pattern of p[i]) for i in [i, n): the scalar
// end of the accumulate kernels.
template <class T>
inline void accumulate_tail(const void* p, std::size_t i, std::size_t n, void* acc) {
  for (; i < n; ++i) {
    T a;
    std::memcpy(&a, static_cast<const unsigned char*>(acc) + sizeof(T) * i, sizeof(T));
    a = max_abs_tail<T>(p, i, i + 1, a);
    std::memcpy(static_cast<unsigned char*>(acc) + sizeof(T) * i, &a, sizeof(T));
  }
}

// The value of a largest-|x| pattern of `from` (fp32: a bits32 result; bf16 or fp16: a bits16
// one) as fp32: exact, Inf and NaN kept.
float amax_value(std::uint32_t bits, const Format& from);

// shared = max(shared, local), for the threads of one call (a max of patterns: the same bits
// in any order).
inline void merge_max(std::atomic<std::uint32_t>& shared, std::uint32_t local) {
  std::uint32_t seen = shared.load();
  while (local > seen && !shared.compare_exchange_weak(seen, local)) {
  }
}

// nullptr where this binary has no AVX2 build of them.
#if defined(FP8Q_HAVE_AVX2)
const MaxAbsKernels* max_abs_kernels_avx2();  // call only where Isa::kAvx2 is supported
#else
inline const MaxAbsKernels* max_abs_kernels_avx2() { return nullptr; }  // not compiled for this target
#endif
#if defined(FP8Q_HAVE_NEON)
const MaxAbsKernels* max_abs_kernels_neon();
#else
inline const MaxAbsKernels* max_abs_kernels_neon() { return nullptr; }  // not compiled for this target
#endif
// The kernels for `isa` (AVX-512 machines run the AVX2 ones: a max is bound by the loads).
const MaxAbsKernels& max_abs_kernels(Isa isa);

}  // namespace fp8q::detail
