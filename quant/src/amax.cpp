#include "fp8q/quant/amax.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <stdexcept>
#include <string>

#include <cstring>
#include <vector>

#include "fp8q/numerics/convert.hpp"
#include "fp8q/numerics/max_abs.hpp"
#include "fp8q/numerics/parallel.hpp"

namespace fp8q {
namespace {

// Each thread chunk's largest |x| pattern comes from max_abs_bits (the vector kernels of
// fp8q/numerics/max_abs.hpp); the chunks' patterns are combined by max, which is exact.
inline std::uint32_t as_f32_bits(std::uint32_t bits) { return bits; }
inline std::uint32_t as_f32_bits(std::uint16_t bf16) { return std::uint32_t{bf16} << 16; }

template <class T>
float amax_of(std::span<const T> x, int threads) {
  if (threads < 1) throw std::invalid_argument("amax: threads must be >= 1, got " + std::to_string(threads));
  std::atomic<std::uint32_t> result{0};
  parallel_chunks(x.size(), threads, [&](std::size_t begin, std::size_t end) {
    const std::uint32_t m = as_f32_bits(max_abs_bits(x.subspan(begin, end - begin)));
    std::uint32_t seen = result.load();
    while (m > seen && !result.compare_exchange_weak(seen, m)) {
    }
  });
  return std::bit_cast<float>(result.load());
}

constexpr std::size_t kNarrowBlock = 16;  // block width below which a row is scanned element by element
// |x|'s pattern, as max_abs_bits takes it
inline std::uint32_t magnitude_bits(float x) { return std::bit_cast<std::uint32_t>(x) & 0x7FFFFFFFu; }
inline std::uint32_t magnitude_bits(std::uint16_t x) { return x & 0x7FFFu; }

// Largest |x| pattern of each block-column stretch of rows [r0, r1), into m (one per grid
// column). 16-bit sources keep their own patterns: fp16 and bf16 magnitudes order like values.
// Several rows are first folded into one row of maxima (`fold`, g.cols entries), which is then
// reduced as a one-row stretch: a reduction per block, not per block and row.
template <class T>
void stretch_max(const T* x, const BlockGrid& g, std::size_t r0, std::size_t r1, std::vector<std::uint32_t>& m,
                 std::vector<T>& fold) {
  if (r1 - r0 > 1) {
    fold.assign(g.cols, 0);
    for (std::size_t r = r0; r < r1; ++r)
      max_abs_accumulate(std::span<const T>(x + r * g.cols, g.cols), std::span<T>(fold));
    return stretch_max(fold.data(), g, 0, 1, m, fold);
  }
  if (g.block_cols < kNarrowBlock) {  // narrow blocks (per column, 128 x 1): element by element
    for (std::size_t r = r0; r < r1; ++r) {
      const T* row = x + r * g.cols;
      if (g.block_cols == 1) {
        for (std::size_t c = 0; c < g.cols; ++c) m[c] = std::max(m[c], magnitude_bits(row[c]));
        continue;
      }
      for (std::size_t c = 0; c < g.cols; ++c) {
        std::uint32_t& d = m[c / g.block_cols];
        d = std::max(d, magnitude_bits(row[c]));
      }
    }
    return;
  }
  if (g.block_cols == 16) {  // NVFP4's blocks: a row's whole blocks in one call
    const std::size_t whole = g.cols / 16;
    for (std::size_t r = r0; r < r1; ++r) {
      const T* row = x + r * g.cols;
      max_abs_bits_blocks16(std::span<const T>(row, 16 * whole), std::span<std::uint32_t>(m.data(), whole));
      if (whole * 16 < g.cols)
        m[whole] = std::max<std::uint32_t>(m[whole], max_abs_bits(std::span<const T>(row + 16 * whole, g.cols - 16 * whole)));
    }
    return;
  }
  for (std::size_t r = r0; r < r1; ++r) {
    const T* row = x + r * g.cols;
    for (std::size_t b = 0, c0 = 0; c0 < g.cols; ++b, c0 += g.block_cols) {
      const std::size_t c1 = std::min(g.cols, c0 + g.block_cols);
      m[b] = std::max<std::uint32_t>(m[b], max_abs_bits(std::span<const T>(row + c0, c1 - c0)));
    }
  }
}

template <class T>
void block_amax_of(const T* x, const Format& from, const BlockGrid& g, std::span<float> out, int threads) {
  const std::size_t gc = g.grid_cols();
  const std::size_t per_block_row = std::max<std::size_t>(1, g.block_rows * g.cols);
  parallel_chunks(
      g.grid_rows(), threads,
      [&](std::size_t b0, std::size_t b1) {
        std::vector<std::uint32_t> m(gc);
        std::vector<T> fold;
        for (std::size_t br = b0; br < b1; ++br) {
          std::fill(m.begin(), m.end(), 0u);
          stretch_max(x, g, br * g.block_rows, std::min(g.rows, (br + 1) * g.block_rows), m, fold);
          for (std::size_t b = 0; b < gc; ++b) {
            std::uint32_t bits = m[b];
            if (from == kBF16) bits <<= 16;
            if (from == kF16) bits = bits_of(decode_f32(bits, kF16));  // exact, Inf kept
            out[br * gc + b] = std::bit_cast<float>(bits);
          }
        }
      },
      ChunkGrain{1, (16384 + per_block_row - 1) / per_block_row});
}

// The bytes as T elements; copied only when they are not aligned for T (spans of bytes may
// start anywhere, e.g. in a memory-mapped file).
template <class T>
struct Aligned {
  std::vector<T> copy;
  const T* ptr;
  const T* data() const { return ptr; }
};
template <class T>
Aligned<T> aligned(std::span<const std::byte> in) {
  Aligned<T> a{{}, reinterpret_cast<const T*>(in.data())};
  if (reinterpret_cast<std::uintptr_t>(in.data()) % alignof(T) != 0) {
    a.copy.resize(in.size() / sizeof(T));
    std::memcpy(a.copy.data(), in.data(), in.size());
    a.ptr = a.copy.data();
  }
  return a;
}

}  // namespace

void block_amax(std::span<const std::byte> in, const Format& from, const BlockGrid& grid, std::span<float> out,
                int threads) {
  if (threads < 1) throw std::invalid_argument("amax: threads must be >= 1, got " + std::to_string(threads));
  if (!(from == kF32 || from == kBF16 || from == kF16))
    throw std::invalid_argument("amax: f32, bf16 or f16 input expected, not " + std::string(from.name));
  if (grid.block_rows == 0 || grid.block_cols == 0) throw std::invalid_argument("amax: block dimensions must be >= 1");
  if (in.size() != grid.rows * grid.cols * static_cast<std::size_t>(from.storage_bytes()))
    throw std::invalid_argument("amax: " + std::to_string(in.size()) + " bytes do not hold a " +
                                std::to_string(grid.rows) + " x " + std::to_string(grid.cols) + " " +
                                std::string(from.name) + " matrix");
  if (out.size() != grid.grid_size())
    throw std::invalid_argument("amax: output holds " + std::to_string(out.size()) + " values; the grid has " +
                                std::to_string(grid.grid_size()));
  if (from == kF32) {
    block_amax_of(aligned<float>(in).data(), from, grid, out, threads);
  } else {
    block_amax_of(aligned<std::uint16_t>(in).data(), from, grid, out, threads);
  }
}

float amax(std::span<const float> x, int threads) { return amax_of(x, threads); }
float amax_bf16(std::span<const std::uint16_t> x, int threads) { return amax_of(x, threads); }

}  // namespace fp8q
