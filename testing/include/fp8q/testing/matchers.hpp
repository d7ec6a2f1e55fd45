// fp8q/testing/matchers.hpp: GoogleMock matchers that compare results bit for bit or within N
// ULPs, by the rule `fp8q compare` uses (fp8q/numerics/compare.hpp; docs/validation.md).
//
//   EXPECT_THAT(kernel_output, fp8q::testing::BitEqual(emulated));        // float / double
//   EXPECT_THAT(out, fp8q::testing::WithinUlps(emulated, 2));
//   EXPECT_THAT(codes, fp8q::testing::BitEqual(want_codes, fp8q::kE4M3FN));  // codes of a format
//
// Actual and expected are each a float, a double, or a contiguous range of them (std::vector,
// std::span, std::array, a C array); with a format named, of integer codes of its storage size
// (uint8_t for the 8-bit formats, uint16_t for bf16 / f16). A failure message gives the number
// of differing elements, the largest distance, and the first differing indices with both codes
// in hex and their values. Link fp8q::testing (it brings fp8q::numerics) and your GoogleTest's
// GTest::gmock: the header uses the GoogleMock your tests build with.
#pragma once

#include <gmock/gmock.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <ostream>
#include <ranges>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "fp8q/numerics/compare.hpp"
#include "fp8q/numerics/format.hpp"

namespace fp8q::testing {
namespace detail {

// The element type of a scalar or of a contiguous range.
template <class T>
struct element {
  using type = T;
};
template <class T>
  requires std::ranges::contiguous_range<T> && std::ranges::sized_range<T>
struct element<T> {
  using type = std::remove_cv_t<std::ranges::range_value_t<T>>;
};
template <class T>
using element_t = typename element<std::remove_cvref_t<T>>::type;

// The bytes of a scalar or of a contiguous range's elements.
template <class T>
std::vector<std::byte> bytes_of(const T& x) {
  using E = element_t<T>;
  static_assert(std::is_trivially_copyable_v<E>, "fp8q matchers compare trivially copyable elements");
  std::vector<std::byte> out;
  if constexpr (std::ranges::contiguous_range<T>) {
    out.resize(std::ranges::size(x) * sizeof(E));
    if (!out.empty()) std::memcpy(out.data(), std::ranges::data(x), out.size());
  } else {
    out.resize(sizeof(E));
    std::memcpy(out.data(), &x, sizeof(E));
  }
  return out;
}

// The format of float and double; other element types need theirs named.
template <class E>
const Format& deduced_format() {
  static_assert(std::is_same_v<E, float> || std::is_same_v<E, double>,
                "name the format of integer codes: BitEqual(expected, fp8q::kE4M3FN)");
  if constexpr (std::is_same_v<E, float>) return kF32;
  else return kF64;
}

class BitsMatcher {
 public:
  BitsMatcher(std::vector<std::byte> expected, const Format& format, std::size_t element_size, std::uint64_t ulps)
      : expected_(std::move(expected)), format_(format), element_size_(element_size), ulps_(ulps) {
    if (static_cast<std::size_t>(format.storage_bytes()) != element_size)
      throw std::invalid_argument("fp8q::testing: a " + std::string(format.name) + " element is " +
                                  std::to_string(format.storage_bytes()) + " bytes; the expected elements are " +
                                  std::to_string(element_size));
  }

  template <class Actual>
  bool MatchAndExplain(const Actual& actual, ::testing::MatchResultListener* listener) const {
    using E = element_t<Actual>;
    if (sizeof(E) != element_size_) {
      *listener << "whose elements are " << sizeof(E) << " bytes, not " << element_size_;
      return false;
    }
    const std::vector<std::byte> a = bytes_of(actual);
    if (a.size() != expected_.size()) {
      *listener << "which has " << a.size() / element_size_ << " elements, not " << expected_.size() / element_size_;
      return false;
    }
    const int eb = static_cast<int>(element_size_);
    const CodeComparison c = compare_codes(a, expected_, &format_, eb, {.ulps = ulps_, .worst = kShown});
    if (c.within()) return true;
    *listener << "which differs from the expected in " << c.differ << " of " << c.count << " elements (max "
              << (c.max_ulps == kInfiniteUlps ? std::string("inf") : std::to_string(c.max_ulps)) << " ULP, "
              << c.beyond << " beyond " << ulps_ << " ULP); first differing:";
    for (const ElementDiff& d : c.first)
      *listener << "\n  [" << d.index << "] " << code_text(d.actual, &format_, eb) << " vs expected "
                << code_text(d.expected, &format_, eb) << ": " << distance_text(d, &format_);
    if (c.differ > c.first.size()) *listener << "\n  ... and " << c.differ - c.first.size() << " more";
    return false;
  }

  void DescribeTo(std::ostream* os) const { describe(os, "is"); }
  void DescribeNegationTo(std::ostream* os) const { describe(os, "is not"); }

 private:
  static constexpr std::size_t kShown = 8;  // differing elements a message lists

  void describe(std::ostream* os, const char* verb) const {
    *os << verb << (ulps_ == 0 ? " bit-equal to " : " within " + std::to_string(ulps_) + " ULP of ")
        << expected_.size() / element_size_ << " expected " << format_.name << " element(s)";
  }

  std::vector<std::byte> expected_;
  Format format_;  // a copy: the caller's may be a temporary
  std::size_t element_size_;
  std::uint64_t ulps_;
};

}  // namespace detail

// Matches a value or range whose elements are bit-equal to `expected`'s: +0 against -0 and NaNs
// of different payloads do not match.
template <class Expected>
::testing::PolymorphicMatcher<detail::BitsMatcher> BitEqual(const Expected& expected) {
  using E = detail::element_t<Expected>;
  return ::testing::MakePolymorphicMatcher(
      detail::BitsMatcher(detail::bytes_of(expected), detail::deduced_format<E>(), sizeof(E), 0));
}

// Matches elements within n ULPs of `expected`'s (n = 0: BitEqual).
template <class Expected>
::testing::PolymorphicMatcher<detail::BitsMatcher> WithinUlps(const Expected& expected, std::uint64_t n) {
  using E = detail::element_t<Expected>;
  return ::testing::MakePolymorphicMatcher(
      detail::BitsMatcher(detail::bytes_of(expected), detail::deduced_format<E>(), sizeof(E), n));
}

// The same over codes of `format` (integers of its storage size).
template <class Expected>
::testing::PolymorphicMatcher<detail::BitsMatcher> BitEqual(const Expected& expected, const Format& format) {
  return ::testing::MakePolymorphicMatcher(
      detail::BitsMatcher(detail::bytes_of(expected), format, sizeof(detail::element_t<Expected>), 0));
}
template <class Expected>
::testing::PolymorphicMatcher<detail::BitsMatcher> WithinUlps(const Expected& expected, std::uint64_t n,
                                                              const Format& format) {
  return ::testing::MakePolymorphicMatcher(
      detail::BitsMatcher(detail::bytes_of(expected), format, sizeof(detail::element_t<Expected>), n));
}

}  // namespace fp8q::testing
