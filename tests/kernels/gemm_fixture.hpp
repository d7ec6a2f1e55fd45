// Test helper: a GEMM problem that owns its storage, with random or integer-valued codes.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "fp8q/kernels/gemm.hpp"
#include "fp8q/numerics/convert.hpp"
#include "fp8q/numerics/format.hpp"

namespace fp8q::testing {

// A GEMM shape: A is m x k, B is k x n.
struct Shape {
  std::size_t m, n, k;
};

// A test's shorthand for a pair of operand granularities (gemm.hpp): one family of scales,
// placed on A [M, K] and B [K, N] as the GEMM takes it (per channel: row of A, column of B).
enum class Scales : std::uint8_t { kNone, kTensor, kPerChannel, kBlock128, kMx32 };

inline Granularity granularity_of(Scales s, bool is_a) {
  switch (s) {
    case Scales::kNone: case Scales::kTensor: return Granularity::tensor();
    case Scales::kPerChannel: return is_a ? Granularity::row() : Granularity::column();
    case Scales::kBlock128: return is_a ? Granularity::block(1, 128) : Granularity::block(128, 128);
    case Scales::kMx32: return is_a ? Granularity::mx() : Granularity::mx_column();
  }
  return Granularity::tensor();
}

struct Problem {
  std::size_t m = 0, n = 0, k = 0;
  FormatId fa = FormatId::kE4M3FN, fb = FormatId::kE4M3FN;
  Scales sa = Scales::kNone, sb = Scales::kNone;
  std::vector<std::uint8_t> a, b, mx_a, mx_b;
  std::vector<float> scale_a, scale_b, c, bias;

  GemmArgs args() const {
    return {.m = m, .n = n, .k = k,
            .a = {.format = fa, .codes = a, .granularity = granularity_of(sa, true), .scale_inv = scale_a, .scale_codes = mx_a},
            .b = {.format = fb, .codes = b, .granularity = granularity_of(sb, false), .scale_inv = scale_b, .scale_codes = mx_b},
            .c = c, .bias = bias};
  }
};

// A random code of f: any code (special values one time in `special_odds`), or only finite.
inline std::uint8_t random_code(std::mt19937_64& rng, const Format& f, unsigned special_odds) {
  for (;;) {
    const auto code = static_cast<std::uint8_t>(rng() & ((1u << f.bits()) - 1));
    const float v = decode_f32(code, f);
    if (std::isfinite(v) || (special_odds != 0 && rng() % special_odds == 0)) return code;
  }
}

inline std::size_t cdiv(std::size_t x, std::size_t y) { return (x + y - 1) / y; }

// Scales that are not powers of two (so the epilogue roundings matter), from (0.01, 4).
inline float random_scale(std::mt19937_64& rng) {
  return 0.01f + static_cast<float>(rng() % 1000000) * 4e-6f;
}

inline void fill_scales(Problem& p, std::mt19937_64& rng) {
  auto fill = [&](Scales s, std::vector<float>& v, std::vector<std::uint8_t>& mx, bool is_a) {
    std::size_t count = 0;
    switch (s) {
      case Scales::kNone: break;
      case Scales::kTensor: count = 1; break;
      case Scales::kPerChannel: count = is_a ? p.m : p.n; break;
      case Scales::kBlock128: count = is_a ? p.m * cdiv(p.k, 128) : cdiv(p.k, 128) * cdiv(p.n, 128); break;
      case Scales::kMx32:
        mx.resize(is_a ? p.m * cdiv(p.k, 32) : cdiv(p.k, 32) * p.n);
        for (auto& e : mx) e = static_cast<std::uint8_t>(127 - 6 + rng() % 13);
        break;
    }
    v.resize(count);
    for (auto& x : v) x = random_scale(rng);
  };
  fill(p.sa, p.scale_a, p.mx_a, true);
  fill(p.sb, p.scale_b, p.mx_b, false);
}

inline Problem random_problem(std::mt19937_64& rng, std::size_t m, std::size_t n, std::size_t k, FormatId fa,
                              FormatId fb, Scales sa, Scales sb, bool with_c, bool with_bias,
                              unsigned special_odds) {
  Problem p{.m = m, .n = n, .k = k, .fa = fa, .fb = fb, .sa = sa, .sb = sb};
  p.a.resize(m * k), p.b.resize(k * n);
  for (auto& x : p.a) x = random_code(rng, format_of(fa), special_odds);
  for (auto& x : p.b) x = random_code(rng, format_of(fb), special_odds);
  fill_scales(p, rng);
  if (with_c) {
    p.c.resize(m * n);
    for (auto& x : p.c) x = static_cast<float>(static_cast<int>(rng() % 2001) - 1000) * 0.37f;
  }
  if (with_bias) {
    p.bias.resize(n);
    for (auto& x : p.bias) x = static_cast<float>(static_cast<int>(rng() % 2001) - 1000) * 0.11f;
  }
  return p;
}

// E8M0 scales: mostly near 2^0, often anywhere in [2^-127, 2^127] (sums that overflow fp32 or
// round into its subnormals), rarely NaN (0xFF).
inline void wide_mx_scales(Problem& p, std::mt19937_64& rng) {
  for (auto* v : {&p.mx_a, &p.mx_b})
    for (auto& e : *v) {
      const unsigned r = static_cast<unsigned>(rng() % 100);
      if (r < 60) e = static_cast<std::uint8_t>(127 - 20 + rng() % 41);
      else if (r < 98) e = static_cast<std::uint8_t>(rng() % 255);
      else e = r == 98 ? 0xFF : static_cast<std::uint8_t>(rng() % 2 == 0 ? 0 : 254);
    }
}

}  // namespace fp8q::testing
