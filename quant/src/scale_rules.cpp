// Scale rules: amax -> scale (per tensor / row / block) and amax -> E8M0 (MX).
//
// Everything here works on fp32 bit patterns and integers, so no caller FP environment
// (rounding mode, FTZ, DAZ) can change a result.
#include "fp8q/quant/scale_rules.hpp"

#include <array>
#include <bit>
#include <cfloat>
#include <stdexcept>
#include <string>
#include <utility>

#include "fp8q/numerics/bulk.hpp"
#include "fp8q/numerics/convert.hpp"

namespace fp8q {
namespace {

constexpr std::uint32_t kAbs = 0x7FFFFFFFu, kInfBits = 0x7F800000u;

// |x| of a finite nonzero fp32 as (significand with its top bit at bit 23, exponent):
// |x| = sig * 2^exp, 2^23 <= sig < 2^24 (subnormals are normalised here).
std::pair<std::uint64_t, int> normalised(std::uint32_t abs_bits) {
  const std::uint32_t field = abs_bits >> 23;
  std::uint64_t sig = field == 0 ? (abs_bits & 0x7FFFFF) : ((abs_bits & 0x7FFFFF) | 0x800000);
  int exp = (field == 0 ? 1 : static_cast<int>(field)) - 127 - 23;
  const int shift = std::countl_zero(sig) - 40;  // bring the top bit to bit 23
  return {sig << shift, exp - shift};
}

// floor(log2(|x|)) of a finite nonzero fp32, from its bits.
int floor_log2(std::uint32_t abs_bits) { return normalised(abs_bits).second + 23; }
bool is_power_of_two(std::uint32_t abs_bits) { return normalised(abs_bits).first == (1u << 23); }

const ConvertOptions kRneToF32{.rounding = Rounding::kNearestEven, .overflow = Overflow::kInfOrNan};

// fp32(n / d) for finite positive n, d, nearest-even: a 64 / 24-bit integer division keeps
// 40 quotient bits; the remainder is or-ed into the last one (round to odd), which leaves
// the nearest-even rounding to 24 bits unchanged. May return +Inf.
float divide_rne(std::uint32_t n_bits, std::uint32_t d_bits) {
  const auto [n_sig, n_exp] = normalised(n_bits);
  const auto [d_sig, d_exp] = normalised(d_bits);
  const std::uint64_t num = n_sig << 40;  // < 2^64
  const std::uint64_t q = num / d_sig, r = num % d_sig;
  return float_of(static_cast<std::uint32_t>(encode_exact(false, q | (r != 0 ? 1 : 0), n_exp - d_exp - 40, kF32, kRneToF32).code));
}

// fp32(a * b) for finite positive a, b, nearest-even (the 48-bit product is exact).
float multiply_rne(std::uint32_t a_bits, std::uint32_t b_bits) {
  const auto [a_sig, a_exp] = normalised(a_bits);
  const auto [b_sig, b_exp] = normalised(b_bits);
  return float_of(static_cast<std::uint32_t>(encode_exact(false, a_sig * b_sig, a_exp + b_exp, kF32, kRneToF32).code));
}

constexpr std::array<std::pair<std::string_view, MxScaleRule>, 5> kRules = {{
    {"floor", MxScaleRule::kFloor}, {"ceil", MxScaleRule::kCeil}, {"even", MxScaleRule::kEven},
    {"rceil", MxScaleRule::kRceil}, {"trainium3", MxScaleRule::kTrainium3},
}};

}  // namespace

float scale_from_amax(float amax, const Format& target, const AmaxScaleOptions& o) {
  std::uint32_t a = bits_of(amax);
  if (a > 0x80000000u && (a & kAbs) <= kInfBits)  // negative, not -0 and not NaN
    throw std::invalid_argument("amax must be >= 0, got " + std::to_string(amax));
  const std::uint32_t eps = bits_of(o.amax_epsilon);
  if (eps >= kInfBits)  // negative, Inf or NaN
    throw std::invalid_argument("amax_epsilon must be finite and >= 0, got " + std::to_string(o.amax_epsilon));
  a &= kAbs;
  if (a > kInfBits) return 1.0f;  // NaN amax
  if (a < eps) a = eps;           // bit order is value order for non-negative floats
  if (a == 0 || a == kInfBits) return 1.0f;

  const std::uint32_t max_bits = bits_of(static_cast<float>(target.max_finite()));  // exact in fp32
  std::uint32_t s = bits_of(divide_rne(max_bits, a));
  if (s != kInfBits && o.margin != 0) {  // / 2^margin: exact unless it leaves the normal range
    const auto [sig, exp] = normalised(s);
    s = static_cast<std::uint32_t>(encode_exact(false, sig, exp - o.margin, kF32, kRneToF32).code);
  }
  if (s == kInfBits) s = bits_of(FLT_MAX);
  if (s == 0) return 0.0f;  // only with a huge margin
  if (o.power_of_two)  // 2^floor(log2(scale))
    s = static_cast<std::uint32_t>(encode_exact(false, 1, floor_log2(s), kF32, kRneToF32).code);
  return float_of(s);
}

std::uint8_t mx_scale_code(float amax, const Format& element, MxScaleRule rule) {
  const std::uint32_t a = bits_of(amax) & kAbs;
  if (a >= kInfBits) return 0xFF;  // NaN or Inf: the NaN scale
  if (a == 0) return 0x00;         // e = -127
  const int emax = element.emax();
  int e = 0;
  switch (rule) {
    case MxScaleRule::kFloor: e = floor_log2(a) - emax; break;
    case MxScaleRule::kCeil: e = floor_log2(a) + (is_power_of_two(a) ? 0 : 1) - emax; break;
    case MxScaleRule::kEven: {
      // add half an ulp of the element's mantissa width to the pattern, keep the exponent field
      const std::uint32_t rounded = (a + (1u << (22 - element.man_bits))) & kInfBits;
      e = static_cast<int>(rounded >> 23) - 127 - emax;
      break;
    }
    case MxScaleRule::kRceil: {
      const std::uint32_t inv_max = bits_of(divide_rne(bits_of(1.0f), bits_of(static_cast<float>(element.max_finite()))));
      const std::uint32_t p = bits_of(multiply_rne(a, inv_max));
      if (p == 0) {
        e = -127;
      } else if (p >= kInfBits) {
        e = 127;
      } else {
        e = floor_log2(p) + (is_power_of_two(p) ? 0 : 1);  // the smallest power of two >= p
      }
      break;
    }
    case MxScaleRule::kTrainium3: e = floor_log2(a) - (emax - 1); break;
  }
  e = e < -127 ? -127 : e > 127 ? 127 : e;
  return static_cast<std::uint8_t>(e + 127);
}

std::uint8_t mx_quantize_block(std::span<const float> block, const Format& element, MxScaleRule rule,
                               std::span<std::uint8_t> codes) {
  if (codes.size() != block.size())
    throw std::invalid_argument("MX block of " + std::to_string(block.size()) + " values but " +
                                std::to_string(codes.size()) + " output codes");
  if (element.bits() > 8 || !element.is_signed)
    throw std::invalid_argument("MX element format must be a signed format of at most 8 bits, got " +
                                std::string(element.name));
  std::uint32_t amax = 0;  // as bits: NaN patterns sort above Inf, so a NaN anywhere wins
  for (float x : block) amax = std::max(amax, bits_of(x) & kAbs);
  const std::uint8_t code = mx_scale_code(float_of(amax), element, rule);
  if (code == 0xFF) {
    const auto fill = static_cast<std::uint8_t>(element.has_nan() ? element.canonical_nan() : 0);
    for (auto& c : codes) c = fill;
    return code;
  }
  ConvertOptions o;  // nearest-even, saturating
  o.scale = float_of(static_cast<std::uint32_t>(encode_exact(false, 1, 127 - code, kF32, kRneToF32).code));  // 2^-e
  convert(block, codes, element, o);
  return code;
}

std::optional<MxScaleRule> parse_mx_scale_rule(std::string_view name) {
  for (auto [n, r] : kRules)
    if (n == name) return r;
  return std::nullopt;
}

std::string_view mx_scale_rule_name(MxScaleRule rule) {
  for (auto [n, r] : kRules)
    if (r == rule) return n;
  return "?";
}

}  // namespace fp8q
