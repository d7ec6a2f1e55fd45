// Bitwise and ULP comparison of two code arrays (fp8q/numerics/compare.hpp).
#include "fp8q/numerics/compare.hpp"

#include "fp8q/numerics/convert.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

namespace fp8q {
namespace {

std::uint64_t load(const std::byte* p, int bytes) {
  std::uint64_t v = 0;
  std::memcpy(&v, p, static_cast<std::size_t>(bytes));  // little-endian host (as the readers)
  return v;
}

// Orders the kept elements: larger distance first, then the lower index.
bool worse(const ElementDiff& a, const ElementDiff& b) {
  return a.ulps != b.ulps ? a.ulps > b.ulps : a.index < b.index;
}

// Keeps the k worst of the elements offered so far, sorted (insertion into a short list: k is a
// handful in every caller, and only differing elements are offered).
void keep_worst(std::vector<ElementDiff>& kept, const ElementDiff& d, std::size_t k) {
  if (k == 0 || (kept.size() == k && !worse(d, kept.back()))) return;
  if (kept.size() == k) kept.pop_back();
  kept.insert(std::upper_bound(kept.begin(), kept.end(), d, worse), d);
}

}  // namespace

ElementMatch classify(std::uint64_t actual, std::uint64_t expected, const Format* format) {
  if (actual == expected) return ElementMatch::kBitEqual;
  if (format == nullptr) return ElementMatch::kDiffer;
  const Format& f = *format;
  if (is_nan_code(actual, f) && is_nan_code(expected, f)) return ElementMatch::kNanPayload;
  if (f.has_negative_zero() && (actual & f.magnitude_mask()) == 0 && (expected & f.magnitude_mask()) == 0)
    return ElementMatch::kSignedZero;
  return ElementMatch::kDiffer;
}

bool is_within(const ElementDiff& d, std::uint64_t ulps) {
  return d.match == ElementMatch::kBitEqual || (ulps >= 1 && d.ulps <= ulps);
}

CodeComparison compare_codes(std::span<const std::byte> actual, std::span<const std::byte> expected,
                             const Format* format, int element_bytes, const CompareOptions& options) {
  if (element_bytes != 1 && element_bytes != 2 && element_bytes != 4 && element_bytes != 8)
    throw std::invalid_argument("compare_codes: element size " + std::to_string(element_bytes) +
                                " bytes (1, 2, 4 or 8)");
  if (format != nullptr && format->storage_bytes() != element_bytes)
    throw std::invalid_argument("compare_codes: a " + std::string(format->name) + " element is " +
                                std::to_string(format->storage_bytes()) + " bytes, not " +
                                std::to_string(element_bytes));
  if (actual.size() != expected.size())
    throw std::invalid_argument("compare_codes: " + std::to_string(actual.size()) + " bytes against " +
                                std::to_string(expected.size()));
  const auto eb = static_cast<std::size_t>(element_bytes);
  if (actual.size() % eb != 0)
    throw std::invalid_argument("compare_codes: " + std::to_string(actual.size()) +
                                " bytes are not whole elements of " + std::to_string(eb));
  // codes wider than the format (fp6/fp4 in a byte) are compared as stored, ordinals masked
  CodeComparison r;
  r.count = actual.size() / eb;
  for (std::uint64_t i = 0; i < r.count; ++i) {
    const std::uint64_t a = load(actual.data() + i * eb, element_bytes);
    const std::uint64_t e = load(expected.data() + i * eb, element_bytes);
    if (a == e) {
      ++r.bit_equal;
      continue;
    }
    ElementDiff d{.index = i, .actual = a, .expected = e, .ulps = kInfiniteUlps, .match = classify(a, e, format)};
    if (format != nullptr) d.ulps = ulp_distance(a, e, *format);
    ++r.differ;
    r.signed_zero += d.match == ElementMatch::kSignedZero;
    r.nan_payload += d.match == ElementMatch::kNanPayload;
    r.beyond += !is_within(d, options.ulps);
    r.max_ulps = std::max(r.max_ulps, d.ulps);
    if (r.first.size() < options.worst) r.first.push_back(d);
    keep_worst(r.worst, d, options.worst);
  }
  return r;
}

std::string code_text(std::uint64_t code, const Format* format, int element_bytes) {
  const int digits = format != nullptr ? (format->bits() + 3) / 4 : 2 * element_bytes;
  char buf[96];
  const auto c = static_cast<unsigned long long>(code);
  if (format == nullptr) {
    std::snprintf(buf, sizeof buf, "0x%0*llX", digits, c);
  } else {
    // %.17g: fp64 read back exactly; %g drops trailing zeros (448, not 448.00000000000000)
    std::snprintf(buf, sizeof buf, "0x%0*llX (%.17g)", digits, c, decode_f64(code, *format));
  }
  return buf;
}

std::string distance_text(const ElementDiff& d, const Format* format) {
  switch (d.match) {
    case ElementMatch::kBitEqual: return "bit-equal";
    case ElementMatch::kSignedZero: return "0 ULP (signed zero)";
    case ElementMatch::kNanPayload: return "0 ULP (NaN payload differs)";
    case ElementMatch::kDiffer: break;
  }
  if (format == nullptr) return "integers differ";
  if (d.ulps == kInfiniteUlps) return "NaN against a number";
  return std::to_string(d.ulps) + (d.ulps == 1 ? " ULP" : " ULPs");
}

}  // namespace fp8q
