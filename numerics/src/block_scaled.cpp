// Block-scaled and MX conversions: per block, the scale, then the same kernels as bulk.cpp.
#include "fp8q/numerics/block_scaled.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "fp8q/numerics/arith.hpp"
#include "fp8q/numerics/convert.hpp"
#include "dispatch.hpp"

namespace fp8q {
namespace {

using detail::load_code;
using detail::parallel_pinned;
using detail::row_grain;

constexpr std::size_t kNarrowBlock = 16, kTile = 64;  // block width below which tiles transpose
constexpr std::size_t kPrescaleBlock = 64;             // block width below which rows are scaled first

// An h x w tile of ib-byte elements (row stride `stride` elements) into dst, column-major.
template <class E>
void transpose_as(const std::byte* src, std::size_t stride, std::size_t h, std::size_t w, std::byte* dst) {
  for (std::size_t r = 0; r < h; ++r)
    for (std::size_t c = 0; c < w; ++c) {
      E e;
      std::memcpy(&e, src + (r * stride + c) * sizeof(E), sizeof(E));
      std::memcpy(dst + (c * h + r) * sizeof(E), &e, sizeof(E));
    }
}
void transpose_in(const std::byte* src, std::size_t stride, std::size_t h, std::size_t w, std::size_t ib,
                  std::byte* dst) {
  if (ib == 2) return transpose_as<std::uint16_t>(src, stride, h, w, dst);
  if (ib == 4) return transpose_as<std::uint32_t>(src, stride, h, w, dst);
  for (std::size_t r = 0; r < h; ++r)
    for (std::size_t c = 0; c < w; ++c) std::memcpy(dst + (c * h + r) * ib, src + (r * stride + c) * ib, ib);
}

[[noreturn]] void throw_nan(std::size_t index, const Format& to) {
  throw NanError(index, "element " + std::to_string(index) + ": NaN has no encoding in " + std::string(to.name) +
                            " (NaN policy: error)");
}

void check_common(std::span<const std::byte> in, const Format& from, std::size_t n, std::span<std::uint8_t> out,
                  const Format& to, const ConvertOptions& o, const BulkOptions& bulk) {
  if (in.size() != n * static_cast<std::size_t>(from.storage_bytes()))
    throw std::invalid_argument("input holds " + std::to_string(in.size()) + " bytes; " + std::to_string(n) + " " +
                                std::string(from.name) + " elements need " +
                                std::to_string(n * static_cast<std::size_t>(from.storage_bytes())));
  if (out.size() != n)
    throw std::invalid_argument("output holds " + std::to_string(out.size()) + " codes; the matrix has " +
                                std::to_string(n) + " elements");
  if (to.bits() > 8) throw std::invalid_argument("target " + std::string(to.name) + " is wider than one byte");
  if (o.scale) throw std::invalid_argument("options.scale must be unset: the scales come per block");
  if (bulk.threads < 1) throw std::invalid_argument("threads must be >= 1, got " + std::to_string(bulk.threads));
}

Isa chosen_isa(const BulkOptions& bulk) { return resolve_isa(bulk.isa, "BulkOptions::isa"); }

// fp32 bit pattern of a source element (exact: fp32, bf16 and fp16 values are all fp32 values).
std::uint32_t f32_bits(const std::byte* p, const Format& from) {
  if (from == kF32) return static_cast<std::uint32_t>(load_code(p, 4));
  if (from == kBF16) return static_cast<std::uint32_t>(load_code(p, 2)) << 16;
  return bits_of(decode_f32(load_code(p, 2), kF16));
}

// p = fp32(x * 2^(127 - code)) (x the element's fp32 pattern), with a product flushed to
// +/-0 from a nonzero x kept nonzero as +/-2^-149 (see convert_mx in block_scaled.hpp).
std::uint32_t mx_product(std::uint32_t x, std::uint8_t code) {
  const std::uint32_t p = bits_of(ldexp_rne(float_of(x), 127 - code));
  if ((p & 0x7FFFFFFFu) == 0 && (x & 0x7FFFFFFFu) != 0) return (x & 0x80000000u) | 1u;
  return p;
}

// A row of fp32, bf16 or fp16 elements as fp32 values (exact).
void widen_row(const std::byte* src, const Format& from, std::size_t n, float* dst) {
  if (from == kF32) {
    std::memcpy(dst, src, n * 4);
  } else if (from == kBF16) {
    std::size_t c = 0;
#if defined(__SSE2__)
    for (; c + 8 <= n; c += 8) {  // each pattern into the high half of a zeroed fp32 lane
      const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * c));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + c), _mm_unpacklo_epi16(_mm_setzero_si128(), h));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + c + 4), _mm_unpackhi_epi16(_mm_setzero_si128(), h));
    }
#endif
    for (; c < n; ++c) {
      std::uint16_t h;
      std::memcpy(&h, src + 2 * c, 2);
      dst[c] = std::bit_cast<float>(static_cast<std::uint32_t>(h) << 16);
    }
  } else {
    for (std::size_t c = 0; c < n; ++c) dst[c] = float_of(f32_bits(src + 2 * c, from));
  }
}

// x[c] = fp32(x[c] * s) or fp32(x[c] / s), c < n: SSE2's mulps and divps round as the scalar
// operations do, under the same environment.
void scale_stretch(float* x, std::size_t n, float s, bool divide) {
  std::size_t c = 0;
#if defined(__SSE2__)
  const __m128 vs = _mm_set1_ps(s);
  if (divide)
    for (; c + 4 <= n; c += 4) _mm_storeu_ps(x + c, _mm_div_ps(_mm_loadu_ps(x + c), vs));
  else
    for (; c + 4 <= n; c += 4) _mm_storeu_ps(x + c, _mm_mul_ps(_mm_loadu_ps(x + c), vs));
#endif
  for (; c < n; ++c) x[c] = divide ? x[c] / s : x[c] * s;
}

}  // namespace

void convert_block_scaled(std::span<const std::byte> in, const Format& from, std::span<std::uint8_t> out,
                          const Format& to, const BlockGrid& grid, std::span<const float> scales,
                          const ConvertOptions& options, const BulkOptions& bulk) {
  if (grid.block_rows == 0 || grid.block_cols == 0) throw std::invalid_argument("block dimensions must be >= 1");
  const auto ib = static_cast<std::size_t>(from.storage_bytes());
  check_common(in, from, detail::matrix_elements(grid.rows, grid.cols, ib, "convert_block_scaled"), out, to, options,
               bulk);
  if (scales.size() != grid.grid_size())
    throw std::invalid_argument(std::to_string(scales.size()) + " scales given; a " + std::to_string(grid.rows) +
                                " x " + std::to_string(grid.cols) + " matrix in blocks of " +
                                std::to_string(grid.block_rows) + " x " + std::to_string(grid.block_cols) +
                                " needs " + std::to_string(grid.grid_size()));
  const Isa isa = chosen_isa(bulk);
  const bool simd = detail::narrow_supported(from, to);
  const detail::NarrowFn fn = simd ? detail::narrow_kernel(isa, detail::source_of(from), options.rounding) : nullptr;
  const std::size_t cols = grid.cols, gc = grid.grid_cols();

  // One block's stretch of one row, [c0, c1): the kernel with this block's scale, or the
  // scalar reference; the first unrepresentable NaN is found by the reference, in order.
  // o and params are the calling thread's, made once per chunk (params.options points to o);
  // only the scale changes from block to block.
  auto run = [&](ConvertOptions& o, detail::NarrowParams& params, std::size_t r, std::size_t c0, std::size_t c1,
                 float s) {
    o.scale = s;
    params.scale = s;
    const std::size_t i0 = r * cols + c0;
    bool nan = false;
    if (fn != nullptr) {
      nan = fn(in.data() + i0 * ib, out.data() + i0, c1 - c0, i0, params) && o.nan == NanPolicy::kError;
    } else {
      for (std::size_t i = i0; i < i0 + (c1 - c0); ++i) {
        const std::uint64_t code = load_code(in.data() + i * ib, ib);
        if (from.bits() < 8 && code >> from.bits() != 0) detail::throw_invalid_code(i, code, from);  // fp6 / fp4
        const Converted c = convert_one(code, from, to, o, i);
        out[i] = static_cast<std::uint8_t>(c.code);
        nan = nan || (c.nan_unrepresentable && o.nan == NanPolicy::kError);
      }
    }
    if (!nan) return;
    for (std::size_t i = i0; i < i0 + (c1 - c0); ++i)
      if (convert_one(load_code(in.data() + i * ib, ib), from, to, o, i).nan_unrepresentable)
        throw_nan(i, to);
  };
  // Blocks a few columns wide (per column, 128 x 1) would hand the kernel a few elements per
  // call: such a grid goes through transposed tiles, a tile column's stretch (one block's) in
  // one call. Stochastic rounding draws by element position, so it keeps the rows.
  if (fn != nullptr && grid.block_cols < kNarrowBlock && options.rounding != Rounding::kStochastic) {
    parallel_pinned(
        grid.rows, bulk.threads,
        [&](std::size_t r0, std::size_t r1) {
          ConvertOptions o = options;
          detail::NarrowParams params = detail::make_narrow_params(from, to, o);
          std::vector<std::byte> tin(kTile * kTile * ib);
          std::vector<std::uint8_t> tout(kTile * kTile);
          for (std::size_t b0 = r0; b0 < r1;) {
            // a band of at most kTile rows inside one block row
            const std::size_t b1 = std::min({r1, b0 + kTile, (b0 / grid.block_rows + 1) * grid.block_rows});
            const std::size_t h = b1 - b0;
            const float* row_scales = scales.data() + (b0 / grid.block_rows) * gc;
            bool nan = false;
            for (std::size_t c0 = 0; c0 < cols; c0 += kTile) {
              const std::size_t w = std::min(kTile, cols - c0);
              transpose_in(in.data() + (b0 * cols + c0) * ib, cols, h, w, ib, tin.data());
              for (std::size_t c = 0; c < w; ++c) {
                o.scale = params.scale = row_scales[(c0 + c) / grid.block_cols];
                nan = fn(&tin[c * h * ib], &tout[c * h], h, b0 * cols + c0 + c, params) || nan;
              }
              for (std::size_t r = 0; r < h; ++r)
                for (std::size_t c = 0; c < w; ++c) out[(b0 + r) * cols + c0 + c] = tout[c * h + r];
            }
            // the band again in row order, where the reference names the first unrepresentable NaN
            if (nan && o.nan == NanPolicy::kError)
              for (std::size_t r = b0; r < b1; ++r)
                for (std::size_t g = 0; g < gc; ++g)
                  run(o, params, r, g * grid.block_cols, std::min(cols, (g + 1) * grid.block_cols), row_scales[g]);
            b0 = b1;
          }
        },
        row_grain(cols));
    return;
  }
  // Blocks narrower than kPrescaleBlock hand the kernel a few elements per call, each paying
  // the kernel's scalar tail: such a row is scaled first, fp32(x * s) or fp32(x / s) per
  // element (the definition's rounded product or quotient, in the default FP environment that
  // parallel_pinned sets), and converted in one call by the unscaled fp32 kernel: the same
  // bits, the same stochastic-rounding keys (the element's index).
  const detail::NarrowFn fn32 = fn != nullptr && grid.block_cols < kPrescaleBlock && detail::narrow_supported(kF32, to)
                                    ? detail::narrow_kernel(isa, detail::source_of(kF32), options.rounding)
                                    : nullptr;
  if (fn32 != nullptr) {
    parallel_pinned(
        grid.rows, bulk.threads,
        [&](std::size_t r0, std::size_t r1) {
          ConvertOptions o = options, o32 = options;
          detail::NarrowParams params = detail::make_narrow_params(from, to, o);
          const detail::NarrowParams params32 = detail::make_narrow_params(kF32, to, o32);
          std::vector<float> row(cols);
          const bool divide = options.scale_op == ScaleOp::kDivide;
          for (std::size_t r = r0; r < r1; ++r) {
            const float* row_scales = scales.data() + (r / grid.block_rows) * gc;
            const std::byte* src = in.data() + r * cols * ib;
            widen_row(src, from, cols, row.data());
            for (std::size_t g = 0; g < gc; ++g) {
              const std::size_t c0 = g * grid.block_cols;
              scale_stretch(row.data() + c0, std::min(cols, c0 + grid.block_cols) - c0, row_scales[g], divide);
            }
            if (fn32(row.data(), out.data() + r * cols, cols, r * cols, params32) && o.nan == NanPolicy::kError)
              for (std::size_t g = 0; g < gc; ++g)  // the reference names the first unrepresentable NaN
                run(o, params, r, g * grid.block_cols, std::min(cols, (g + 1) * grid.block_cols), row_scales[g]);
          }
        },
        row_grain(cols));
    return;
  }
  parallel_pinned(
      grid.rows, bulk.threads,
      [&](std::size_t r0, std::size_t r1) {
        ConvertOptions o = options;
        detail::NarrowParams params = detail::make_narrow_params(from, to, o);
        for (std::size_t r = r0; r < r1; ++r) {
          const float* row_scales = scales.data() + (r / grid.block_rows) * gc;
          for (std::size_t g = 0; g < gc; ++g) {
            const std::size_t c0 = g * grid.block_cols, c1 = std::min(cols, c0 + grid.block_cols);
            run(o, params, r, c0, c1, row_scales[g]);
          }
        }
      },
      row_grain(cols));
}

void convert_mx(std::span<const std::byte> in, const Format& from, std::size_t rows, std::size_t cols,
                std::size_t block, std::span<std::uint8_t> out, std::span<std::uint8_t> scales, const Format& to,
                const Pow2ScaleTable& table, const ConvertOptions& options, const BulkOptions& bulk) {
  if (block == 0) throw std::invalid_argument("MX block size must be >= 1");
  if (!(from == kF32 || from == kBF16 || from == kF16))
    throw std::invalid_argument("MX quantization takes f32, bf16 or f16 input, not " + std::string(from.name));
  if (!to.is_signed || !to.has_zero())
    throw std::invalid_argument("MX element format must be signed with a zero, not " + std::string(to.name));
  check_common(in, from,
               detail::matrix_elements(rows, cols, static_cast<std::size_t>(from.storage_bytes()), "convert_mx"), out,
               to, options, bulk);
  const std::size_t per_row = (cols + block - 1) / block;
  if (scales.size() != rows * per_row)
    throw std::invalid_argument("scale output holds " + std::to_string(scales.size()) + " codes; " +
                                std::to_string(rows) + " rows of " + std::to_string(cols) + " in blocks of " +
                                std::to_string(block) + " need " + std::to_string(rows * per_row));
  for (std::size_t e = 1; e < 255; ++e)  // code() adds 1 to base[e] past the threshold
    if (table.base[e] == 0xFF && table.threshold[e] < (1u << 23))
      throw std::invalid_argument("MX scale table: binade " + std::to_string(e) +
                                  " steps from code 255 past the 8-bit range");
  const Isa isa = chosen_isa(bulk);
  detail::MxParams m;
  m.table = &table;
  // 2^(127 - c): fp32 exponent field 254 - c for c <= 253; 2^-127 (c = 254) is subnormal
  for (std::uint32_t c = 0; c < 254; ++c) m.multiplier[c] = std::bit_cast<float>((254 - c) << 23);
  m.multiplier[254] = std::bit_cast<float>(0x00400000u);
  m.multiplier[255] = 1.0f;  // a NaN scale: its block is overwritten
  m.nan_fill = static_cast<std::uint8_t>(to.has_nan() ? to.canonical_nan() : 0);
  detail::fill_bf16_codes(m);
  const detail::MxFn fn = block == 32 ? detail::mx_kernel(isa, detail::source_of(from), options.rounding) : nullptr;
  const detail::NarrowParams params = detail::make_narrow_params(from, to, options);
  const auto ib = static_cast<std::size_t>(from.storage_bytes());

  // The reference for one block [i0, i1) of global indices.
  auto scalar_block = [&](std::size_t i0, std::size_t i1, std::uint8_t& scale_code) {
    std::uint32_t amax = 0;  // as bits: NaN patterns sort above Inf
    for (std::size_t i = i0; i < i1; ++i) amax = std::max(amax, f32_bits(in.data() + i * ib, from) & 0x7FFFFFFFu);
    const std::uint8_t code = table.code(amax);
    scale_code = code;
    if (code == 0xFF) {
      std::memset(out.data() + i0, m.nan_fill, i1 - i0);
      return;
    }
    for (std::size_t i = i0; i < i1; ++i)
      out[i] = static_cast<std::uint8_t>(
          convert_one(mx_product(f32_bits(in.data() + i * ib, from), code), kF32, to, options, i).code);
  };
  parallel_pinned(
      rows, bulk.threads,
      [&](std::size_t r0, std::size_t r1) {
        if (fn != nullptr && cols % 32 == 0) {
          // rows of whole blocks: the chunk is one run of blocks (codes and scales are
          // contiguous too), converted by one kernel call instead of one per row
          const std::size_t i0 = r0 * cols, n = (r1 - r0) * cols;
          const std::size_t done = fn(in.data() + i0 * ib, out.data() + i0, scales.data() + r0 * per_row, n, i0, params, m);
          for (std::size_t i = done; i < n; i += block)  // AVX-512 works in groups of 64: an odd last block
            scalar_block(i0 + i, i0 + i + block, scales[r0 * per_row + i / block]);
          return;
        }
        for (std::size_t r = r0; r < r1; ++r) {
          const std::size_t i0 = r * cols;
          std::uint8_t* row_scales = scales.data() + r * per_row;
          const std::size_t done =
              fn != nullptr ? fn(in.data() + i0 * ib, out.data() + i0, row_scales, cols, i0, params, m) : 0;
          for (std::size_t c0 = done; c0 < cols; c0 += block)
            scalar_block(i0 + c0, i0 + std::min(cols, c0 + block), row_scales[c0 / block]);
        }
      },
      row_grain(cols));
}

}  // namespace fp8q
