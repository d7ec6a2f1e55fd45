// Exact sums (exact_sum.hpp): terms from fp32 values and products, added in big integers,
// rounded once.
#include "exact_sum.hpp"

#include <algorithm>
#include <array>
#include <optional>
#include <stdexcept>
#include <vector>

#include "fp8q/numerics/convert.hpp"
#include "fp8q/numerics/format.hpp"

namespace fp8q::detail {
namespace {

// An fp32 value split into sign, 24-bit integer significand and exponent of its last bit.
struct Split {
  bool negative;
  bool nan, inf;
  std::uint64_t sig;
  int exp;  // value = sig * 2^exp
};

Split split(float x) {
  const std::uint32_t u = bits_of(x);
  const std::uint32_t field = (u >> 23) & 0xFF, man = u & 0x7FFFFF;
  Split s{(u >> 31) != 0, field == 0xFF && man != 0, field == 0xFF && man == 0, 0, 0};
  if (field == 0xFF) return s;
  s.sig = field == 0 ? man : (man | 0x800000u);
  s.exp = (field == 0 ? 1 : static_cast<int>(field)) - 127 - 23;
  return s;
}

// Normalised exponent of a nonzero finite value sig * 2^exp, at least `emin` (an operand that
// is subnormal in its format has the format's emin).
int operand_exp(const Split& s, int emin) { return std::max(s.exp + bit_length(s.sig) - 1, emin); }

}  // namespace

Term term_of(float x) {
  const Split s = split(x);
  Term t;
  t.negative = s.negative;
  if (s.nan) t.kind = TermKind::kNaN;
  else if (s.inf) t.kind = TermKind::kInf;
  t.sig = s.sig;
  t.exp = s.exp;
  t.model_exp = s.sig != 0 ? operand_exp(s, -126) : 0;
  return t;
}

// a * b * 2^scale_exp, exact; scale_nan marks a NaN MX scale.
Term product(float a, float b, int emin_a, int emin_b, int scale_exp, bool scale_nan) {
  const Split x = split(a), y = split(b);
  Term t;
  t.negative = x.negative != y.negative;
  const bool x_zero = !x.nan && !x.inf && x.sig == 0, y_zero = !y.nan && !y.inf && y.sig == 0;
  if (x.nan || y.nan || scale_nan || (x.inf && y_zero) || (y.inf && x_zero)) {
    t.kind = TermKind::kNaN;
  } else if (x.inf || y.inf) {
    t.kind = TermKind::kInf;
  } else {
    t.sig = x.sig * y.sig;  // < 2^48: exact
    t.exp = x.exp + y.exp + scale_exp;
    if (t.sig != 0) t.model_exp = operand_exp(x, emin_a) + operand_exp(y, emin_b) + scale_exp;
  }
  return t;
}

void ExactSum::add(const Term& t) {
  ++count_;
  if (!(t.kind == TermKind::kFinite && t.sig == 0 && t.negative)) all_negative_zero_ = false;
  switch (t.kind) {
    case TermKind::kNaN: nan_ = true; return;
    case TermKind::kInf: (t.negative ? neg_inf_ : pos_inf_) = true; return;
    case TermKind::kFinite:
      if (t.sig != 0) terms_.push_back(t);
      return;
  }
}

float ExactSum::round(const Format& to, Rounding r) const {
  if (nan_ || (pos_inf_ && neg_inf_)) return float_of(kCanonicalNan);
  if (pos_inf_ || neg_inf_) return float_of(neg_inf_ ? 0xFF800000u : 0x7F800000u);
  const Magnitude mag = magnitude();
  const ConvertOptions opts{.rounding = r, .overflow = Overflow::kInfOrNan};
  if (mag.top < 0) return decode(encode_exact(negative_zero(), 0, 0, to, opts).code, to);
  // the 64 bits below the leading one, the rest or-ed into the last bit (sticky): the
  // rounding to <= 24 bits sees the same value class as the exact sum
  const int lead = mag.lead() - mag.lo;
  std::uint64_t sig;
  int exp;
  if (lead < 64) {
    sig = mag.big[0];
    exp = mag.lo;
  } else {
    const int shift = lead - 63;
    sig = bits_at(mag.big, shift);
    bool sticky = false;
    for (int w = 0; w < shift / 64; ++w) sticky = sticky || mag.big[w] != 0;
    if (shift % 64 != 0) sticky = sticky || (mag.big[shift / 64] << (64 - shift % 64)) != 0;
    sig |= sticky ? 1 : 0;
    exp = mag.lo + shift;
  }
  return decode(encode_exact(mag.negative, sig, exp, to, opts).code, to);
}

Term ExactSum::truncated(int quantum) const {
  const Magnitude mag = magnitude();
  Term t;
  if (mag.top < 0) {
    t.negative = negative_zero();
    return t;
  }
  t.negative = mag.negative;
  t.model_exp = mag.lead();
  const int from = std::max(quantum, mag.lo);
  if (t.model_exp - from >= 64) throw std::logic_error("ExactSum: truncated term wider than 64 bits");
  if (t.model_exp >= from) t.sig = bits_at(mag.big, from - mag.lo);
  t.exp = from;
  return t;
}

ExactSum::Magnitude ExactSum::magnitude() const {
  Magnitude m;
  int hi = 0;
  for (std::size_t i = 0; i < terms_.size(); ++i) {
    m.lo = i == 0 ? terms_[i].exp : std::min(m.lo, terms_[i].exp);
    hi = i == 0 ? terms_[i].exp + 64 : std::max(hi, terms_[i].exp + 64);
  }
  // one spare word for the carries of up to 2^64 terms
  const int words = terms_.empty() ? 1 : (hi - m.lo) / 64 + 2;
  if (words > kWords) throw std::logic_error("ExactSum: term exponents span more than the accumulator");
  std::array<std::uint64_t, kWords> pos{}, neg{};
  for (const Term& t : terms_) accumulate(t.negative ? neg : pos, t.sig, t.exp - m.lo);
  // magnitude = |pos - neg|, sign from the comparison
  for (int w = words - 1; w >= 0; --w)
    if (pos[w] != neg[w]) {
      m.negative = neg[w] > pos[w];
      break;
    }
  std::array<std::uint64_t, kWords>& big = m.negative ? neg : pos;
  const std::array<std::uint64_t, kWords>& small = m.negative ? pos : neg;
  std::uint64_t borrow = 0;
  for (int w = 0; w < words; ++w) {
    const std::uint64_t s = small[w] + borrow;
    borrow = (s < borrow) || (big[w] < s) ? 1 : 0;
    big[w] -= s;
  }
  m.big = big;
  m.top = words - 1;
  while (m.top >= 0 && m.big[m.top] == 0) --m.top;
  return m;
}

void ExactSum::accumulate(std::array<std::uint64_t, kWords>& acc, std::uint64_t sig, int offset) {
  const int w = offset / 64, b = offset % 64;
  std::uint64_t parts[2] = {sig << b, b == 0 ? 0 : sig >> (64 - b)};
  std::uint64_t carry = 0;
  for (int i = w; i < kWords && (i < w + 2 || carry != 0); ++i) {
    const std::uint64_t add = (i < w + 2 ? parts[i - w] : 0);
    const std::uint64_t s = acc[i] + add;
    const std::uint64_t c1 = s < add ? 1 : 0;
    acc[i] = s + carry;
    carry = c1 + (acc[i] < carry ? 1 : 0);
  }
}

std::uint64_t ExactSum::bits_at(const std::array<std::uint64_t, kWords>& v, int pos) {
  const int w = pos / 64, b = pos % 64;
  const std::uint64_t low = v[w] >> b;
  const std::uint64_t high = (b == 0 || w + 1 >= kWords) ? 0 : v[w + 1] << (64 - b);
  return low | high;
}

float ExactSum::decode(std::uint64_t code, const Format& to) {
  const int drop = 23 - to.man_bits;
  const std::uint32_t sign = static_cast<std::uint32_t>(code >> (to.exp_bits + to.man_bits)) & 1u;
  const std::uint32_t mag = static_cast<std::uint32_t>(code & to.magnitude_mask()) << drop;
  return float_of((sign << 31) | mag);
}

// fp32(x + t), nearest-even.
float add_rne(float x, const Term& t) {
  ExactSum s;
  s.add(term_of(x));
  s.add(t);
  return s.round(kF32, Rounding::kNearestEven);
}

}  // namespace fp8q::detail
