// Internal: how the bulk drivers (bulk.cpp, block_scaled.cpp) pick a kernel and split work.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "fp8q/numerics/isa.hpp"
#include "fp8q/numerics/parallel.hpp"
#include "fp8q/numerics/fp_env.hpp"
#include "isa/narrow.hpp"

namespace fp8q::detail {

// parallel_chunks with every chunk inside the default FP environment (the caller's MXCSR is
// restored afterwards on each thread).
template <class Body>
void parallel_pinned(std::size_t n, int threads, const Body& body, ChunkGrain grain = {}) {
  parallel_chunks(
      n, threads,
      [&](std::size_t begin, std::size_t end) {
        ScopedDefaultFpEnv env;
        body(begin, end);
      },
      grain);
}

// Rows as the unit of work: no thread gets fewer than ~16384 elements.
inline ChunkGrain row_grain(std::size_t cols) { return {1, cols == 0 ? 16384 : (16384 + cols - 1) / cols}; }

// One little-endian code of `bytes` bytes (x86-64 is little-endian); memcpy: p may be unaligned.
inline std::uint64_t load_code(const std::byte* p, std::size_t bytes) {
  std::uint64_t v = 0;
  std::memcpy(&v, p, bytes);
  return v;
}

inline Source source_of(const Format& f) {
  return f == kF32 ? Source::kF32 : f == kBF16 ? Source::kBF16 : Source::kF16;
}

inline NarrowFn narrow_kernel(Isa isa, Source s, Rounding r) {
  NarrowFn fn = nullptr;
  if (isa == Isa::kAvx512) fn = narrow_kernel_avx512(s, r);
  if (isa == Isa::kAvx2) fn = narrow_kernel_avx2(s, r);
  return fn != nullptr ? fn : narrow_kernel_generic(s, r);
}

// nullptr: no SIMD MX kernel for this ISA (the caller runs the scalar reference).
inline MxFn mx_kernel(Isa isa, Source s, Rounding r) {
  if (isa == Isa::kAvx512) return mx_kernel_avx512(s, r);
  if (isa == Isa::kAvx2) return mx_kernel_avx2(s, r);
  return nullptr;
}

}  // namespace fp8q::detail
