// Internal: the bulk paths fp32 -> bf16 and fp32 -> fp16 under nearest-even, unscaled (bulk.cpp;
// docs/numerics.md section 4). Integer operations on the pattern: no FP environment enters.
#pragma once

#include <cstddef>

#include "fp8q/numerics/format.hpp"
#include "fp8q/numerics/policy.hpp"

namespace fp8q::detail {

// Whether the conversion from -> to under o takes f32_to_bf16_rne / f32_to_f16_rne.
bool f32_to_bf16_path(const Format& from, const Format& to, const ConvertOptions& o);
bool f32_to_f16_path(const Format& from, const Format& to, const ConvertOptions& o);

// n fp32 patterns (little-endian) to bf16. bf16 is fp32's upper half with the same exponent
// range, so adding 0x7FFF plus the kept last bit rounds normals, subnormals and the overflow to
// Inf at once; a NaN becomes its sign and 0x7FC0; `saturate` turns +-Inf into +-0x7F7F.
void f32_to_bf16_rne(const std::byte* in, std::byte* out, std::size_t n, bool saturate);

// n fp32 patterns to fp16: fp16's normals are the pattern rebiased (exponent - 112) and rounded
// at bit 13 as above; below 2^-14, the significand with its hidden bit times 2^(e - 126) rounded
// to an integer (its subnormal code, 0x400 where it rounds up to 2^-14); from 65520 up (the tie
// above 65504 goes to even, Inf) Inf, or +-0x7BFF under `saturate`; a NaN becomes its sign and 0x7E00.
void f32_to_f16_rne(const std::byte* in, std::byte* out, std::size_t n, bool saturate);

// The same conversions in vector instructions (isa/narrow_f32_16_avx2.cpp), where the ISA has them.
using F32ToHalfFn = void (*)(const std::byte* in, std::byte* out, std::size_t n, bool saturate);
#if defined(FP8Q_HAVE_AVX2)
F32ToHalfFn f32_to_bf16_rne_avx2();  // call only where Isa::kAvx2 is supported
F32ToHalfFn f32_to_f16_rne_avx2();
#else
inline F32ToHalfFn f32_to_bf16_rne_avx2() { return nullptr; }  // not compiled for this target
inline F32ToHalfFn f32_to_f16_rne_avx2() { return nullptr; }
#endif

}  // namespace fp8q::detail
