// fp8q/numerics/bulk.hpp: conversions over arrays, fast and bit-identical to the scalar path.
//
// Paths (chosen per call, all equal to convert_one() bit for bit, for every input):
//  - fp32 / bf16 / fp16 -> any narrow format except e8m0, any rounding: SIMD kernels
//    (AVX-512, AVX2) on the fp32 bit pattern (bf16 and fp16 are widened to fp32 exactly
//    first); nearest-even lets one fp32 addition do the rounding, the other modes decide
//    on integer lanes (numerics/src/isa/narrow_kernel.hpp).
//  - narrow source (<= 8 bits) -> anything, every rounding but stochastic: a 256-entry table
//    filled by the scalar reference for this call's options (scale included).
//  - fp32 -> bf16 and fp32 -> fp16, nearest-even, unscaled: integer rounding of the pattern
//    (numerics/src/narrow_f32_16.hpp).
//  - everything else: the scalar reference, element by element.
// The calling thread's MXCSR (rounding mode, FTZ, DAZ) is saved, set to the IEEE default
// for the duration of the call in every worker, and restored: results never depend on it.
// Work is split into contiguous chunks, one per thread; stochastic rounding is keyed by the
// global element index, so the bits are the same for any thread count.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>

#include "fp8q/numerics/format.hpp"
#include "fp8q/numerics/isa.hpp"
#include "fp8q/numerics/policy.hpp"

namespace fp8q {

struct BulkOptions {
  int threads = 1;             // >= 1
  std::optional<Isa> isa;      // force a path (must be supported); default active_isa()
};

// A NaN met a format without NaN under NanPolicy::kError.
class NanError : public std::domain_error {
 public:
  NanError(std::size_t index, const std::string& what) : std::domain_error(what), index_(index) {}
  std::size_t index() const { return index_; }

 private:
  std::size_t index_;
};

// Converts `in` (elements of `from`, little-endian, `from.storage_bytes()` each) into `out`
// (elements of `to`). Throws std::invalid_argument when the sizes disagree or do not
// divide, NanError as above (out is then unspecified).
void convert(std::span<const std::byte> in, const Format& from, std::span<std::byte> out,
             const Format& to, const ConvertOptions& options = {}, const BulkOptions& bulk = {});

// convert() from fp32, bf16 or fp16 that also returns amax = the largest |x| of `in`, as fp32
// (exact; NaN if any element is NaN; +0 for an empty input), from the same read of the input:
// each piece of kAmaxPiece elements is converted, then its amax taken while it is still in L1.
// This is the cast a delayed-scaling step runs: the codes by the scale from the history, and
// the amax DelayedScaling::update() records, in one pass instead of amax() + convert(). The
// codes equal convert()'s and the amax equals max_abs_bits() of `in`, for any thread count and
// path. Targets the SIMD kernels do not take (wider than 8 bits, e8m0) are converted by
// convert() and their amax read in a second pass. Throws as convert() does, and
// std::invalid_argument for any other source.
float convert_with_amax(std::span<const std::byte> in, const Format& from, std::span<std::byte> out,
                        const Format& to, const ConvertOptions& options = {}, const BulkOptions& bulk = {});
inline constexpr std::size_t kAmaxPiece = 2048;  // 4 KiB of bf16, 8 KiB of fp32: well inside L1

// Typed conveniences.
void convert(std::span<const float> in, std::span<std::uint8_t> out, const Format& to,
             const ConvertOptions& options = {}, const BulkOptions& bulk = {});
void convert(std::span<const std::uint8_t> in, const Format& from, std::span<float> out,
             const ConvertOptions& options = {}, const BulkOptions& bulk = {});

}  // namespace fp8q
