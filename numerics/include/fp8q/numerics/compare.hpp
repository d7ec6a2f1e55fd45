// fp8q/numerics/compare.hpp: bitwise and ULP comparison of two arrays of codes, the one rule
// that `fp8q compare`, the GoogleTest matchers (fp8q/testing/matchers.hpp) and Python's
// fp8q.testing share (docs/validation.md, "What the comparison counts").
//
// ULP distance. A code's ordinal is its position on the format's ordered line:
//   ordinal(c) = +magnitude(c) for a code with the sign bit clear, -magnitude(c) with it set,
// where magnitude(c) = c & magnitude_mask(). In a sign-magnitude format the magnitude codes
// increase with |value| (exponent field above mantissa field), so ordinals increase with the
// value, +0 and -0 share ordinal 0, and Inf is one step past the largest finite value. Then
//   ulps(a, b) = |ordinal(a) - ordinal(b)|            for two numbers (Inf included),
//   ulps(a, b) = 0                                      for two NaNs,
//   ulps(a, b) = kInfiniteUlps                          for a NaN and a number.
// Bit-equal means the codes are identical: +0 vs -0 and NaNs with different payloads are 0 ULP
// apart but not bit-equal, and are counted as such. An element is within N ULPs iff it is
// bit-equal, or N >= 1 and ulps <= N: tolerance 0 is bitwise.
// Integer data (no Format) compares bitwise only: a differing element is beyond any tolerance.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "fp8q/numerics/format.hpp"

namespace fp8q {

inline constexpr std::uint64_t kInfiniteUlps = std::numeric_limits<std::uint64_t>::max();

constexpr bool is_nan_code(std::uint64_t code, const Format& f) {
  const std::uint64_t mag = code & f.magnitude_mask();
  switch (f.specials) {
    case Specials::kIeee: return mag > f.inf_code();
    case Specials::kFiniteNanOnes:
    case Specials::kExponentOnly: return mag == f.magnitude_mask();
    case Specials::kFiniteNanUz: return code == f.sign_bit();
    case Specials::kFinite: return false;
  }
  return false;
}

// The ordinal above, for a code that is not NaN (codes above bits() are masked off).
constexpr std::int64_t code_ordinal(std::uint64_t code, const Format& f) {
  const auto mag = static_cast<std::int64_t>(code & f.magnitude_mask());
  return (code & f.sign_bit()) != 0 ? -mag : mag;
}

// ulps(a, b) as defined above. The difference of two ordinals fits: |ordinal| < 2^63 for every
// format (f64's magnitude mask is 2^63 - 1), and the result is taken in unsigned arithmetic.
constexpr std::uint64_t ulp_distance(std::uint64_t a, std::uint64_t b, const Format& f) {
  const bool na = is_nan_code(a, f), nb = is_nan_code(b, f);
  if (na || nb) return na && nb ? 0 : kInfiniteUlps;
  const std::int64_t oa = code_ordinal(a, f), ob = code_ordinal(b, f);
  return oa >= ob ? static_cast<std::uint64_t>(oa) - static_cast<std::uint64_t>(ob)
                  : static_cast<std::uint64_t>(ob) - static_cast<std::uint64_t>(oa);
}

// How one pair of codes compares.
enum class ElementMatch : std::uint8_t {
  kBitEqual,    // identical codes
  kSignedZero,  // +0 against -0 (0 ULP)
  kNanPayload,  // two NaNs with different codes (0 ULP)
  kDiffer,      // different values (ulps >= 1), or a NaN against a number, or integers that differ
};

struct ElementDiff {
  std::uint64_t index = 0;      // flat, row-major
  std::uint64_t actual = 0, expected = 0;  // the codes
  std::uint64_t ulps = 0;       // kInfiniteUlps for NaN against a number and for integers
  ElementMatch match = ElementMatch::kDiffer;
};

struct CompareOptions {
  std::uint64_t ulps = 0;   // tolerance N
  std::size_t worst = 5;    // how many elements `worst` and `first` keep
};

struct CodeComparison {
  std::uint64_t count = 0;        // elements compared
  std::uint64_t bit_equal = 0;
  std::uint64_t differ = 0;       // count - bit_equal
  std::uint64_t signed_zero = 0;  // of `differ`: +0 against -0
  std::uint64_t nan_payload = 0;  // of `differ`: NaN against a NaN of another code
  std::uint64_t beyond = 0;       // elements not within the tolerance
  std::uint64_t max_ulps = 0;     // largest ulps (kInfiniteUlps if any NaN meets a number)
  std::vector<ElementDiff> worst; // the largest distances, largest first, then by index
  std::vector<ElementDiff> first; // the first differing elements, by index
  bool within() const { return beyond == 0; }
};

// Compares two arrays of little-endian codes of `format` (element_bytes = storage_bytes()), or,
// with format == nullptr, of integers of element_bytes (1, 2, 4 or 8) compared bitwise.
// Throws std::invalid_argument when the spans differ in size or are not whole elements.
CodeComparison compare_codes(std::span<const std::byte> actual, std::span<const std::byte> expected,
                             const Format* format, int element_bytes, const CompareOptions& options = {});

// One pair, as compare_codes counts it.
ElementMatch classify(std::uint64_t actual, std::uint64_t expected, const Format* format);
bool is_within(const ElementDiff& d, std::uint64_t ulps);

// ---- text, for the reports of `fp8q compare` and the matchers' messages ----------------------
// "0x3F800001 (1.0000001192092896)": the code in hex (as many digits as the element has) and its
// value to 17 significant digits (exact for every narrow format); integers: the hex alone.
std::string code_text(std::uint64_t code, const Format* format, int element_bytes);
// "1 ULP", "0 ULP (signed zero)", "0 ULP (NaN payload differs)", "NaN against a number",
// "integers differ".
std::string distance_text(const ElementDiff& d, const Format* format);

// ---- the definition, checked at compile time -------------------------------------------------
namespace compare_checks {
// e4m3fn: 0x00 = +0, 0x80 = -0, 0x01 = 2^-9, 0x7E = 448, 0x7F = NaN.
static_assert(ulp_distance(0x00, 0x80, kE4M3FN) == 0 && ulp_distance(0x01, 0x81, kE4M3FN) == 2);
static_assert(ulp_distance(0x7E, 0xFE, kE4M3FN) == 2 * 0x7E && ulp_distance(0x7F, 0xFF, kE4M3FN) == 0);
static_assert(ulp_distance(0x7F, 0x7E, kE4M3FN) == kInfiniteUlps);
// f32: 1.0f = 0x3F800000 and its successor; +Inf is one step past FLT_MAX; quiet vs signalling NaN.
static_assert(ulp_distance(0x3F800000, 0x3F800001, kF32) == 1 && ulp_distance(0x7F7FFFFF, 0x7F800000, kF32) == 1);
static_assert(ulp_distance(0x7FC00000, 0x7F800001, kF32) == 0 && is_nan_code(0xFFC00000, kF32));
// f64: -DBL_MAX to +DBL_MAX spans 2 * 0x7FEFFFFFFFFFFFFF steps, within 64 bits.
static_assert(ulp_distance(0xFFEFFFFFFFFFFFFF, 0x7FEFFFFFFFFFFFFF, kF64) == 2 * 0x7FEFFFFFFFFFFFFFull);
// fnuz: 0x80 is the NaN, not -0; e8m0 is unsigned with 0xFF NaN; fp4 has no NaN.
static_assert(is_nan_code(0x80, kE4M3FNUZ) && ulp_distance(0x00, 0x81, kE4M3FNUZ) == 1);
static_assert(ulp_distance(0x00, 0xFE, kE8M0) == 0xFE && is_nan_code(0xFF, kE8M0));
static_assert(!is_nan_code(0x7, kE2M1) && ulp_distance(0x7, 0xF, kE2M1) == 14);
}  // namespace compare_checks

}  // namespace fp8q
