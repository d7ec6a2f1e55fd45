// fp8q/quant/granularity.hpp: which elements share a scale.
//
// A tensor of shape [d0, ..., d(n-1)] is viewed as the row-major matrix [R, C], C = d(n-1),
// R = d0 * ... * d(n-2) (1-D: [1, d0]; 0-D: [1, 1]). A granularity cuts that matrix into
// blocks; edge blocks are partial (they hold what is left, nothing is padded), as
// DeepSeek-V3 and Transformer Engine do.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "fp8q/numerics/block_scaled.hpp"

namespace fp8q {

enum class GranularityKind : std::uint8_t {
  kTensor,  // one scale
  kRow,     // one per row (1 x C blocks): per output channel of a [out, in] weight
  kColumn,  // one per column (R x 1 blocks)
  kBlock,   // rows x cols blocks: 1x128 activations, 128x128 weights, any r x c
  kMx,      // E8M0 scale per block of 32 along one axis (MX): 1 x 32, or 32 x 1 (a GEMM's B, K x N)
  kNvfp4,   // NVFP4: an E4M3FN scale per block of 16 (1 x 16, 16 x 1, or 16 x 16 for weights) under
            // one fp32 tensor scale (docs/numerics.md section 5, "NVFP4")
};

inline constexpr std::size_t kMxBlockSize = 32;
inline constexpr std::size_t kNvfp4BlockSize = 16;

struct Granularity {
  GranularityKind kind = GranularityKind::kTensor;
  std::size_t block_rows = 0, block_cols = 0;  // kBlock; kMx: 1 x 32 or 32 x 1

  static Granularity tensor() { return {GranularityKind::kTensor, 0, 0}; }
  static Granularity row() { return {GranularityKind::kRow, 0, 0}; }
  static Granularity column() { return {GranularityKind::kColumn, 0, 0}; }
  static Granularity block(std::size_t rows, std::size_t cols) { return {GranularityKind::kBlock, rows, cols}; }
  static Granularity mx() { return {GranularityKind::kMx, 1, kMxBlockSize}; }
  static Granularity mx_column() { return {GranularityKind::kMx, kMxBlockSize, 1}; }
  static Granularity nvfp4() { return {GranularityKind::kNvfp4, 1, kNvfp4BlockSize}; }
  static Granularity nvfp4_column() { return {GranularityKind::kNvfp4, kNvfp4BlockSize, 1}; }
  static Granularity nvfp4_2d() { return {GranularityKind::kNvfp4, kNvfp4BlockSize, kNvfp4BlockSize}; }

  bool operator==(const Granularity&) const = default;
};

inline constexpr std::size_t kMxBlock = kMxBlockSize;

// The matrix view of a shape.
struct MatrixShape {
  std::size_t rows = 1, cols = 1;
};
// Throws std::invalid_argument when the element count overflows.
MatrixShape matrix_shape(std::span<const std::uint64_t> shape);

// The blocks of a granularity on a matrix (kMx: 1 x 32). A dimension of 0 gives an empty grid
// (a quantized tensor still stores one scale, 1, for kTensor).
BlockGrid block_grid(const Granularity& g, MatrixShape m);

// The one string form, used by the CLI, the torch ops and Python: tensor, row, col, mx (1 x 32),
// mx32x1, nvfp4 (1 x 16), nvfp4_16x1, nvfp4_16x16, block<R>x<C> (block1x128, block128x128, ...).
std::optional<Granularity> parse_granularity(std::string_view name);
std::string granularity_name(const Granularity& g);
// parse_granularity, or std::invalid_argument "<what>: unknown granularity '<name>' (...)".
Granularity granularity_named(std::string_view name, std::string_view what);

// The same blocks on the transposed matrix: row <-> col, block RxC -> CxR, mx 1x32 <-> 32x1,
// nvfp4 1x16 <-> 16x1.
Granularity transposed(const Granularity& g);

}  // namespace fp8q
