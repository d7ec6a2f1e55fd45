// The PE array's exact values and its one rounding (see pe_arith.hpp).
//
// add_round() rounds an exact sum through round-to-odd: the sum is formed as an integer at a
// unit 2^u at least 2^-123 of its leading bit, and when the smaller term has bits below 2^u
// they are replaced by one sticky bit in the last place (floor of the exact value, with the
// last bit set). Rounding a round-to-odd value with >= p + 2 bits to p bits gives the correct
// rounding of the exact value (Boldo & Melquiond, "Emulation of FMA and correctly rounded
// sums: proved algorithms using rounding to odd", IEEE TC 2008); fp32 needs p = 24, and a
// subnormal result's quantum 2^-149 is coarser still.
#include "pe_arith.hpp"

#include <algorithm>
#include <bit>
#include <stdexcept>
#include <string>

#include "fp8q/numerics/convert.hpp"
#include "fp8q/numerics/format.hpp"

namespace fp8q::trn::detail {
namespace {

using Kind = Exact::Kind;
constexpr std::uint32_t kCanonicalNan = 0x7FC00000u;
// Finite terms given to add_round have at most this many significant bits: then, whenever the
// smaller term must be shortened, it lies below the larger one's leading bit by more than
// 2^24, so no cancellation can eat the 123 bits kept (see add_round).
constexpr int kMaxTermBits = 100;

int bit_length(u128 v) {
  const auto hi = static_cast<std::uint64_t>(v >> 64), lo = static_cast<std::uint64_t>(v);
  return hi != 0 ? 128 - std::countl_zero(hi) : 64 - std::countl_zero(lo);
}

bool is_zero(const Exact& x) { return x.kind == Kind::kFinite && x.sig == 0; }

Exact nan() { return {.kind = Kind::kNaN}; }

// The same value with an odd significand (trailing zero bits moved into the exponent), so that
// a significand's width is its number of significant bits.
Exact normalised(Exact x) {
  if (x.kind != Kind::kFinite || x.sig == 0) return x;
  const auto lo = static_cast<std::uint64_t>(x.sig);
  const int tz = lo != 0 ? std::countr_zero(lo) : 64 + std::countr_zero(static_cast<std::uint64_t>(x.sig >> 64));
  x.sig >>= tz;
  x.exp += tz;
  return x;
}

// The IEEE result of a sum with a special value, if there is one.
bool special_sum(const Exact& x, const Exact& y, Exact& out) {
  if (x.kind == Kind::kNaN || y.kind == Kind::kNaN) return out = nan(), true;
  if (x.kind == Kind::kInf && y.kind == Kind::kInf && x.negative != y.negative) return out = nan(), true;
  if (x.kind == Kind::kInf) return out = x, true;
  if (y.kind == Kind::kInf) return out = y, true;
  return false;
}

// Signed magnitude arithmetic on two non-negative integers with signs: |p| +/- |q|.
void signed_add(bool np, u128 p, bool nq, u128 q, bool& negative, u128& mag) {
  if (np == nq) {
    negative = np, mag = p + q;
  } else if (p >= q) {
    negative = np, mag = p - q;
  } else {
    negative = nq, mag = q - p;
  }
}

}  // namespace

Exact exact_of(float x) {
  const std::uint32_t u = bits_of(x);
  const std::uint32_t field = (u >> 23) & 0xFFu, man = u & 0x7FFFFFu;
  Exact e{.negative = (u >> 31) != 0};
  if (field == 0xFF) {
    e.kind = man != 0 ? Kind::kNaN : Kind::kInf;
    return e;
  }
  // normal: 1.man * 2^(field - 127) = (2^23 + man) * 2^(field - 150); subnormal: man * 2^-149
  e.sig = field == 0 ? man : (man | 0x800000u);
  e.exp = (field == 0 ? 1 : static_cast<int>(field)) - 150;
  return normalised(e);
}

Exact exact_product(float a, float b, int scale_exp, bool scale_nan) {
  const Exact x = exact_of(a), y = exact_of(b);
  Exact p{.negative = x.negative != y.negative};
  if (x.kind == Kind::kNaN || y.kind == Kind::kNaN || scale_nan || (x.kind == Kind::kInf && is_zero(y)) ||
      (y.kind == Kind::kInf && is_zero(x))) {
    p.kind = Kind::kNaN;
  } else if (x.kind == Kind::kInf || y.kind == Kind::kInf) {
    p.kind = Kind::kInf;
  } else {
    p.sig = x.sig * y.sig;  // < 2^48
    p.exp = x.exp + y.exp + scale_exp;
  }
  return p;
}

Exact exact_add(const Exact& x, const Exact& y) {
  Exact out;
  if (special_sum(x, y, out)) return out;
  if (is_zero(x) && is_zero(y)) return {.negative = x.negative && y.negative};
  if (is_zero(x)) return y;
  if (is_zero(y)) return x;
  const int lo = std::min(x.exp, y.exp);
  const int sx = x.exp - lo, sy = y.exp - lo;
  if (bit_length(x.sig) + sx > 126 || bit_length(y.sig) + sy > 126)
    throw std::logic_error("trainium PE: an exact partition sum spans more than 126 bits");
  signed_add(x.negative, x.sig << sx, y.negative, y.sig << sy, out.negative, out.sig);
  out.exp = lo;
  if (out.sig == 0) out.negative = false;  // exact cancellation: +0 (round to nearest)
  return normalised(out);
}

float round_f32(const Exact& x) {
  if (x.kind == Kind::kNaN) return float_of(kCanonicalNan);
  if (x.kind == Kind::kInf) return float_of(x.negative ? 0xFF800000u : 0x7F800000u);
  if (x.sig == 0) return float_of(x.negative ? 0x80000000u : 0u);
  // keep 64 bits, the rest folded into the last one (round to odd: 64 >= 24 + 2 bits)
  std::uint64_t sig;
  int exp = x.exp;
  const int len = bit_length(x.sig);
  if (len <= 64) {
    sig = static_cast<std::uint64_t>(x.sig);
  } else {
    const int shift = len - 64;
    const u128 dropped = x.sig & ((u128{1} << shift) - 1);
    sig = static_cast<std::uint64_t>(x.sig >> shift) | (dropped != 0 ? 1u : 0u);
    exp += shift;
  }
  constexpr ConvertOptions kRne{.rounding = Rounding::kNearestEven, .overflow = Overflow::kInfOrNan};
  return float_of(static_cast<std::uint32_t>(encode_exact(x.negative, sig, exp, kF32, kRne).code));
}

float add_round(const Exact& x, const Exact& y) {
  Exact s;
  if (special_sum(x, y, s)) return round_f32(s);
  if (is_zero(x) && is_zero(y)) return round_f32({.negative = x.negative && y.negative});
  if (is_zero(x)) return round_f32(y);
  if (is_zero(y)) return round_f32(x);
  if (bit_length(x.sig) > kMaxTermBits || bit_length(y.sig) > kMaxTermBits)
    throw std::logic_error("trainium PE: a term of more than " + std::to_string(kMaxTermBits) + " bits");
  // hi: the term whose leading bit L is higher. Unit u = max(smaller exponent, L - 124): every
  // bit of hi lies at or above u (hi has <= 100 bits), and hi's magnitude is < 2^125 units.
  const Exact& hi = x.exp + bit_length(x.sig) >= y.exp + bit_length(y.sig) ? x : y;
  const Exact& lo = &hi == &x ? y : x;
  const int lead = hi.exp + bit_length(hi.sig) - 1;
  const int u = std::max(std::min(x.exp, y.exp), lead - 124);
  const u128 h = hi.sig << (hi.exp - u);
  u128 l;
  bool sticky = false;  // lo has bits below 2^u: the exact value is between two units
  if (lo.exp >= u) {
    l = lo.sig << (lo.exp - u);
  } else {
    // Here lo has a bit below u = L - 124 and at most 100 bits, so |lo| < 2^(L - 24) units:
    // h - l stays above 2^123 and the floor below keeps >= 123 significant bits.
    const int shift = u - lo.exp;
    l = shift >= 128 ? 0 : lo.sig >> shift;
    sticky = shift >= 128 ? lo.sig != 0 : (lo.sig & ((u128{1} << shift) - 1)) != 0;
  }
  s.exp = u;
  signed_add(hi.negative, h, lo.negative, l, s.negative, s.sig);
  if (sticky) {
    // same signs: floor(h + l + f) = h + l; opposite: floor(h - l - f) = h - l - 1 (h > l + 1
    // here); then the last bit set marks the inexact part (round to odd)
    if (hi.negative != lo.negative) s.sig -= 1;
    s.sig |= 1;
  }
  if (s.sig == 0) s.negative = false;  // exact cancellation: +0
  return round_f32(s);
}

}  // namespace fp8q::trn::detail
