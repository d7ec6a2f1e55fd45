// The generic scalar conversion: decode -> (scale) -> round into the target.
//
// Exact values are (sign, sig, exp) with value sig * 2^exp, sig an unsigned 128-bit integer:
// wide enough for an fp64 significand (53 bits) times an fp32 scale significand (24 bits).
#include "fp8q/numerics/convert.hpp"

#include <bit>
#include <cstdio>
#include <cstring>

#include "fp8q/numerics/philox.hpp"

namespace fp8q {
namespace {

__extension__ typedef unsigned __int128 u128;  // GCC/Clang extension: exact 77-bit products

enum class Kind : std::uint8_t { kZero, kFinite, kInf, kNaN };

struct Exact {
  bool negative = false;
  Kind kind = Kind::kZero;
  u128 sig = 0;  // kFinite: value = sig * 2^exp, sig > 0
  int exp = 0;
};

int bit_length(u128 v) {
  const auto hi = static_cast<std::uint64_t>(v >> 64);
  if (hi != 0) return 128 - std::countl_zero(hi);
  return 64 - std::countl_zero(static_cast<std::uint64_t>(v));
}

// ---- 1. decode: code -> exact value ----------------------------------------------------------
Exact decode(std::uint64_t code, const Format& f) {
  Exact x;
  x.negative = (code & f.sign_bit()) != 0;
  const std::uint64_t mag = code & f.magnitude_mask();
  switch (f.specials) {
    case Specials::kIeee:
      if ((mag & f.inf_code()) == f.inf_code()) {  // exponent all ones
        x.kind = mag == f.inf_code() ? Kind::kInf : Kind::kNaN;
        return x;
      }
      break;
    case Specials::kFiniteNanOnes:
    case Specials::kExponentOnly:
      if (mag == f.magnitude_mask()) {
        x.kind = Kind::kNaN;
        return x;
      }
      break;
    case Specials::kFiniteNanUz:
      if (code == f.sign_bit()) {  // the negative-zero pattern
        x.kind = Kind::kNaN;
        x.negative = false;
        return x;
      }
      break;
    case Specials::kFinite:
      break;
  }
  const std::uint64_t b = mag >> f.man_bits;
  const std::uint64_t m = mag & ((std::uint64_t{1} << f.man_bits) - 1);
  if (b == 0 && f.has_zero()) {  // zero or subnormal: m * 2^(emin - man_bits)
    if (m == 0) return x;
    x.kind = Kind::kFinite;
    x.sig = m;
    x.exp = f.emin() - f.man_bits;
    return x;
  }
  // normal: (2^man_bits + m) * 2^(b - bias - man_bits)
  x.kind = Kind::kFinite;
  x.sig = (u128{1} << f.man_bits) | m;
  x.exp = static_cast<int>(b) - f.bias - f.man_bits;
  return x;
}

// ---- 2. round: exact value -> code ------------------------------------------------------------
// sig * 2^-s rounded to an integer by the mode (s > 0: s bits are discarded; s <= 0: exact).
// U is the unsigned integer type holding sig (64 or 128 bits).
template <class U>
U round_to_integer(U sig, int s, bool negative, const ConvertOptions& o, std::uint64_t index) {
  constexpr int kBits = sizeof(U) * 8;
  if (s <= 0) return sig << -s;  // exact: the caller's quantum keeps the result below 2^(m+2)
  const U n0 = s >= kBits ? U{0} : sig >> s;
  const U rem = s >= kBits ? sig : sig - (n0 << s);
  // rem against half a quantum, 2^(s-1): beyond the type's width rem is certainly smaller.
  const U half = s - 1 >= kBits ? U{0} : U{1} << (s - 1);
  const int cmp_half = s - 1 >= kBits ? -1 : rem < half ? -1 : rem == half ? 0 : 1;
  bool up = false;
  switch (o.rounding) {
    case Rounding::kNearestEven: up = cmp_half > 0 || (cmp_half == 0 && (n0 & 1) != 0); break;
    case Rounding::kNearestAway: up = cmp_half >= 0; break;
    case Rounding::kTowardZero: break;
    case Rounding::kUp: up = rem != 0 && !negative; break;
    case Rounding::kDown: up = rem != 0 && negative; break;
    case Rounding::kOdd: return n0 | (rem != 0 ? 1 : 0);
    case Rounding::kStochastic: {
      // f = floor(rem / 2^s * 2^32): the discarded fraction truncated to 32 bits.
      const U frac = s <= 32 ? rem << (32 - s) : (s - 32 >= kBits ? U{0} : rem >> (s - 32));
      const std::uint64_t r = sr_random(o.seed, o.offset + index);
      up = static_cast<std::uint64_t>(frac) + r >= (std::uint64_t{1} << 32);
      break;
    }
  }
  return n0 + (up ? 1 : 0);
}

// Steps: (a) specials; (b) the quantum 2^q of the result, q = max(E, emin) - m, where E is the
// exponent of the leading bit; (c) n = x / 2^q rounded to an integer by the mode; (d) the
// magnitude code is ((q - qmin) << m) + n, qmin = emin - m: a carry out of the mantissa
// moves into the exponent field by itself, because codes are ordered like magnitudes;
// (e) a code beyond max finite is overflow; (f) sign. `from` is the format x is a value of
// (null for results of arithmetic): if `f` holds all of it, Inf stays Inf under every policy.
Converted round_into(const Exact& x, const Format& f, const ConvertOptions& o, std::uint64_t index,
                     const Format* from = nullptr) {
  Converted out;
  const std::uint64_t sign = x.negative ? f.sign_bit() : 0;

  // (a) specials. e8m0 has no sign and no zero: zero and negative values become its
  // smallest value 2^-127 when saturating, NaN otherwise.
  if (x.kind == Kind::kNaN) {
    if (!f.has_nan()) {
      out.nan_unrepresentable = true;
      out.code = sign;
    } else {
      out.code = f.canonical_nan() | (f.has_signed_nan() ? sign : 0);
    }
    return out;
  }
  if (!f.is_signed && (x.negative || x.kind == Kind::kZero) ) {
    out.code = o.overflow == Overflow::kSaturate ? 0 : f.canonical_nan();
    return out;
  }
  if (x.kind == Kind::kZero) {
    out.code = f.has_negative_zero() ? sign : 0;
    return out;
  }
  const bool inf_result = o.overflow == Overflow::kInfOrNan && f.has_nan();
  // What IEEE overflow gives: Inf, or NaN where the format has no Inf.
  auto inf_or_nan = [&] {
    return f.has_inf() ? f.inf_code() | sign : f.canonical_nan() | (f.has_signed_nan() ? sign : 0);
  };
  if (x.kind == Kind::kInf) {
    // is_widening only here: it is a loop over exponents, and Inf inputs are rare
    const bool exact = from != nullptr && is_widening(*from, f);
    out.code = inf_result || exact ? inf_or_nan() : (f.max_finite_code() | sign);
    return out;
  }

  // (b) quantum
  const int m = f.man_bits;
  const int E = x.exp + bit_length(x.sig) - 1;
  const int q = (E > f.emin() ? E : f.emin()) - m;
  const int s = q - x.exp;  // bits of sig below the quantum

  // (c) n = sig * 2^-s, rounded. Significands that fit 64 bits (all but scaled fp64) take
  // 64-bit arithmetic: the same formula, cheaper than 128-bit.
  const u128 n = (x.sig >> 64) == 0
                     ? u128{round_to_integer(static_cast<std::uint64_t>(x.sig), s, x.negative, o, index)}
                     : round_to_integer(x.sig, s, x.negative, o, index);

  // (d) magnitude code; formats without zero (e8m0) have no subnormal offset: code 0 is 2^emin.
  const int qmin = f.emin() - m;
  u128 code = (static_cast<u128>(q - qmin) << m) + n;
  if (!f.has_zero()) {
    const u128 implicit = u128{1} << m;
    code = code >= implicit ? code - implicit : 0;  // below 2^emin: clamp to the smallest value
  }

  // (e) overflow
  if (code > f.max_finite_code()) {
    bool to_inf = inf_result;
    switch (o.rounding) {
      case Rounding::kTowardZero:
      case Rounding::kOdd: to_inf = false; break;
      case Rounding::kUp: to_inf = to_inf && !x.negative; break;
      case Rounding::kDown: to_inf = to_inf && x.negative; break;
      default: break;
    }
    out.code = to_inf ? inf_or_nan() : (f.max_finite_code() | sign);
    return out;
  }

  // (f) sign; fnuz has no -0, so a negative value that rounds to zero is +0.
  const auto c = static_cast<std::uint64_t>(code);
  out.code = (c == 0 && !f.has_negative_zero()) ? 0 : (c | sign);
  return out;
}

// fp32(x * scale): the exact product rounded once to nearest-even fp32. NaN follows the x86
// SSE rule so that the SIMD paths agree: x's NaN if x is NaN, else the scale's NaN, else an
// invalid product (0 * Inf) gives the default NaN, which is negative.
Exact apply_scale(const Exact& x, float scale) {
  const Exact s = decode(bits_of(scale), kF32);
  Exact p;
  p.negative = x.negative != s.negative;
  if (x.kind == Kind::kNaN) return x;
  if (s.kind == Kind::kNaN) return s;
  if ((x.kind == Kind::kInf && s.kind == Kind::kZero) || (x.kind == Kind::kZero && s.kind == Kind::kInf)) {
    p.kind = Kind::kNaN;
    p.negative = true;
    return p;
  }
  if (x.kind == Kind::kInf || s.kind == Kind::kInf) {
    p.kind = Kind::kInf;
    return p;
  }
  if (x.kind == Kind::kZero || s.kind == Kind::kZero) {
    p.kind = Kind::kZero;
    return p;
  }
  p.kind = Kind::kFinite;
  p.sig = x.sig * s.sig;
  p.exp = x.exp + s.exp;
  ConvertOptions to_f32;
  to_f32.overflow = Overflow::kInfOrNan;
  return decode(round_into(p, kF32, to_f32, 0).code, kF32);
}

// fp32(x / scale): the exact quotient rounded once to nearest-even fp32. NaN as x86 divps
// gives it (the dividend's NaN first, then the divisor's; 0/0 and Inf/Inf the negative default
// NaN); x/0 is +/-Inf for x != 0, x/Inf is +/-0.
Exact apply_divisor(const Exact& x, float scale) {
  const Exact s = decode(bits_of(scale), kF32);
  Exact q;
  q.negative = x.negative != s.negative;
  if (x.kind == Kind::kNaN) return x;
  if (s.kind == Kind::kNaN) return s;
  if ((x.kind == Kind::kInf && s.kind == Kind::kInf) || (x.kind == Kind::kZero && s.kind == Kind::kZero)) {
    q.kind = Kind::kNaN;
    q.negative = true;
    return q;
  }
  if (x.kind == Kind::kInf || s.kind == Kind::kZero) {
    q.kind = Kind::kInf;
    return q;
  }
  if (x.kind == Kind::kZero || s.kind == Kind::kInf) {
    q.kind = Kind::kZero;
    return q;
  }
  // x.sig < 2^53 and s.sig < 2^24: shift the dividend to 100 bits, so the quotient keeps at
  // least 76 bits; a nonzero remainder is or-ed into the last one (round to odd), which leaves
  // the one nearest-even rounding to fp32's 24 bits unchanged.
  const int shift = 100 - bit_length(x.sig);
  const u128 num = x.sig << shift;
  const u128 quotient = num / s.sig, rem = num % s.sig;
  q.kind = Kind::kFinite;
  q.sig = quotient | (rem != 0 ? 1 : 0);
  q.exp = x.exp - shift - s.exp;
  ConvertOptions to_f32;
  to_f32.overflow = Overflow::kInfOrNan;
  return decode(round_into(q, kF32, to_f32, 0).code, kF32);
}

}  // namespace

[[gnu::flatten]] Converted convert_one(std::uint64_t code, const Format& from, const Format& to,
                      const ConvertOptions& options, std::uint64_t index) {
  Exact x = decode(code, from);
  if (options.scale)
    x = options.scale_op == ScaleOp::kDivide ? apply_divisor(x, *options.scale) : apply_scale(x, *options.scale);
  // a scaled value is an fp32 value: fp32(x * scale)
  return round_into(x, to, options, index, options.scale ? &kF32 : &from);
}

Converted encode_exact(bool negative, std::uint64_t sig, int exp, const Format& to, const ConvertOptions& options,
                       std::uint64_t index) {
  Exact x;
  x.negative = negative;
  x.kind = sig == 0 ? Kind::kZero : Kind::kFinite;
  x.sig = sig;
  x.exp = exp;
  return round_into(x, to, options, index);
}

std::uint64_t encode_f32(float x, const Format& to, const ConvertOptions& options, std::uint64_t index) {
  return convert_one(bits_of(x), kF32, to, options, index).code;
}
std::uint64_t encode_f64(double x, const Format& to, const ConvertOptions& options, std::uint64_t index) {
  return convert_one(bits_of(x), kF64, to, options, index).code;
}
// Exact for every format fp32 / fp64 holds (is_widening); an fp64 source into fp32 keeps Inf.
constexpr ConvertOptions kDecode{.overflow = Overflow::kInfOrNan};
float decode_f32(std::uint64_t code, const Format& from) {
  return float_of(static_cast<std::uint32_t>(convert_one(code, from, kF32, kDecode).code));
}
double decode_f64(std::uint64_t code, const Format& from) {
  return double_of(convert_one(code, from, kF64, kDecode).code);
}

std::uint32_t bits_of(float x) { return std::bit_cast<std::uint32_t>(x); }
float float_of(std::uint32_t bits) { return std::bit_cast<float>(bits); }
std::uint64_t bits_of(double x) { return std::bit_cast<std::uint64_t>(x); }
double double_of(std::uint64_t bits) { return std::bit_cast<double>(bits); }

bool is_finite_positive(float x) {
  const std::uint32_t u = bits_of(x);
  return (u >> 31) == 0 && u != 0 && (u & 0x7F800000u) != 0x7F800000u;
}

std::string float_text(float x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(x));
  return buf;
}

}  // namespace fp8q
