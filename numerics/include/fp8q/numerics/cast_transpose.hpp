// fp8q/numerics/cast_transpose.hpp: the fused cast + transpose a backward pass needs.
//
// One pass over a row-major [rows, cols] matrix (fp32, bf16 or fp16) converted with one
// per-tensor ConvertOptions (scale included, as current and delayed scaling use it) writes
//   q  = the codes, row-major [rows, cols]              (element (r, c) has index r * cols + c)
//   qt = the same codes transposed, row-major [cols, rows]
// and returns amax = the largest |x| of the input (NaN if any element is NaN), as fp32. The
// result is identical to convert() + a transpose + amax() done separately: the codes are
// computed once, by the same kernels, keyed by the element's index in the input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "fp8q/numerics/bulk.hpp"
#include "fp8q/numerics/format.hpp"
#include "fp8q/numerics/policy.hpp"

namespace fp8q {

// `to` is a format of at most 8 bits. Throws std::invalid_argument on sizes, NanError naming
// the first element (in index order) whose NaN `to` cannot hold.
float cast_transpose(std::span<const std::byte> in, const Format& from, std::size_t rows, std::size_t cols,
                     std::span<std::uint8_t> q, std::span<std::uint8_t> qt, const Format& to,
                     const ConvertOptions& options = {}, const BulkOptions& bulk = {});

}  // namespace fp8q
