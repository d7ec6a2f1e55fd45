// fp8q/numerics/policy.hpp: the policies that, with the two formats, fix a conversion's bits.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace fp8q {

// How a value between two representable neighbours a < x < b is resolved.
enum class Rounding : std::uint8_t {
  kNearestEven,  // nearer of a, b; a tie goes to the one with an even last mantissa bit (IEEE default)
  kNearestAway,  // nearer of a, b; a tie goes away from zero
  kTowardZero,   // truncate the magnitude
  kUp,           // toward +Inf
  kDown,         // toward -Inf
  kOdd,          // truncate, then set the last mantissa bit if anything was discarded
                 // (round-to-odd: a later rounding to fewer bits then rounds correctly)
  kStochastic,   // up with probability (x - a) / (b - a), from Philox4x32-10 (see below)
};

// What happens to values beyond the largest finite value, and to +/-Inf. A conversion into a
// format that holds every value of the source (is_widening(from, to); fp32 when scaled) has
// no such values: it is exact under either policy, Inf staying Inf.
enum class Overflow : std::uint8_t {
  kSaturate,  // finite overflow and +/-Inf become +/-max finite
  kInfOrNan,  // IEEE 754: an overflowing result is Inf where the format has Inf, else NaN,
              // except that kTowardZero and kOdd give max finite, kUp gives -max for negative
              // and kDown +max for positive values (IEEE 754-2019 section 7.4). Inf stays Inf
              // (or becomes NaN where the format has no Inf).
};

// What a NaN input becomes in a format without NaN (e2m3, e3m2, e2m1).
enum class NanPolicy : std::uint8_t {
  kError,  // the bulk API throws, naming the element index
  kZero,   // +/-0 (sign kept): the value the scalar API documents
};

// How an optional scale enters: fp32(x * scale) (Transformer Engine's `scale`) or
// fp32(x / scale) (DeepSeek-V3 and compressed-tensors divide by the stored `scale_inv`).
enum class ScaleOp : std::uint8_t { kMultiply, kDivide };

// Everything beside the formats that decides a conversion's result.
//
// Stochastic rounding: let f be the discarded part of |x| as a fraction of one unit in the
// last place of the result, truncated to 32 bits, and r the first 32-bit word of
// Philox4x32-10(key = seed, counter = offset + element index); the magnitude rounds up iff
// f + r >= 2^32. So the bits depend only on (seed, offset, index).
//
// scale: when set, the value converted is fp32(x * scale) (or fp32(x / scale) with
// ScaleOp::kDivide), the exact result rounded once to nearest-even fp32 (IEEE, subnormals
// kept, overflow to Inf), whatever the caller's FP environment.
struct ConvertOptions {
  Rounding rounding = Rounding::kNearestEven;
  Overflow overflow = Overflow::kSaturate;
  NanPolicy nan = NanPolicy::kError;
  std::uint64_t seed = 0;
  std::uint64_t offset = 0;
  std::optional<float> scale{};
  ScaleOp scale_op = ScaleOp::kMultiply;
};

// Names as the CLI and the docs spell them: rne rna rtz rup rdn rto sr; saturate inf-nan.
std::optional<Rounding> parse_rounding(std::string_view name);
std::optional<Overflow> parse_overflow(std::string_view name);
std::string_view rounding_name(Rounding r);
std::string_view overflow_name(Overflow o);

}  // namespace fp8q
