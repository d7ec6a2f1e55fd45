#include "safetensors/text.hpp"

#include <algorithm>
#include <cstdio>

namespace fp8q::checkpoint::detail {

// ---- UTF-8 ----------------------------------------------------------------------------------
// A scalar value U is encoded in the shortest of (RFC 3629, table 3-7 of Unicode):
//   U+0000..U+007F     0xxxxxxx
//   U+0080..U+07FF     110xxxxx 10xxxxxx                     lead C2..DF
//   U+0800..U+FFFF     1110xxxx 10xxxxxx 10xxxxxx            lead E0 (2nd A0..BF), E1..EC,
//                                                            ED (2nd 80..9F: no surrogates), EE..EF
//   U+10000..U+10FFFF  11110xxx 10xxxxxx 10xxxxxx 10xxxxxx   lead F0 (2nd 90..BF), F1..F3,
//                                                            F4 (2nd 80..8F: <= U+10FFFF)
// The narrowed second-byte ranges are exactly what excludes overlong forms, surrogates and
// values past U+10FFFF; C0, C1 and F5..FF never appear.
std::optional<std::size_t> first_invalid_utf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const std::size_t n = s.size();
  std::size_t i = 0;
  while (i < n) {
    const unsigned lead = p[i];
    if (lead < 0x80) {
      ++i;
      continue;
    }
    std::size_t len;
    unsigned lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (lead >= 0xC2 && lead <= 0xDF) {
      len = 2;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      len = 3;
      if (lead == 0xE0) lo = 0xA0;
      if (lead == 0xED) hi = 0x9F;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      len = 4;
      if (lead == 0xF0) lo = 0x90;
      if (lead == 0xF4) hi = 0x8F;
    } else {
      return i;
    }
    if (n - i < len) return i;
    if (p[i + 1] < lo || p[i + 1] > hi) return i;
    for (std::size_t k = 2; k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80) return i;
    }
    i += len;
  }
  return std::nullopt;
}

// ---- quoting --------------------------------------------------------------------------------
std::string quote(std::string_view s) {
  constexpr std::size_t kMaxShown = 120;
  std::size_t shown = s.size();
  if (shown > kMaxShown) {
    shown = kMaxShown;
    // Back up over continuation bytes so a multi-byte character is not cut in half.
    while (shown > 0 && (static_cast<unsigned char>(s[shown]) & 0xC0) == 0x80) --shown;
  }
  std::string out = "\"";
  for (std::size_t i = 0; i < shown; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7F) {
      char buf[5];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += shown < s.size() ? "\"..." : "\"";
  return out;
}

// ---- sizes ----------------------------------------------------------------------------------
std::optional<std::uint64_t> checked_numel(std::span<const std::uint64_t> shape) {
  if (std::find(shape.begin(), shape.end(), std::uint64_t{0}) != shape.end()) return 0;
  std::uint64_t n = 1;
  for (const std::uint64_t d : shape) {
    const auto next = checked_mul(n, d);
    if (!next) return std::nullopt;
    n = *next;
  }
  return n;
}

}  // namespace fp8q::checkpoint::detail
