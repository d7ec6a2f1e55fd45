// fp8q/numerics/max_abs.hpp: the largest |x| of an array, as its bit pattern: what per-tensor
// and per-block amaxes, and the fused cast + transpose, are built on.
//
// For fp32, bf16 and fp16 the sign-cleared pattern orders magnitudes as the values do, and NaN
// patterns sort above Inf, so the largest sign-cleared pattern is the pattern of the largest
// |x|, a NaN whenever the array holds one (the largest NaN pattern, like any NaN). Max is
// exact and associative: every path (SSE2, AVX2) and every split gives the same bits, and no
// FP environment plays a part. An empty array gives 0 (+0).
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "fp8q/numerics/isa.hpp"

namespace fp8q {

// max over i of (pattern of x[i]) & 0x7FFFFFFF.
std::uint32_t max_abs_bits(std::span<const float> x, std::optional<Isa> isa = {});
// bf16 or fp16 patterns: max over i of x[i] & 0x7FFF.
std::uint16_t max_abs_bits(std::span<const std::uint16_t> x, std::optional<Isa> isa = {});

// Blocks of 16 consecutive elements (NVFP4's): m[b] = max(m[b], max_abs_bits(x[16b, 16b + 16)))
// for every b < m.size(); x.size() must be 16 * m.size() (else std::invalid_argument).
void max_abs_bits_blocks16(std::span<const float> x, std::span<std::uint32_t> m, std::optional<Isa> isa = {});
void max_abs_bits_blocks16(std::span<const std::uint16_t> x, std::span<std::uint32_t> m,
                           std::optional<Isa> isa = {});

// Elementwise, for i < x.size() == acc.size() (else std::invalid_argument): acc[i] becomes
// whichever of acc[i] and |x[i]| has the larger pattern (sign-cleared: & 0x7FFFFFFF, or
// & 0x7FFF for bf16 / fp16 patterns; patterns are compared and copied, NaNs included, never
// computed with). Rows of a block folded this way, then max_abs_bits over the block's columns
// of acc, give the block's largest |x| pattern with one reduction per block, not per row.
void max_abs_accumulate(std::span<const float> x, std::span<float> acc, std::optional<Isa> isa = {});
void max_abs_accumulate(std::span<const std::uint16_t> x, std::span<std::uint16_t> acc,
                        std::optional<Isa> isa = {});

}  // namespace fp8q
