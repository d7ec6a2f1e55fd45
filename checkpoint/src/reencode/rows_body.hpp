// Internal: the text of the row kernels (rows.hpp), included once by each ISA's translation
// unit with its own Tag (so no instance is shared between them). Plain loops with no calls and
// no branches in the loop bodies, which the compiler vectorises for the ISA of the unit; the
// maxima of non-negative doubles are taken on their bits (the same order as the values).
#pragma once

#include <bit>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "reencode/rows.hpp"

namespace fp8q::checkpoint::reencode {

template <class Tag>
struct RowText {
  static constexpr std::uint64_t kMag = ~(std::uint64_t{1} << 63);
  static constexpr std::uint64_t kLow = std::uint64_t{1023 - 126} << 52;  // 2^-126
  static constexpr std::uint64_t kSpan = std::uint64_t{254} << 52;        // 2^-126 .. below 2^128
  static constexpr std::uint64_t kRebias = std::uint64_t{1023 - 127} << 23;
  static constexpr std::uint64_t kLowBits = (std::uint64_t{1} << 29) - 1;  // below fp32's last bit

  static void decode(const std::uint8_t* __restrict q, const double* __restrict table, const double* __restrict scale, std::size_t n,
                     double* __restrict out) {
    for (std::size_t c = 0; c < n; ++c) out[c] = table[q[c]] * scale[c];
  }

  static std::size_t decode_rule(const std::uint8_t* __restrict q, const MinifloatRule& rule,
                                 const double* __restrict scale, std::size_t n, double* __restrict out) {
    const MinifloatRule r = rule;
    const std::uint32_t shift = 23 - r.man_bits;
    std::size_t irregular = 0;
    for (std::size_t c = 0; c < n; ++c) {
      const std::uint32_t code = q[c], mag = code & r.magnitude_mask;
      const float sub = static_cast<float>(static_cast<std::int32_t>(mag)) * r.subnormal_unit;
      const std::uint32_t normal = (mag << shift) + r.rebias;
      const std::uint32_t subnormal = 0u - static_cast<std::uint32_t>((mag >> r.man_bits) == 0);
      const std::uint32_t m = (std::bit_cast<std::uint32_t>(sub) & subnormal) | (normal & ~subnormal);  // no branch
      const std::uint32_t sign = ((code >> r.sign_shift) & 1) << 31;
      out[c] = static_cast<double>(std::bit_cast<float>(m | sign)) * scale[c];
      irregular += (mag > r.max_finite) | (code == r.nan_code) | (code >= r.code_limit);
    }
    return irregular;
  }

  // In fp32's normal range the fp32 bits are the fp64 exponent rebiased and the top 23
  // fraction bits; the rest of the fraction is the sticky bit (round-to-odd) or the rounding
  // increment (nearest-even).
  static std::size_t to_odd(const double* x, std::size_t n, float* out, std::uint64_t& rounded) {
    std::size_t outside = 0;
    std::uint64_t r = 0;
    for (std::size_t c = 0; c < n; ++c) {
      const std::uint64_t b = std::bit_cast<std::uint64_t>(x[c]), mag = b & kMag;
      const std::uint32_t sign = static_cast<std::uint32_t>(b >> 32) & 0x80000000u;
      const bool normal = mag - kLow < kSpan, sticky = (mag & kLowBits) != 0;
      const std::uint32_t f = static_cast<std::uint32_t>((mag >> 29) - kRebias) | static_cast<std::uint32_t>(sticky) | sign;
      out[c] = std::bit_cast<float>(normal ? f : sign);  // 0 -> +/-0
      r += normal & sticky;
      outside += !normal & (mag != 0);
    }
    rounded += r;
    return outside;
  }

  static std::size_t nearest(const double* x, std::size_t n, std::uint32_t* out) {
    std::size_t outside = 0;
    for (std::size_t c = 0; c < n; ++c) {
      const std::uint64_t b = std::bit_cast<std::uint64_t>(x[c]), mag = b & kMag;
      const std::uint32_t sign = static_cast<std::uint32_t>(b >> 32) & 0x80000000u;
      const bool normal = mag - kLow < kSpan;
      const std::uint64_t rest = mag & kLowBits, half = std::uint64_t{1} << 28;
      std::uint32_t f = static_cast<std::uint32_t>((mag >> 29) - kRebias);
      f += static_cast<std::uint32_t>(rest > half || (rest == half && (f & 1) != 0));  // a carry into 2^128: Inf
      out[c] = normal ? f | sign : sign;
      outside += !normal & (mag != 0);
    }
    return outside;
  }

  static bool quotients(const double* __restrict x, const double* __restrict s, std::size_t n, double* __restrict v) {
    std::size_t inexact = 0;
    for (std::size_t c = 0; c < n; ++c) {
      const double q = x[c] / s[c];
      v[c] = q;
      inexact += std::fma(-q, s[c], x[c]) != 0;
    }
    return inexact == 0;
  }

  static void changes(const std::uint8_t* q, const double* table, const double* s, const double* x, std::size_t n,
                      std::uint64_t& changed, double& largest) {
    std::uint64_t count = 0, top = std::bit_cast<std::uint64_t>(largest);
    for (std::size_t c = 0; c < n; ++c) {
      const std::uint64_t d = std::bit_cast<std::uint64_t>(std::fabs(table[q[c]] * s[c] - x[c]));
      count += d != 0;
      top = d > top ? d : top;
    }
    changed += count;
    largest = std::bit_cast<double>(top);
  }

  static void differences(const double* x, const double* y, std::size_t n, std::uint64_t& changed, double& largest) {
    constexpr std::uint64_t kInfBits = std::uint64_t{0x7FF} << 52;
    std::uint64_t count = 0, top = std::bit_cast<std::uint64_t>(largest);
    for (std::size_t c = 0; c < n; ++c) {
      const double a = x[c], b = y[c];
      const std::uint64_t diff = std::bit_cast<std::uint64_t>(std::fabs(a - b));
      const std::uint64_t d = diff < kInfBits ? diff : kInfBits;  // a NaN against a number: Inf
      // a == b (equal bits, or two zeros), or both NaN: on the bits, as integers
      const std::uint64_t ua = std::bit_cast<std::uint64_t>(a), ub = std::bit_cast<std::uint64_t>(b);
      const std::uint64_t ma = ua << 1, mb = ub << 1;
      const std::uint64_t same = ((ua == ub) | ((ma | mb) == 0)) | ((ma > kInfBits << 1) & (mb > kInfBits << 1));
      const std::uint64_t differ = 1 - same, bits = d & (0 - differ);
      count += differ;
      top = bits > top ? bits : top;
    }
    changed += count;
    largest = std::bit_cast<double>(top);
  }

  static bool run_maxima(const double* x, std::size_t n, std::size_t run, double* out) {
    constexpr std::uint64_t kInfBits = std::uint64_t{0x7FF} << 52;
    std::size_t bad = 0;
    for (std::size_t c0 = 0, b = 0; c0 < n; c0 += run, ++b) {
      const std::size_t m = run < n - c0 ? run : n - c0;
      const double* xb = x + c0;
      std::uint64_t top = 0;
      for (std::size_t c = 0; c < m; ++c) {
        const std::uint64_t a = std::bit_cast<std::uint64_t>(xb[c]) & kMag;
        bad += a >= kInfBits;
        top = a > top ? a : top;
      }
      out[b] = std::bit_cast<double>(top);
    }
    return bad == 0;
  }

  static constexpr RowKernels kKernels{&decode, &decode_rule, &to_odd, &nearest, &quotients, &changes, &differences, &run_maxima};
};

}  // namespace fp8q::checkpoint::reencode
