// Internal: how the bulk drivers (bulk.cpp, block_scaled.cpp) pick a kernel and split work.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

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

// One little-endian code of `bytes` bytes (x86-64 and aarch64 Linux are little-endian); memcpy: p may be unaligned.
inline std::uint64_t load_code(const std::byte* p, std::size_t bytes) {
  std::uint64_t v = 0;
  std::memcpy(&v, p, bytes);
  return v;
}

// rows x cols elements of `bytes` bytes each, checked: throws std::invalid_argument (naming
// `what`) when the matrix's byte count does not fit in size_t.
inline std::size_t matrix_elements(std::size_t rows, std::size_t cols, std::size_t bytes, const char* what) {
  if (cols != 0 && rows > SIZE_MAX / bytes / cols)
    throw std::invalid_argument(std::string(what) + ": a " + std::to_string(rows) + " x " + std::to_string(cols) +
                                " matrix is too large to address");
  return rows * cols;
}

// A byte of a narrow source format (fp6 / fp4: one code per byte, in the low bits) whose high
// bits are set is not a code of that format.
[[noreturn]] inline void throw_invalid_code(std::size_t index, std::uint64_t byte, const Format& from) {
  throw std::invalid_argument("element " + std::to_string(index) + ": byte " + std::to_string(byte) + " is not a " +
                              std::string(from.name) + " code (" + std::to_string(from.bits()) +
                              "-bit codes, high bits must be 0)");
}

inline Source source_of(const Format& f) {
  return f == kF32 ? Source::kF32 : f == kBF16 ? Source::kBF16 : Source::kF16;
}

inline NarrowFn narrow_kernel(Isa isa, Source s, Rounding r) {
  return dispatch(
      isa, [&] { return narrow_kernel_generic(s, r); }, [&] { return narrow_kernel_avx2(s, r); },
      [&] { return narrow_kernel_avx512(s, r); }, [&] { return narrow_kernel_neon(s, r); });
}

// nullptr: no SIMD MX kernel for this ISA (the caller runs the scalar reference). bf16 under
// nearest-even runs the AVX2 text on AVX-512 CPUs too: its 16-bit kernel (a 32-element block
// per group of four 8-lane vectors) has no 16-lane form (docs/performance.md, "Trainium3's MXFP8 path").
inline MxFn mx_kernel(Isa isa, Source s, Rounding r) {
  const bool bf16_nearest = s == Source::kBF16 && r == Rounding::kNearestEven;
  return dispatch(
      isa, [] { return MxFn{}; }, [&] { return mx_kernel_avx2(s, r); },
      [&] { return bf16_nearest ? MxFn{} : mx_kernel_avx512(s, r); }, [&] { return mx_kernel_neon(s, r); });
}

}  // namespace fp8q::detail
