// Small helpers shared by the safetensors reader and writer: UTF-8 validation, quoting of
// untrusted names for error messages, overflow-checked size arithmetic.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace fp8q::checkpoint::detail {

// Offset of the first byte that is not part of well-formed UTF-8 (RFC 3629: no overlong
// forms, no surrogates U+D800..U+DFFF, nothing above U+10FFFF, no truncated sequence), or
// nullopt when all of `s` is well formed.
std::optional<std::size_t> first_invalid_utf8(std::string_view s);

// `s` in double quotes for an error message: quotes, backslashes and control bytes escaped
// (\", \\, \xNN), cut after 120 bytes (at a character boundary) with "..." so that a hostile
// multi-megabyte name cannot flood the message.
std::string quote(std::string_view s);

// a * b, or nullopt when the product does not fit in 64 bits.
inline std::optional<std::uint64_t> checked_mul(std::uint64_t a, std::uint64_t b) {
  std::uint64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// Product of the extents: 0 if any extent is 0 (whatever the others), 1 for rank 0, nullopt
// when the product of non-zero extents overflows 64 bits.
std::optional<std::uint64_t> checked_numel(std::span<const std::uint64_t> shape);

}  // namespace fp8q::checkpoint::detail
