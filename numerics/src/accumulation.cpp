// Accumulation models: names, validation, and the scalar reference of each (the
// specification; see fp8q/numerics/accumulation.hpp for the definitions).
//
// Every sum is computed exactly in integers (ExactSum below) and rounded once by fp8q's
// generic integer rounding (encode_exact), so no host floating-point operation, and so no
// caller FP environment, takes part in a result.
#include "fp8q/numerics/accumulation.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <stdexcept>
#include <vector>

#include "fp8q/numerics/convert.hpp"
#include "fp8q/numerics/format.hpp"

namespace fp8q {
namespace {

constexpr std::uint32_t kCanonicalNan = 0x7FC00000u;

// ---- exact terms --------------------------------------------------------------------------------
enum class TermKind : std::uint8_t { kFinite, kInf, kNaN };

// value = (-1)^negative * sig * 2^exp (sig == 0 is a signed zero), or +/-Inf, or NaN.
struct Term {
  TermKind kind = TermKind::kFinite;
  bool negative = false;
  std::uint64_t sig = 0;
  int exp = 0;
  // Exponent of the term as the fused model sees it (product: e_a + e_b + scale exponents;
  // fp32 value: its normalised exponent, -126 for fp32 subnormals).
  int model_exp = 0;
};

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

int bit_length(std::uint64_t v) { return 64 - std::countl_zero(v); }

// Normalised exponent of a nonzero finite value sig * 2^exp, at least `emin` (an operand that
// is subnormal in its format has the format's emin).
int operand_exp(const Split& s, int emin) { return std::max(s.exp + bit_length(s.sig) - 1, emin); }

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

// ---- ExactSum: the exact sum of a few terms, rounded once ------------------------------------------
// Finite terms are added as magnitudes into two big integers (positive and negative parts)
// whose last bit weighs 2^lo, lo = the smallest term exponent; the widest possible span
// (fp32 operands, products, E8M0 scales: 2^-552 .. 2^510) fits in kWords words.
class ExactSum {
 public:
  void add(const Term& t) {
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

  // The sum rounded into `to` (fp32, or fp32's layout with fewer mantissa bits), returned as
  // the fp32 value of that code.
  float round(const Format& to, Rounding r) const {
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

  // The finite sum as a term (the fused model's product groups): zero keeps the IEEE sign
  // (-0 only when every term was -0); otherwise model_exp is the exponent of the leading bit
  // and the term is the sum truncated toward zero to a multiple of 2^quantum, which needs the
  // sum below 2^(quantum + 64). Only for sums without special terms.
  Term truncated(int quantum) const {
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
  // The exponent of the finite sum's leading bit; nullopt when it is zero.
  std::optional<int> lead() const {
    const Magnitude mag = magnitude();
    return mag.top < 0 ? std::nullopt : std::optional<int>(mag.lead());
  }
  bool special() const { return nan_ || pos_inf_ || neg_inf_; }

 private:
  static constexpr int kWords = 20;

  // |finite sum| = big * 2^lo, with its sign; top = the highest nonzero word (-1: zero).
  struct Magnitude {
    std::array<std::uint64_t, kWords> big{};
    int lo = 0, top = -1;
    bool negative = false;
    int lead() const { return lo + top * 64 + bit_length(big[top]) - 1; }
  };
  Magnitude magnitude() const {
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
  bool negative_zero() const { return count_ > 0 && all_negative_zero_; }

  static void accumulate(std::array<std::uint64_t, kWords>& acc, std::uint64_t sig, int offset) {
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
  // The 64 bits of `v` starting at bit `pos`.
  static std::uint64_t bits_at(const std::array<std::uint64_t, kWords>& v, int pos) {
    const int w = pos / 64, b = pos % 64;
    const std::uint64_t low = v[w] >> b;
    const std::uint64_t high = (b == 0 || w + 1 >= kWords) ? 0 : v[w + 1] << (64 - b);
    return low | high;
  }
  // The fp32 value of a code of `to` (fp32's layout with <= 23 mantissa bits: exact in fp32).
  static float decode(std::uint64_t code, const Format& to) {
    const int drop = 23 - to.man_bits;
    const std::uint32_t sign = static_cast<std::uint32_t>(code >> (to.exp_bits + to.man_bits)) & 1u;
    const std::uint32_t mag = static_cast<std::uint32_t>(code & to.magnitude_mask()) << drop;
    return float_of((sign << 31) | mag);
  }

  std::vector<Term> terms_;
  std::size_t count_ = 0;
  bool all_negative_zero_ = true;
  bool nan_ = false, pos_inf_ = false, neg_inf_ = false;
};

// fp32(x + t), nearest-even.
float add_rne(float x, const Term& t) {
  ExactSum s;
  s.add(term_of(x));
  s.add(t);
  return s.round(kF32, Rounding::kNearestEven);
}

// ---- the products of one dot product ----------------------------------------------------------
class Products {
 public:
  explicit Products(const DotInput& in) : in_(in) {
    if (in.a.size() != in.b.size())
      throw std::invalid_argument("reference_dot: a has " + std::to_string(in.a.size()) + " values, b has " +
                                  std::to_string(in.b.size()));
    const std::size_t groups = (in.a.size() + kMxGroup - 1) / kMxGroup;
    check_scales(in.mx_scale_a, groups, "mx_scale_a");
    check_scales(in.mx_scale_b, groups, "mx_scale_b");
  }
  std::size_t size() const { return in_.a.size(); }
  Term operator[](std::size_t k) const {
    int e = 0;
    bool nan = false;
    for (auto scales : {in_.mx_scale_a, in_.mx_scale_b}) {
      if (scales.empty()) continue;
      const std::uint8_t code = scales[k / kMxGroup];
      nan = nan || code == 0xFF;
      e += static_cast<int>(code) - 127;  // E8M0: 2^(code - 127)
    }
    return product(in_.a[k], in_.b[k], in_.emin_a, in_.emin_b, e, nan);
  }

 private:
  static void check_scales(std::span<const std::uint8_t> s, std::size_t groups, const char* name) {
    if (!s.empty() && s.size() != groups)
      throw std::invalid_argument(std::string("reference_dot: ") + name + " has " + std::to_string(s.size()) +
                                  " E8M0 codes, expected ceil(K / 32) = " + std::to_string(groups));
  }
  const DotInput& in_;
};

// ---- the models ---------------------------------------------------------------------------------
float dot_fp32_sequential(const Products& p, std::size_t begin, std::size_t end, float c) {
  float acc = c;
  for (std::size_t k = begin; k < end; ++k) acc = add_rne(acc, p[k]);
  return acc;
}

float dot_exact_block(const Products& p, std::size_t block, float c) {
  float acc = c;
  for (std::size_t j = 0; j < p.size(); j += block) {
    ExactSum s;
    for (std::size_t k = j; k < std::min(p.size(), j + block); ++k) s.add(p[k]);
    acc = add_rne(acc, term_of(s.round(kF32, Rounding::kNearestEven)));
  }
  return acc;
}

float dot_systolic(const Products& p, std::size_t tile, float c) {
  float psum = c;
  for (std::size_t j = 0; j < p.size(); j += tile)
    psum = add_rne(psum, term_of(dot_fp32_sequential(p, j, std::min(p.size(), j + tile), 0.0f)));
  return psum;
}

// One fused step: C plus the products [begin, end), in groups of m.group (accumulation.hpp).
float fused_step(const Products& p, std::size_t begin, std::size_t end, float c, const Format& layout,
                 const AccumulationModel& m) {
  // the terms: C, then each product (G = 1) or each group's exact sum; a group with a special
  // product contributes its products unchanged (the specials decide the result alone)
  std::vector<Term> terms;
  std::vector<ExactSum> groups;
  terms.reserve(end - begin + 1);
  terms.push_back(term_of(c));
  const auto g = static_cast<std::size_t>(m.group);
  for (std::size_t k = begin; k < end; k += g) {
    if (g == 1) {
      terms.push_back(p[k]);
      continue;
    }
    ExactSum s;
    std::vector<Term> members;
    for (std::size_t j = k; j < std::min(end, k + g); ++j) members.push_back(p[j]), s.add(members.back());
    if (s.special()) terms.insert(terms.end(), members.begin(), members.end());
    else groups.push_back(std::move(s));
  }
  // E: the largest exponent among nonzero finite terms (specials decide the result alone)
  std::optional<int> e_max;
  for (const Term& t : terms)
    if (t.kind == TermKind::kFinite && t.sig != 0) e_max = std::max(e_max.value_or(t.model_exp), t.model_exp);
  for (const ExactSum& s : groups)
    if (const auto lead = s.lead()) e_max = std::max(e_max.value_or(*lead), *lead);
  ExactSum s;
  const int quantum = e_max.value_or(0) - m.align_bits;  // each term truncated to a multiple of 2^quantum
  for (Term t : terms) {
    if (t.kind == TermKind::kFinite && t.sig != 0 && t.exp < quantum) {
      const int shift = quantum - t.exp;
      t.sig = shift >= 64 ? 0 : t.sig >> shift;  // toward zero: magnitudes truncated
      t.exp = quantum;
    }
    s.add(t);
  }
  for (const ExactSum& group : groups) s.add(group.truncated(quantum));
  return s.round(layout, m.rounding);
}

// Without promotion C_0 = c is the first step's carried C; with it, c starts the fp32
// accumulator the promoted partials (each from +0) are added into.
float dot_fused(const Products& p, const AccumulationModel& m, float c_in) {
  const Format layout{"fused", 8, m.result_bits, 127, true, Specials::kIeee};  // fp32 with R mantissa bits
  const std::size_t n = static_cast<std::size_t>(m.block);
  if (m.promote == 0) {
    float c = c_in;
    for (std::size_t s = 0; s < p.size(); s += n) c = fused_step(p, s, std::min(p.size(), s + n), c, layout, m);
    return c;
  }
  const auto period = static_cast<std::size_t>(m.promote);
  float acc = c_in;
  for (std::size_t j = 0; j < p.size(); j += period) {
    const std::size_t stop = std::min(p.size(), j + period);
    float c = 0.0f;
    for (std::size_t s = j; s < stop; s += n) c = fused_step(p, s, std::min(stop, s + n), c, layout, m);
    acc = add_rne(acc, term_of(c));
  }
  return acc;
}

float dot_trainium3_mx(const Products& p, const AccumulationModel& m, float c) {
  constexpr std::size_t kInst = kTrn3MxInstructionK, kParts = kInst / 4;
  float psum = c;
  for (std::size_t k0 = 0; k0 < p.size(); k0 += kInst) {
    float t = 0.0f;
    for (std::size_t part = 0; part < kParts; ++part) {
      std::array<std::size_t, 4> ks{};
      for (std::size_t c = 0; c < 4; ++c)
        ks[c] = k0 + (m.layout == Trn3Layout::kWrapX ? part + kParts * c : 4 * part + c);
      if (m.trn3.exact_partition_sum && m.trn3.single_rounding_add) {  // A1, A2: one rounding
        ExactSum s;
        s.add(term_of(t));
        for (std::size_t k : ks)
          if (k < p.size()) s.add(p[k]);
        t = s.round(kF32, Rounding::kNearestEven);
        continue;
      }
      float sp = 0.0f;
      if (m.trn3.exact_partition_sum) {  // A1, not A2: the exact sum rounded, then added
        ExactSum s;
        for (std::size_t k : ks)
          if (k < p.size()) s.add(p[k]);
        sp = s.round(kF32, Rounding::kNearestEven);
      } else {  // not A1: the 4 products added in fp32 from +0
        for (std::size_t k : ks)
          if (k < p.size()) sp = add_rne(sp, p[k]);
      }
      t = add_rne(t, term_of(sp));
    }
    psum = add_rne(psum, term_of(t));
  }
  return psum;
}

// ---- names ----------------------------------------------------------------------------------------
std::vector<std::string_view> split_colons(std::string_view s) {
  std::vector<std::string_view> parts;
  for (std::size_t start = 0;;) {
    const std::size_t colon = s.find(':', start);
    parts.push_back(s.substr(start, colon == std::string_view::npos ? std::string_view::npos : colon - start));
    if (colon == std::string_view::npos) return parts;
    start = colon + 1;
  }
}

std::optional<int> parse_int(std::string_view s) {
  int v = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || ptr != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

// "value" after `prefix` (e.g. "group4" -> 4); nullopt when the part is something else.
std::optional<int> parse_tagged(std::string_view part, std::string_view prefix) {
  return part.starts_with(prefix) ? parse_int(part.substr(prefix.size())) : std::nullopt;
}

// fused:n:f:ROUNDING or fused:n:alignA:resultR:ROUNDING, then :groupG and :promoteP, each
// optional, in this order.
std::optional<AccumulationModel> parse_fused(const std::vector<std::string_view>& p) {
  std::size_t i = 2;
  std::optional<int> align, result;
  if (auto f = parse_int(p[i])) {
    align = result = f, i += 1;
  } else if (p.size() >= 5) {
    align = parse_tagged(p[2], "align"), result = parse_tagged(p[3], "result"), i += 2;
  }
  const auto n = parse_int(p[1]);
  const auto r = i < p.size() ? parse_rounding(p[i++]) : std::nullopt;
  std::optional<int> group = 1, promote = 0;
  if (i < p.size() && p[i].starts_with("group")) group = parse_tagged(p[i++], "group");
  if (i < p.size()) promote = parse_tagged(p[i++], "promote");
  if (!n || !align || !result || !r || !group || !promote || i != p.size()) return std::nullopt;
  return AccumulationModel::fused_widths(*n, *align, *result, *r, *group, *promote);
}

}  // namespace

void validate(const AccumulationModel& m) {
  auto fail = [&](const std::string& what) {
    throw std::invalid_argument("accumulation model " + model_name(m) + ": " + what);
  };
  switch (m.kind) {
    case AccumKind::kFp32Sequential:
    case AccumKind::kTrainium3Mx:
      return;
    case AccumKind::kExactBlock:
    case AccumKind::kSystolic:
      if (m.block < 1) fail("block/tile size must be >= 1, got " + std::to_string(m.block));
      return;
    case AccumKind::kFused:
      if (m.block < 1 || m.block > 4096) fail("products per step n must be in [1, 4096], got " + std::to_string(m.block));
      if (m.align_bits < 1 || m.align_bits > 60)
        fail("alignment width align_bits must be in [1, 60], got " + std::to_string(m.align_bits));
      if (m.result_bits < 1 || m.result_bits > 23)
        fail("result width result_bits must be in [1, 23], got " + std::to_string(m.result_bits));
      if (m.group < 1 || m.group > m.block)
        fail("product group size must be in [1, n = " + std::to_string(m.block) + "], got " + std::to_string(m.group));
      if (m.rounding != Rounding::kTowardZero && m.rounding != Rounding::kNearestEven)
        fail("rounding must be rtz or rne");
      if (m.promote < 0 || (m.promote > 0 && m.promote % m.block != 0))
        fail("promote period must be a positive multiple of n, got " + std::to_string(m.promote));
      return;
  }
}

std::string model_name(const AccumulationModel& m) {
  switch (m.kind) {
    case AccumKind::kFp32Sequential: return "fp32_sequential";
    case AccumKind::kExactBlock: return "exact_block:" + std::to_string(m.block);
    case AccumKind::kSystolic: return "systolic:" + std::to_string(m.block);
    case AccumKind::kFused: {
      std::string s = "fused:" + std::to_string(m.block) + ":";
      if (m.align_bits == m.result_bits) s += std::to_string(m.result_bits);
      else s += "align" + std::to_string(m.align_bits) + ":result" + std::to_string(m.result_bits);
      s += ":" + std::string(rounding_name(m.rounding));
      if (m.group != 1) s += ":group" + std::to_string(m.group);
      if (m.promote > 0) s += ":promote" + std::to_string(m.promote);
      return s;
    }
    case AccumKind::kTrainium3Mx: {
      std::string s = m.layout == Trn3Layout::kWrapX ? "trainium3_mx:wrapx" : "trainium3_mx:1x32";
      if (!m.trn3.exact_partition_sum) s += ":rounded_partition_sum";
      if (!m.trn3.single_rounding_add) s += ":round_then_add";
      return s;
    }
  }
  return "?";
}

std::optional<AccumulationModel> parse_model(std::string_view name) {
  const std::vector<std::string_view> p = split_colons(name);
  std::optional<AccumulationModel> m;
  if (p[0] == "fp32_sequential" && p.size() == 1) {
    m = AccumulationModel::fp32_sequential();
  } else if ((p[0] == "exact_block" || p[0] == "systolic") && p.size() == 2) {
    if (auto b = parse_int(p[1]))
      m = p[0] == "exact_block" ? AccumulationModel::exact_block(*b) : AccumulationModel::systolic(*b);
  } else if (p[0] == "fused" && p.size() >= 4) {
    m = parse_fused(p);
  } else if (p[0] == "trainium3_mx" && p.size() >= 2 && p.size() <= 4) {
    AccumulationModel t = AccumulationModel::trainium3_mx(Trn3Layout::kWrapX);
    bool ok = p[1] == "wrapx" || p[1] == "1x32";
    if (p[1] == "1x32") t.layout = Trn3Layout::k1x32;
    for (std::size_t i = 2; i < p.size(); ++i) {
      if (p[i] == "rounded_partition_sum" && t.trn3.exact_partition_sum) t.trn3.exact_partition_sum = false;
      else if (p[i] == "round_then_add" && t.trn3.single_rounding_add) t.trn3.single_rounding_add = false;
      else ok = false;
    }
    if (ok) m = t;
  }
  if (m) validate(*m);
  return m;
}

float reference_dot(const AccumulationModel& m, const DotInput& in) {
  validate(m);
  const Products p(in);
  float r = 0.0f;
  switch (m.kind) {
    case AccumKind::kFp32Sequential: r = dot_fp32_sequential(p, 0, p.size(), in.c); break;
    case AccumKind::kExactBlock: r = dot_exact_block(p, static_cast<std::size_t>(m.block), in.c); break;
    case AccumKind::kSystolic: r = dot_systolic(p, static_cast<std::size_t>(m.block), in.c); break;
    case AccumKind::kFused: r = dot_fused(p, m, in.c); break;
    case AccumKind::kTrainium3Mx: r = dot_trainium3_mx(p, m, in.c); break;
  }
  // a NaN C returned unchanged (K = 0) is made canonical like every other NaN result
  const std::uint32_t u = bits_of(r);
  return (u & 0x7FFFFFFFu) > 0x7F800000u ? float_of(kCanonicalNan) : r;
}

float add_f32_rne(float x, float y) { return add_rne(x, term_of(y)); }

float mul_f32_rne(float x, float y) {
  ExactSum s;
  s.add(product(x, y, -126, -126, 0, false));
  return s.round(kF32, Rounding::kNearestEven);
}

}  // namespace fp8q
