// fp8q/numerics/block_scaled.hpp: conversions of a matrix whose blocks carry their own scale.
//
// The matrix is row-major [rows, cols] (a tensor's 2-D view: cols = its last dimension).
// Element (r, c) has the global index r * cols + c: stochastic rounding is keyed by it and
// errors name it, so the bits and the messages are the same for any thread count.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "fp8q/numerics/bulk.hpp"
#include "fp8q/numerics/format.hpp"
#include "fp8q/numerics/policy.hpp"

namespace fp8q {

// Blocks of block_rows x block_cols; the last block of a row or column may be partial.
struct BlockGrid {
  std::size_t rows = 0, cols = 0;
  std::size_t block_rows = 1, block_cols = 1;

  // ceil(rows / block_rows) without rows + block_rows - 1, which wraps for a block near 2^64
  std::size_t grid_rows() const { return block_rows == 0 ? 0 : rows / block_rows + (rows % block_rows != 0); }
  std::size_t grid_cols() const { return block_cols == 0 ? 0 : cols / block_cols + (cols % block_cols != 0); }
  std::size_t grid_size() const { return grid_rows() * grid_cols(); }
  std::size_t scale_index(std::size_t r, std::size_t c) const { return (r / block_rows) * grid_cols() + c / block_cols; }
};

// Element (r, c) becomes convert(fp32(x * s)) (or fp32(x / s) with options.scale_op ==
// kDivide), s = scales[grid.scale_index(r, c)]: exactly convert_one() with options.scale = s.
// `to` is a format of at most 8 bits (one code per byte); options.scale must be unset.
// Throws std::invalid_argument on sizes, NanError naming the first element (in index order)
// whose NaN `to` cannot hold.
void convert_block_scaled(std::span<const std::byte> in, const Format& from, std::span<std::uint8_t> out,
                          const Format& to, const BlockGrid& grid, std::span<const float> scales,
                          const ConvertOptions& options = {}, const BulkOptions& bulk = {});

// A power-of-two scale rule in table form: the E8M0 code of a block as a function of its
// amax's fp32 bits a. With E = a >> 23 and f = a & 0x7FFFFF:
//   E == 255 (Inf or NaN): 0xFF;  E == 0 (zero or subnormal): 0x00;
//   otherwise base[E] + (f >= threshold[E] ? 1 : 0).
// Every monotone rule whose code changes at most once within a binade, and is 0 below
// 2^-126, has this form; quant builds the table from its rule and checks that it does.
struct Pow2ScaleTable {
  std::array<std::uint8_t, 256> base{};
  std::array<std::uint32_t, 256> threshold{};  // 2^23: never + 1

  std::uint8_t code(std::uint32_t amax_bits) const {
    const std::uint32_t e = (amax_bits >> 23) & 0xFF;
    if (e == 255) return 0xFF;
    if (e == 0) return 0x00;
    return static_cast<std::uint8_t>(base[e] + ((amax_bits & 0x7FFFFFu) >= threshold[e] ? 1 : 0));
  }
};

// MX: each row is cut into blocks of `block` elements (the last one may be shorter). A block's
// amax is its largest |x| (NaN if any element is NaN); its E8M0 code is table.code(amax) and is
// written to scales[r * ceil(cols / block) + b]. With code 0xFF every element of the block is
// `to`'s canonical NaN (0 where `to` has none); otherwise each element's code is the exact
// x * 2^(127 - code) rounded once, by `options` (options.scale must be unset). It is computed
// as convert(p) of p = fp32(x * 2^(127 - code)), which is exact unless |p| < 2^-126; a p that
// the product flushed to +/-0 from a nonzero x becomes +/-2^-149 (x's sign), so that the
// directed modes (up, down, odd) still see a nonzero value. Every value below 2^-126 lies under
// half of every element format's smallest subnormal, where each mode's result depends only on
// the sign and on zero / nonzero (stochastic rounding's fraction word is 0 either way): so
// this is the exact result in every mode.
void convert_mx(std::span<const std::byte> in, const Format& from, std::size_t rows, std::size_t cols,
                std::size_t block, std::span<std::uint8_t> out, std::span<std::uint8_t> scales,
                const Format& to, const Pow2ScaleTable& table, const ConvertOptions& options = {},
                const BulkOptions& bulk = {});

}  // namespace fp8q
