// Scale rules: amax -> scale (per tensor / row / block) and amax -> E8M0 (MX).
//
// Everything here works on fp32 bit patterns and integers, so no caller FP environment
// (rounding mode, FTZ, DAZ) can change a result.
#include "fp8q/quant/scale_rules.hpp"

#include <algorithm>
#include <array>
#include <cfloat>
#include <stdexcept>
#include <string>
#include <utility>

#include "fp8q/numerics/arith.hpp"
#include "fp8q/numerics/bulk.hpp"
#include "fp8q/numerics/convert.hpp"

namespace fp8q {
namespace {

constexpr std::uint32_t kAbs = 0x7FFFFFFFu, kInfBits = 0x7F800000u;
constexpr std::uint32_t kMinScaleBits = 0x00400000u;  // 2^-127

constexpr std::array<std::pair<std::string_view, MxScaleRule>, 6> kRules = {{
    {"floor", MxScaleRule::kFloor}, {"ceil", MxScaleRule::kCeil}, {"even", MxScaleRule::kEven},
    {"rceil", MxScaleRule::kRceil}, {"trainium3", MxScaleRule::kTrainium3},
    {"compressed-tensors", MxScaleRule::kCompressedTensors},
}};

// The checks both conventions share; returns amax_epsilon's pattern (-0 taken as +0).
std::uint32_t check_amax_options(std::uint32_t a, float amax, const AmaxScaleOptions& o) {
  if (a > 0x80000000u && (a & kAbs) <= kInfBits)  // negative, not -0 and not NaN
    throw std::invalid_argument("amax must be >= 0, got " + float_text(amax));
  std::uint32_t eps = bits_of(o.amax_epsilon);
  if (eps == 0x80000000u) eps = 0;
  if (eps >= kInfBits)  // negative, Inf or NaN
    throw std::invalid_argument("amax_epsilon must be finite and >= 0, got " + float_text(o.amax_epsilon));
  if (o.margin < -kMaxMargin || o.margin > kMaxMargin)
    throw std::invalid_argument("margin must be in [-" + std::to_string(kMaxMargin) + ", " +
                                std::to_string(kMaxMargin) + "], got " + std::to_string(o.margin));
  return eps;
}

}  // namespace

float scale_from_amax(float amax, const Format& target, const AmaxScaleOptions& o) {
  std::uint32_t a = bits_of(amax);
  const std::uint32_t eps = check_amax_options(a, amax, o);
  a &= kAbs;
  if (a > kInfBits) return 1.0f;  // NaN amax
  if (a < eps) a = eps;           // bit order is value order for non-negative floats
  if (a == 0 || a == kInfBits) return 1.0f;

  // In this order: the quotient (Inf -> FLT_MAX), / 2^margin (exact unless it leaves fp32's
  // normal range; Inf -> FLT_MAX), then the power of two: a tiny amax with a margin gets
  // FLT_MAX / 2^margin, and with power_of_two 2^127 rather than a non-power FLT_MAX.
  float s = divide_rne(static_cast<float>(target.max_finite()), float_of(a));
  if (bits_of(s) == kInfBits) s = FLT_MAX;
  s = ldexp_rne(s, -o.margin);
  if (bits_of(s) == kInfBits) s = FLT_MAX;
  // below 2^-127 (a huge amax with a margin): 2^-127, the smallest scale whose reciprocal,
  // scale_inv, is finite (compared as bits: DAZ-proof)
  if (bits_of(s) < kMinScaleBits) s = float_of(kMinScaleBits);
  if (o.power_of_two) s = exp2i(floor_log2(s));  // 2^floor(log2(scale))
  return s;
}

float scale_inv_from_amax(float amax, const Format& target, const AmaxScaleOptions& o) {
  std::uint32_t a = bits_of(amax);
  const std::uint32_t eps = check_amax_options(a, amax, o);
  a &= kAbs;
  if (a > kInfBits) return 1.0f;  // NaN amax
  if (a < eps) a = eps;
  if (a == 0 || a == kInfBits) return 1.0f;

  float s = divide_rne(float_of(a), static_cast<float>(target.max_finite()));
  if ((bits_of(s) & kAbs) != 0) s = ldexp_rne(s, o.margin);
  if (bits_of(s) == kInfBits) s = FLT_MAX;
  if ((bits_of(s) & kAbs) == 0) return exp2i(-149);  // below the smallest subnormal
  if (o.power_of_two) {  // the smallest power of two >= s
    const int e = floor_log2(s) + (is_power_of_two(s) ? 0 : 1);
    s = exp2i(e > 127 ? 127 : e);
  }
  return s;
}

namespace {
void check_global_scale(float global_scale) {
  if (!is_finite_positive(global_scale))
    throw std::invalid_argument("global scale must be finite and > 0, got " + float_text(global_scale));
}
}  // namespace

float nvfp4_global_scale(float amax) {
  const std::uint32_t a = bits_of(amax);
  if (a > 0x80000000u && (a & kAbs) <= kInfBits) throw std::invalid_argument("amax must be >= 0, got " + float_text(amax));
  if ((a & kAbs) > kInfBits || (a & kAbs) == kInfBits) return 1.0f;  // NaN; Inf (2688 / Inf = 0)
  if ((a & kAbs) == 0) return FLT_MAX;                               // 2688 / 0 = Inf
  const float s = divide_rne(kNvfp4ScaleRange, float_of(a));
  return bits_of(s) == kInfBits ? FLT_MAX : s;
}

std::uint8_t nvfp4_block_scale_code(float block_amax, float global_scale) {
  const std::uint32_t a = bits_of(block_amax);
  if (a > 0x80000000u && (a & kAbs) <= kInfBits)
    throw std::invalid_argument("block amax must be >= 0, got " + float_text(block_amax));
  check_global_scale(global_scale);
  const float multiplier = mul_f32_rne(global_scale, divide_rne(1.0f, 6.0f));
  float d = mul_f32_rne(float_of(a & kAbs), multiplier);
  if (bits_of(d) == kInfBits) d = FLT_MAX;  // then saturates to 448
  ConvertOptions o;
  o.overflow = Overflow::kSaturate;
  return static_cast<std::uint8_t>(encode_f32(d, kE4M3FN, o));
}

float nvfp4_block_encode(std::uint8_t code, float global_scale) {
  check_global_scale(global_scale);
  const float d = mul_f32_rne(decode_f32(code, kE4M3FN), divide_rne(1.0f, global_scale));
  const std::uint32_t m = bits_of(d) & kAbs;
  if (m > kInfBits) return d;  // NaN code
  if (m == 0) return FLT_MAX;  // 1 / 0
  const float e = divide_rne(1.0f, float_of(m));
  return bits_of(e) == kInfBits ? FLT_MAX : e;
}

float nvfp4_block_decode(std::uint8_t code, float global_scale) {
  check_global_scale(global_scale);
  const float s = decode_f32(code, kE4M3FN);
  const std::uint32_t m = bits_of(s) & kAbs;
  if (m > kInfBits) return s;  // NaN code
  const float d = m == 0 ? 0.0f : divide_rne(float_of(m), global_scale);
  return (bits_of(s) & 0x80000000u) != 0 ? -d : d;
}

std::uint8_t mx_scale_code(float amax, const Format& element, MxScaleRule rule) {
  const std::uint32_t a = bits_of(amax) & kAbs;
  if (a >= kInfBits) return 0xFF;  // NaN or Inf: the NaN scale
  if (a == 0) return 0x00;         // e = -127
  const int emax = element.emax();
  int e = 0;
  switch (rule) {
    case MxScaleRule::kFloor: e = floor_log2(amax) - emax; break;
    case MxScaleRule::kCeil: e = floor_log2(amax) + (is_power_of_two(amax) ? 0 : 1) - emax; break;
    case MxScaleRule::kEven: {
      // add half an ulp of the element's mantissa width to the pattern, keep the exponent field
      const std::uint32_t rounded = (a + (1u << (22 - element.man_bits))) & kInfBits;
      e = static_cast<int>(rounded >> 23) - 127 - emax;
      break;
    }
    case MxScaleRule::kRceil: {
      const float inv_max = divide_rne(1.0f, static_cast<float>(element.max_finite()));
      const float p = multiply_rne(float_of(a), inv_max);
      if (bits_of(p) == 0) {
        e = -127;
      } else if (bits_of(p) >= kInfBits) {
        e = 127;
      } else {
        e = floor_log2(p) + (is_power_of_two(p) ? 0 : 1);  // the smallest power of two >= p
      }
      break;
    }
    case MxScaleRule::kTrainium3: e = floor_log2(amax) - (emax - 1); break;
    case MxScaleRule::kCompressedTensors: {  // + 2^21 carries into the exponent from fraction 0.75
      const std::uint32_t half = element == kE2M3 ? 1u << 19 : 1u << 21;  // up (e2m3: from 0.9375 up)
      e = static_cast<int>(((a + half) & kInfBits) >> 23) - 127 - emax;
      break;
    }
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
  o.scale = exp2i(127 - code);  // 2^-e
  convert(block, codes, element, o);
  return code;
}

Pow2ScaleTable mx_scale_table(const Format& element, MxScaleRule rule) {
  auto code = [&](std::uint32_t bits) { return mx_scale_code(float_of(bits), element, rule); };
  // Below 2^-126 every rule gives the smallest scale: check the subnormal binade's ends.
  if (code(1) != 0 || code(0x7FFFFFu) != 0)
    throw std::logic_error("MX rule " + std::string(mx_scale_rule_name(rule)) + " is not 0 below 2^-126");
  Pow2ScaleTable t;
  for (std::uint32_t e = 1; e < 255; ++e) {
    const std::uint32_t lo = e << 23, hi = lo | 0x7FFFFFu;
    const std::uint8_t c_lo = code(lo), c_hi = code(hi);
    t.base[e] = c_lo;
    if (c_hi == c_lo) {
      t.threshold[e] = 1u << 23;  // never steps
      continue;
    }
    if (c_hi != c_lo + 1)
      throw std::logic_error("MX rule " + std::string(mx_scale_rule_name(rule)) + " steps by more than one in a binade");
    std::uint32_t below = 0, at = 0x7FFFFFu;  // code(lo | below) == c_lo, code(lo | at) == c_lo + 1
    while (at - below > 1) {
      const std::uint32_t mid = below + (at - below) / 2;
      (code(lo | mid) == c_lo ? below : at) = mid;
    }
    t.threshold[e] = at;  // the rule is monotone in amax: one step, at mantissa `at`
  }
  return t;
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
