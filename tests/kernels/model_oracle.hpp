// An independent implementation of the accumulation models for tests: host fp32 additions
// (the test runs with the default MXCSR: nearest-even, no FTZ/DAZ) and exact sums in a
// fixed-point __int128 (value = integer * 2^-kFix). It shares no code with the library and
// holds only for inputs whose products are multiples of 2^-kFix below 2^(126 - kFix):
// FP8 (e4m3*, e5m2*) operands with MX scale exponents in [-8, 8].
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

namespace fp8q::oracle {

__extension__ typedef __int128 i128;
inline constexpr int kFix = 64;  // e5m2 subnormal products (2^-32) times 2^-16 scales, truncated to 2^-41 quanta

// The exact integer a * b * 2^e * 2^kFix (a, b FP8 values; std::ldexp in double is exact here).
inline i128 fixed_product(float a, float b, int e) {
  const double p = static_cast<double>(a) * static_cast<double>(b);  // <= 16 significant bits: exact
  int ex = 0;
  const double m = std::frexp(p, &ex);  // p = m * 2^ex, |m| in [0.5, 1)
  const auto mi = static_cast<std::int64_t>(std::ldexp(m, 53));
  const int shift = ex - 53 + e + kFix;
  if (mi == 0) return 0;
  const i128 v = mi;
  if (shift >= 0) return v << shift;
  if (-shift >= 127) std::abort();
  const i128 r = v / (i128{1} << -shift);
  if (r * (i128{1} << -shift) != v) std::abort();  // not exact: outside the oracle's domain
  return r;
}

// fp32 of the exact value v * 2^-kFix, nearest-even (libgcc's __floattisf rounds correctly
// in the current mode, the scaling by 2^-kFix is exact for the results tests produce).
inline float to_float(i128 v) { return std::ldexp(static_cast<float>(v), -kFix); }

inline int bits(i128 v) {
  int n = 0;
  for (i128 a = v < 0 ? -v : v; a != 0; a >>= 1) ++n;
  return n;
}

struct Input {
  std::vector<float> a, b;
  std::vector<int> scale_exp;  // per group of 32, e_a + e_b; empty: 0
  int emin_a = -126, emin_b = -126;
  float c = 0.0f;  // the accumulator input (fused: a multiple of 2^-kFix below 2^(126 - kFix))
  int e(std::size_t k) const { return scale_exp.empty() ? 0 : scale_exp[k / 32]; }
  float p(std::size_t k) const { return std::ldexp(a[k] * b[k], e(k)); }  // exact in fp32 here
};

inline float sequential(const Input& in, std::size_t begin, std::size_t end, float start) {
  float acc = start;
  for (std::size_t k = begin; k < end; ++k) acc += in.p(k);
  return acc;
}

inline float exact_block(const Input& in, std::size_t block) {
  float acc = in.c;
  for (std::size_t j = 0; j < in.a.size(); j += block) {
    i128 s = 0;
    for (std::size_t k = j; k < std::min(in.a.size(), j + block); ++k) s += fixed_product(in.a[k], in.b[k], in.e(k));
    acc += to_float(s);
  }
  return acc;
}

inline float systolic(const Input& in, std::size_t tile) {
  float psum = in.c;
  for (std::size_t j = 0; j < in.a.size(); j += tile) psum += sequential(in, j, std::min(in.a.size(), j + tile), 0.0f);
  return psum;
}

// Exponent of a nonzero operand as the fused model sees it.
inline int op_exp(float x, int emin) { return std::max(std::ilogb(x), emin); }

// fused(n, align A, result R, groups of G, rtz or rne), no promotion, from C = in.c: C and the
// products of each step (or each group's exact sum, with the exponent of its leading bit),
// truncated to multiples of 2^(E - A), summed exactly, then rounded to R + 1 significant bits.
inline float fused(const Input& in, std::size_t n, int align, int result, std::size_t group, bool nearest) {
  float c = in.c;
  for (std::size_t s = 0; s < in.a.size(); s += n) {
    const std::size_t stop = std::min(in.a.size(), s + n);
    std::vector<i128> terms{fixed_product(c, 1.0f, 0)};
    bool any = c != 0.0f;
    int E = any ? std::ilogb(c) : 0;
    auto see = [&](int e) { E = any ? std::max(E, e) : e, any = true; };
    for (std::size_t g0 = s; g0 < stop; g0 += group) {
      if (group == 1) {
        terms.push_back(fixed_product(in.a[g0], in.b[g0], in.e(g0)));
        if (in.a[g0] != 0.0f && in.b[g0] != 0.0f) see(op_exp(in.a[g0], in.emin_a) + op_exp(in.b[g0], in.emin_b) + in.e(g0));
        continue;
      }
      i128 v = 0;
      for (std::size_t k = g0; k < std::min(stop, g0 + group); ++k) v += fixed_product(in.a[k], in.b[k], in.e(k));
      terms.push_back(v);
      if (v != 0) see(bits(v) - 1 - kFix);
    }
    // quantum 2^(E - A), in units of 2^-kFix; finer than 2^-kFix truncates nothing (every term is
    // a multiple of it)
    const int q = std::max(E - align + kFix, 0);
    auto trunc = [&](i128 v) { return v / (i128{1} << q) * (i128{1} << q); };  // C++ `/` truncates toward zero
    i128 sum = 0;
    for (i128 t : terms) sum += trunc(t);
    // keep R + 1 significant bits
    const int drop = bits(sum) - (result + 1);
    if (drop > 0) {
      const i128 unit = i128{1} << drop;
      const i128 mag = sum < 0 ? -sum : sum;
      i128 kept = mag / unit * unit;
      const i128 rest = mag - kept;
      if (nearest && (rest * 2 > unit || (rest * 2 == unit && ((kept / unit) & 1) != 0))) kept += unit;
      sum = sum < 0 ? -kept : kept;
    }
    c = to_float(sum);
  }
  return c;
}
inline float fused(const Input& in, std::size_t n, int f, bool nearest) { return fused(in, n, f, f, 1, nearest); }

// trainium3_mx with the default assumptions: t = fp32(t + exact partition sum), one rounding.
inline float trainium3_mx(const Input& in, bool wrapx) {
  float psum = in.c;
  const std::size_t K = in.a.size();
  for (std::size_t k0 = 0; k0 < K; k0 += 512) {
    float t = 0.0f;
    for (std::size_t p = 0; p < 128; ++p) {
      i128 s = fixed_product(t, 1.0f, 0);
      for (std::size_t c = 0; c < 4; ++c) {
        const std::size_t k = k0 + (wrapx ? p + 128 * c : 4 * p + c);
        if (k < K) s += fixed_product(in.a[k], in.b[k], in.e(k));
      }
      t = to_float(s);
    }
    psum += t;
  }
  return psum;
}

}  // namespace fp8q::oracle
