// Internal: the narrowing kernels' interface, shared by the dispatcher and each ISA's
// translation unit. Not installed.
#pragma once

#include <cstddef>
#include <array>
#include <cstdint>

#include "fp8q/numerics/block_scaled.hpp"
#include "fp8q/numerics/format.hpp"
#include "fp8q/numerics/policy.hpp"

namespace fp8q::detail {

enum class Source : unsigned char { kF32, kBF16, kF16 };

// Everything a narrowing kernel needs, derived once per call from (target, options).
// Codes are magnitudes unless said otherwise; the sign is or-ed in at the end.
struct NarrowParams {
  const Format* from = nullptr;
  const Format* to = nullptr;
  const ConvertOptions* options = nullptr;
  float scale = 1.0f;             // fp32(x * 1) == x exactly, so "no scale" is scale 1
  bool divide = false;            // fp32(x / scale) instead of fp32(x * scale)
  std::int32_t man_bits = 0;      // m
  std::int32_t emin = 0;          // exponent of the smallest normal
  std::int32_t max_code = 0;      // largest finite magnitude code
  std::int32_t max_bits = 0;      // the fp32 bit pattern of its value (exact in fp32)
  std::int32_t nan_code = 0;      // magnitude of the canonical NaN (0x80 for fnuz; 0 if none)
  std::int32_t inf_or_nan = 0;    // magnitude an IEEE overflow produces (Inf, else NaN)
  std::int32_t sign_shift = 0;    // sign bit = (fp32 sign) << sign_shift
  bool inf_result = false;        // Overflow::kInfOrNan and the format has Inf or NaN
  bool negative_zero = false;     // the format has -0 (fnuz does not)
  bool has_nan = false;
};

// The narrowing kernels prefetch their input this many bytes ahead of the element they
// convert, one line per 64 bytes read: the hardware prefetcher alone keeps too few lines in
// flight for a loop this dense (~20 vector operations per 64 bytes of fp32). A prefetch never
// faults, so running past the end of the input is harmless. Outputs are written with ordinary
// stores at every size: with this prefetch they beat non-temporal ones (docs/performance.md).
inline constexpr std::size_t kPrefetchBytes = 4096;

// Whether the SIMD narrowing kernels handle this pair (the dispatcher asks first).
bool narrow_supported(const Format& from, const Format& to);
NarrowParams make_narrow_params(const Format& from, const Format& to, const ConvertOptions& o);

// Converts n elements of the source into one-byte codes; in[0] has global index index0.
// Returns true when a NaN met a target without NaN (those elements become +/-0).
using NarrowFn = bool (*)(const void* in, std::uint8_t* out, std::size_t n, std::uint64_t index0,
                          const NarrowParams& p);

// MX: what the block kernel needs beside NarrowParams.
struct MxParams {
  const Pow2ScaleTable* table = nullptr;
  std::array<float, 256> multiplier{};  // 2^(127 - code) for codes 0..254; 1 for 0xFF
  std::uint8_t nan_fill = 0;            // the element of a block whose scale is NaN
  // table->code(a << 16) for a bf16 |x| pattern a, branch-free: with e = a >> 7 and
  // f = a & 0x7F, bf16_base[e] + (f >= bf16_step[e] ? 1 : 0) (e = 0 gives 0, e = 255 gives 0xFF).
  std::array<std::uint8_t, 256> bf16_base{};
  std::array<std::uint8_t, 256> bf16_step{};
  // Where the rule is affine, for e in [affine_lo, affine_hi]: code = e + affine_c + (f >=
  // affine_step ? 1 : 0) (every rule is, over the binades around 1; the kernel computes eight
  // blocks' codes at once there).
  std::int16_t affine_lo = 1, affine_hi = 0, affine_c = 0, affine_step = 128;
};

// Fills m.bf16_base / m.bf16_step and the affine range from m.table.
void fill_bf16_codes(MxParams& m);

// MX blocks of 32 along a row: converts the longest prefix of n elements that is a whole
// number of the kernel's groups (4 vectors; 32 or 64 elements), writing one scale code per 32
// elements, and returns its length; the caller finishes the rest. in[0] has index index0.
using MxFn = std::size_t (*)(const void* in, std::uint8_t* out, std::uint8_t* scales, std::size_t n,
                             std::uint64_t index0, const NarrowParams& p, const MxParams& m);

// One table per ISA (call only where the ISA is supported); nullptr for a (source, rounding)
// it has no kernel for, and where the ISA is not compiled for this target.
NarrowFn narrow_kernel_generic(Source s, Rounding r);
#if defined(FP8Q_HAVE_AVX2)
NarrowFn narrow_kernel_avx2(Source s, Rounding r);
MxFn mx_kernel_avx2(Source s, Rounding r);
#else
inline NarrowFn narrow_kernel_avx2(Source, Rounding) { return nullptr; }
inline MxFn mx_kernel_avx2(Source, Rounding) { return nullptr; }
#endif
#if defined(FP8Q_HAVE_AVX512)
NarrowFn narrow_kernel_avx512(Source s, Rounding r);
MxFn mx_kernel_avx512(Source s, Rounding r);
#else
inline NarrowFn narrow_kernel_avx512(Source, Rounding) { return nullptr; }
inline MxFn mx_kernel_avx512(Source, Rounding) { return nullptr; }
#endif
#if defined(FP8Q_HAVE_NEON)
NarrowFn narrow_kernel_neon(Source s, Rounding r);
MxFn mx_kernel_neon(Source s, Rounding r);
#else
inline NarrowFn narrow_kernel_neon(Source, Rounding) { return nullptr; }
inline MxFn mx_kernel_neon(Source, Rounding) { return nullptr; }
#endif

}  // namespace fp8q::detail
