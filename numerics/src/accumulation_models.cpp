// The accumulation models' scalar references (the specification; see
// fp8q/numerics/accumulation.hpp for the definitions), each over exact sums (exact_sum.hpp).
#include <algorithm>
#include <array>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "exact_sum.hpp"
#include "fp8q/numerics/accumulation.hpp"
#include "fp8q/numerics/convert.hpp"
#include "fp8q/numerics/format.hpp"

namespace fp8q {
namespace {

using detail::add_rne;
using detail::ExactSum;
using detail::kCanonicalNan;
using detail::product;
using detail::Term;
using detail::TermKind;
using detail::term_of;

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

}  // namespace

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

}  // namespace fp8q
