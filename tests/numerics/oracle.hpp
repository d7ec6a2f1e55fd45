// An independent, straightforward model of the conversions, for tests only.
//
// It shares nothing with numerics/src/convert.cpp but the format table: it lists every
// finite value of the target (decoded with the formula of docs/numerics.md section 1 in double, where
// all of them are exact), finds the two neighbours a <= |x| < b of the exact input by binary
// search, and applies each rounding rule to the fraction (|x| - a) / (b - a) computed in
// double (exact: a, b and x have few significant bits and b - a is a power of two).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "fp8q/numerics/format.hpp"
#include "fp8q/numerics/philox.hpp"
#include "fp8q/numerics/policy.hpp"

namespace fp8q::test {

class Oracle {
 public:
  explicit Oracle(const Format& f) : f_(f) {
    const int mag_bits = f.exp_bits + f.man_bits;
    for (std::uint64_t c = 0; c < (std::uint64_t{1} << mag_bits); ++c) {
      if (is_special(c)) continue;
      grid_.push_back({value_of(c), c});
    }
    std::sort(grid_.begin(), grid_.end(), [](const Point& p, const Point& q) { return p.v < q.v; });
    max_ = grid_.back();
    // The next value above max finite on the format's unbounded grid: max + ulp(max).
    const int e = static_cast<int>(std::floor(std::log2(max_.v)));
    beyond_ = max_.v + std::ldexp(1.0, e - f.man_bits);
  }

  // Value of a magnitude code by the formula of docs/numerics.md section 1.
  double value_of(std::uint64_t c) const {
    const std::uint64_t b = c >> f_.man_bits, m = c & ((std::uint64_t{1} << f_.man_bits) - 1);
    if (f_.specials == Specials::kExponentOnly) return std::ldexp(1.0, static_cast<int>(b) - f_.bias);
    if (b == 0) return std::ldexp(static_cast<double>(m), 1 - f_.bias - f_.man_bits);
    return std::ldexp(1.0 + std::ldexp(static_cast<double>(m), -f_.man_bits), static_cast<int>(b) - f_.bias);
  }

  bool is_special(std::uint64_t mag) const {
    const std::uint64_t all = (std::uint64_t{1} << (f_.exp_bits + f_.man_bits)) - 1;
    switch (f_.specials) {
      case Specials::kIeee: return (mag >> f_.man_bits) == (all >> f_.man_bits);
      case Specials::kFiniteNanOnes:
      case Specials::kExponentOnly: return mag == all;
      default: return false;
    }
  }

  // The expected code for the exact value x; r is the stochastic-rounding word.
  std::uint64_t operator()(double x, Rounding rounding, Overflow overflow, std::uint32_t r = 0) const {
    const bool neg = std::signbit(x);
    const std::uint64_t sbit = f_.is_signed ? std::uint64_t{1} << (f_.exp_bits + f_.man_bits) : 0;
    const std::uint64_t sign = neg ? sbit : 0;
    const bool ieee_inf = f_.specials == Specials::kIeee;
    const std::uint64_t inf_code = ((std::uint64_t{1} << f_.exp_bits) - 1) << f_.man_bits;
    auto nan = [&](bool negative) -> std::uint64_t {
      switch (f_.specials) {
        case Specials::kIeee: return inf_code | (std::uint64_t{1} << (f_.man_bits - 1)) | (negative ? sbit : 0);
        case Specials::kFiniteNanOnes: return (((sbit << 1) - 1) & ~sbit) | (negative ? sbit : 0);
        case Specials::kFiniteNanUz: return sbit;
        case Specials::kExponentOnly: return 0xFF;
        case Specials::kFinite: return negative ? sbit : 0;  // the documented +/-0
      }
      return 0;
    };
    const bool has_nan = f_.specials != Specials::kFinite;
    const std::uint64_t overflow_code = ieee_inf ? inf_code | sign : nan(neg);
    const std::uint64_t max_code = max_.code | sign;

    if (std::isnan(x)) return nan(neg);
    if (!f_.is_signed) {  // e8m0: no sign, no zero
      if (neg || x == 0) return overflow == Overflow::kSaturate ? 0 : 0xFF;
    }
    if (std::isinf(x)) return overflow == Overflow::kInfOrNan && has_nan ? overflow_code : max_code;

    const double ax = std::fabs(x);
    auto zero = [&] { return f_.specials == Specials::kFiniteNanUz ? std::uint64_t{0} : sign; };
    // neighbours a <= ax < b on the grid (with 0, and the point beyond max)
    double a_v, b_v;
    std::uint64_t a_code, b_code = 0;
    bool a_is_zero = false;
    auto it = std::upper_bound(grid_.begin(), grid_.end(), ax, [](double v, const Point& p) { return v < p.v; });
    if (it == grid_.begin()) {  // below the smallest grid value
      if (f_.specials == Specials::kExponentOnly) return 0;  // clamps to 2^-127
      a_v = 0; a_code = 0; a_is_zero = true; b_v = it->v; b_code = it->code;
    } else {
      a_v = std::prev(it)->v; a_code = std::prev(it)->code;
      b_v = it == grid_.end() ? beyond_ : it->v;
      b_code = it == grid_.end() ? 0 : it->code;
      if (a_v == 0) a_is_zero = true;
    }
    if (ax >= beyond_) {  // rounds beyond max in every mode but the truncating ones
      a_v = max_.v; a_code = max_.code; b_v = beyond_ * 2;  // any b > ax works below
    }
    auto a_result = [&] { return a_is_zero && a_v == 0 ? zero() : (a_code | sign); };
    if (ax == a_v) return a_result();
    const bool b_beyond = b_v >= beyond_;
    auto b_result = [&]() -> std::uint64_t {
      if (!b_beyond) return b_code | sign;
      return overflow == Overflow::kInfOrNan && has_nan ? overflow_code : max_code;
    };
    const double frac = (ax - a_v) / (b_v - a_v);
    // mantissa evenness of a (e8m0's lone implicit bit is odd, so its ties go up)
    const bool a_even = f_.man_bits == 0 ? false : (a_code & 1) == 0;
    switch (rounding) {
      case Rounding::kNearestEven:
        if (ax >= beyond_) return b_result();
        return frac < 0.5 || (frac == 0.5 && a_even) ? a_result() : b_result();
      case Rounding::kNearestAway:
        if (ax >= beyond_) return b_result();
        return frac < 0.5 ? a_result() : b_result();
      case Rounding::kTowardZero: return a_result();
      case Rounding::kOdd: return a_even && !(ax >= beyond_) && !b_beyond ? b_result() : a_result();
      case Rounding::kUp: return neg ? a_result() : b_result();
      case Rounding::kDown: return neg ? b_result() : a_result();
      case Rounding::kStochastic: {
        if (ax >= beyond_) return b_result();
        const auto f32 = static_cast<std::uint64_t>(std::floor(std::ldexp(frac, 32)));
        return f32 + r >= (std::uint64_t{1} << 32) ? b_result() : a_result();
      }
    }
    return 0;
  }

 private:
  struct Point {
    double v;
    std::uint64_t code;
  };
  const Format& f_;
  std::vector<Point> grid_;
  Point max_{};
  double beyond_ = 0;
};

}  // namespace fp8q::test
