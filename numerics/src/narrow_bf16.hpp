// Internal: the bulk path fp32 -> bf16 under nearest-even, unscaled (bulk.cpp; docs/numerics.md
// section 4). Integer operations on the pattern: no FP environment enters.
#pragma once

#include <cstddef>

#include "fp8q/numerics/format.hpp"
#include "fp8q/numerics/policy.hpp"

namespace fp8q::detail {

// Whether the conversion from -> to under o takes f32_to_bf16_rne.
bool f32_to_bf16_path(const Format& from, const Format& to, const ConvertOptions& o);

// n fp32 patterns (little-endian) to bf16. bf16 is fp32's upper half with the same exponent
// range, so adding 0x7FFF plus the kept last bit rounds normals, subnormals and the overflow to
// Inf at once; a NaN becomes its sign and 0x7FC0; `saturate` turns +-Inf into +-0x7F7F.
void f32_to_bf16_rne(const std::byte* in, std::byte* out, std::size_t n, bool saturate);

}  // namespace fp8q::detail
