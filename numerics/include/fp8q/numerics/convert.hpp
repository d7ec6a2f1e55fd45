// fp8q/numerics/convert.hpp: the scalar reference conversion. This is the specification;
// every fast path (numerics/bulk.hpp) must return the same bits for every input.
//
// A conversion is (source format, target format, options). The source code is decoded to
// its exact value sign * sig * 2^exp, optionally multiplied by the scale (the product
// rounded once to fp32), and that exact value is rounded into the target by one generic
// algorithm over the format descriptor. No intermediate format is ever involved. Where the
// target holds every value of the source (is_widening(from, to), or (kF32, to) when scaled),
// the result is that value under every policy: Inf stays Inf, NaN is the canonical NaN.
#pragma once

#include <cstdint>
#include <string>

#include "fp8q/numerics/format.hpp"
#include "fp8q/numerics/policy.hpp"

namespace fp8q {

// The result of one scalar conversion.
struct Converted {
  std::uint64_t code = 0;
  // The input (after scaling) was NaN and the target has no NaN: `code` is +/-0, and
  // NanPolicy::kError asks the bulk API to fail.
  bool nan_unrepresentable = false;
};

// Converts one code of `from` into `to`. `index` is the element index that keys stochastic
// rounding (the counter is options.offset + index). Never throws.
Converted convert_one(std::uint64_t code, const Format& from, const Format& to,
                      const ConvertOptions& options, std::uint64_t index = 0);

// Rounds the exact value (-1)^negative * sig * 2^exp into `to` by the same rules (options.scale
// is ignored: the value is already exact). For results of exact arithmetic elsewhere, e.g. a
// quotient whose remainder is or-ed into the last bit of a wide enough `sig` (round to odd).
Converted encode_exact(bool negative, std::uint64_t sig, int exp, const Format& to,
                       const ConvertOptions& options, std::uint64_t index = 0);

// ---- conveniences over convert_one ---------------------------------------------------------
std::uint64_t encode_f32(float x, const Format& to, const ConvertOptions& options = {},
                         std::uint64_t index = 0);
std::uint64_t encode_f64(double x, const Format& to, const ConvertOptions& options = {},
                         std::uint64_t index = 0);
// Decoding to fp32 / fp64 is exact for every narrow format (Inf kept; NaN becomes the
// canonical NaN), as convert_one() is under any options for a format fp32 / fp64 holds.
float decode_f32(std::uint64_t code, const Format& from);
double decode_f64(std::uint64_t code, const Format& from);

std::uint32_t bits_of(float x);
float float_of(std::uint32_t bits);
std::uint64_t bits_of(double x);
double double_of(std::uint64_t bits);

// Whether x is finite and > 0, read from its bits: under a caller's DAZ a subnormal compares
// equal to 0, so a float comparison would refuse a valid multiplier.
bool is_finite_positive(float x);
// x in a message, with the 9 significant digits that read back as the same float
// (std::to_string's six decimals print 1e-10 as 0.000000).
std::string float_text(float x);

}  // namespace fp8q
