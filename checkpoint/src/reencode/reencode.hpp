// Internal: one quantized weight converted into another layout (docs/checkpoints.md,
// "Quantized inputs"). Its values are decoded exactly (code x scale in fp64, exact for every
// 8-bit or smaller code and fp32 scale); the target layout then holds them either without
// rounding or with the fewest roundings: re-encoded (under the input's own scales) or
// requantized (the target's quantizer on the exact values); each code is one rounding of an
// exact value, and the report counts the values that changed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "fp8q/checkpoint/layout.hpp"
#include "fp8q/checkpoint/pipeline.hpp"
#include "fp8q/numerics/isa.hpp"

namespace fp8q::checkpoint::reencode {

// value[r * cols + c] = decode(code) * scale(r, c), exactly (NaN for a NaN code or scale).
std::vector<double> exact_values(const DequantView& v);

// Each value rounded to fp32 by round-to-odd: a later nearest-even rounding to a format of at
// most 22 significant bits (every FP8 and FP4 element) gives the same result as rounding the
// exact value, and every value keeps its binade. `rounded` counts the values fp32 could not hold.
std::vector<float> round_to_odd_f32(const std::vector<double>& values, std::uint64_t& rounded);

// A view's exact values as fp32 by round-to-odd (round_to_odd_f32 without the fp64 copy), rows
// over `threads`; `rounded` counts the values fp32 cannot hold.
std::vector<float> fp32_values(const DequantView& v, int threads, std::uint64_t& rounded,
                               std::optional<Isa> isa = std::nullopt);

// The weight in the target's structure under the scales the input's values imply: per block
// the smallest scale of its family that holds the block's largest value (a power of two for MX;
// otherwise the source scale of that value times a power of two), each code the nearest-even
// rounding of value / scale. Where the input's scales fit the target this holds every value
// exactly; FP8 e4m3fn into trn2's e4m3 halves each code (exact but for odd subnormals).
// `structure` is the target's view of the same weight (element format, grid or MX groups); its
// scales are kept for all-zero blocks. nullopt when a block's quotients are not exact in fp64
// (values of different source scales) or a scale does not fit.
// Rows are split over `threads`; the result does not depend on it.
struct Encoding {
  DequantView view;
  std::uint64_t changed = 0;  // values that differ from the input's
  double max_change = 0;
};
std::optional<Encoding> source_scaled_encoding(const DequantView& source, const DequantView& structure, int threads = 1,
                                               std::optional<Isa> isa = std::nullopt);

struct Reencoded {
  QuantizedWeight q;
  std::vector<float> values;  // the input as quantized (fp32, round-to-odd where inexact)
  Conversion report;
};

// `source` into layout `target` for weight w (w.dtype F32, w.data unset: set here to `values`),
// with options.threads (the bits do not depend on it).
// Takes source_scaled_encoding where it keeps every value, else whichever of it and the layout's
// own quantization changes fewer values (the latter on a tie).
Reencoded reencode(const DequantView& source, const Layout& target, WeightRef w, const LayoutOptions& options);

// A quantized weight written in high precision (docs/checkpoints.md, "Dequantized outputs"):
// each exact value rounded once to `dtype` (BF16, F16 or F32) under nearest-even, overflow to
// Inf; rows over `threads`, the bytes independent of it and of the caller's FP environment.
// report.changed / max_change count the values the dtype cannot hold. first_nonfinite: the
// index of the first NaN or Inf value written, if any.
struct Dequantized {
  std::vector<std::byte> bytes;
  Conversion report;
  std::optional<std::uint64_t> first_nonfinite;
};
Dequantized dequantize(const DequantView& source, DType dtype, int threads, std::optional<Isa> isa = std::nullopt);

// Elements of `width` bytes, [experts, rows, cols] -> [experts, cols, rows]: a stack of expert
// weights [E, N, K] in the [E, K, N] order of gpt-oss's parameters.
std::vector<std::byte> transpose_experts(const std::vector<std::byte>& in, std::size_t experts, std::size_t rows,
                                         std::size_t cols, std::size_t width);

}  // namespace fp8q::checkpoint::reencode
