// fp8q/quant/scale_rules.hpp: how a scale is chosen from an amax (docs/numerics.md section 5).
//
// Vocabulary: `scale` multiplies high precision into the target's range,
// q = convert(fp32(x * scale)); `scale_inv` = 1 / scale is what checkpoints store.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "fp8q/numerics/block_scaled.hpp"
#include "fp8q/numerics/format.hpp"
#include "fp8q/numerics/policy.hpp"

namespace fp8q {

// ---- per tensor / row / block: scale from amax ------------------------------------------------
inline constexpr int kMaxMargin = 512;  // |margin| above this is refused (fp32 spans 2^277)

struct AmaxScaleOptions {
  int margin = 0;              // the scale is divided by 2^margin (headroom); |margin| <= kMaxMargin
  float amax_epsilon = 0.0f;   // amax is floored to this before the division
  bool power_of_two = false;   // round the scale down to 2^floor(log2(scale))
};

// In this order: (1) scale = fp32(max_finite(target) / max(amax, epsilon)), one correctly
// rounded division (nearest-even, computed in integers: the caller's FP environment cannot
// change it); an infinite quotient becomes FLT_MAX; (2) scale = fp32(scale / 2^margin),
// again FLT_MAX if infinite, and 2^-127 if below 2^-127 (a huge amax with a margin: the
// smallest scale whose reciprocal, scale_inv, is finite); (3) with power_of_two,
// 2^floor(log2(scale)).
// amax of 0, +Inf or NaN (of either sign) gives scale 1 (delayed scaling keeps its previous
// scale instead); -Inf is a negative amax.
// A negative amax, a negative, Inf or NaN epsilon (-0 is 0) and a margin beyond kMaxMargin
// are errors (std::invalid_argument naming the field and its value).
float scale_from_amax(float amax, const Format& target, const AmaxScaleOptions& options = {});

// The divide convention (DeepSeek-V3, compressed-tensors): the stored dequantization
// multiplier is computed directly and elements are divided by it, q = convert(fp32(x / s)):
//   s = fp32(max(amax, epsilon) / max_finite(target))   one nearest-even rounding
//   s = fp32(s * 2^margin)                              nearest-even; Inf becomes FLT_MAX
//   power_of_two: s = 2^ceil(log2(s)), at most 2^127    (never shrinks the range)
//   s == 0 (amax / max below fp32's smallest subnormal): s = 2^-149
// amax of 0, +Inf or NaN gives s = 1. Errors as for scale_from_amax.
float scale_inv_from_amax(float amax, const Format& target, const AmaxScaleOptions& options = {});

// ---- MX: one E8M0 scale X = 2^e per block of 32 ------------------------------------------------
// Each rule turns the block's amax into e (emax_elem = the element format's largest exponent:
// e4m3fn 8, e5m2 15, e2m3 2, e3m2 4, e2m1 2), then e is clamped to [-127, 127]:
enum class MxScaleRule : std::uint8_t {
  kFloor,      // OCP MX v1.0: e = floor(log2(amax)) - emax_elem
  kCeil,       // e = ceil(log2(amax)) - emax_elem
  kEven,       // torchao: amax rounded to the element's mantissa width (add half an ulp of that
               // width to the fp32 pattern, clear the mantissa), then floor
  kRceil,      // NVIDIA / Transformer Engine: X = the smallest power of two
               // >= fp32(amax * fp32(1 / max_elem))
  kTrainium3,  // NKI quantize_mx: e = floor(log2(amax)) - (emax_elem - 1); the block max lands
               // in [2^(emax-1), 2^emax) (unless e is clamped) and never saturates
  kCompressedTensors,  // compressed-tensors 0.20 (llm-compressor's MXFP8 / MXFP6 / MXFP4): amax
                       // rounded to a power of two as `even` at e2m1's 1-bit mantissa (up where its
                       // fraction is >= 0.75; e2m3: at its own 3 bits, >= 0.9375), then - emax_elem
};
// A block of zeros gives e = -127 (code 0x00); a NaN or Inf amax gives the NaN scale 0xFF.
// floor(log2(amax)) is read exactly from the fp32 bits, never from a float log2.
std::uint8_t mx_scale_code(float amax, const Format& element, MxScaleRule rule);

// Quantizes one MX block: amax over the block (a NaN anywhere makes it NaN), the scale code
// by `rule`, then each element as convert(fp32(x * 2^-e)), nearest-even, saturating (OCP clamps
// to +/-max normal). Under nearest-even the product x * 2^-e is exact wherever it can change
// the result (it only loses bits below fp32's normal range, under half of every element
// format's smallest subnormal); convert_mx (numerics/block_scaled.hpp) takes any rounding mode.
// Returns the E8M0 code; with the NaN scale the elements are NaN where the element format has
// NaN, else 0 (the scale carries the NaN).
std::uint8_t mx_quantize_block(std::span<const float> block, const Format& element, MxScaleRule rule,
                               std::span<std::uint8_t> codes);

// The rule as a table for the bulk MX path (numerics/block_scaled.hpp): for every fp32 amax,
// table.code(bits(amax)) == mx_scale_code(amax, element, rule). Built by probing the rule at
// each binade's ends and bisecting for the one mantissa where it steps; throws
// std::logic_error if the rule is not of that form (it always is for the six rules).
Pow2ScaleTable mx_scale_table(const Format& element, MxScaleRule rule);

// ---- NVFP4: an E4M3FN scale per block of 16 e2m1 elements under one fp32 tensor scale ----------
// Quantization is Transformer Engine's reference quantizer (docs/numerics.md section 5, "NVFP4"),
// with S the tensor's encode scale, every operation one fp32 nearest-even rounding:
//   S    = fp32(2688 / amax)          2688 = 448 * 6; Inf (amax 0 or tiny) -> FLT_MAX; 0 -> 1
//   code = e4m3fn(fp32(block_amax * fp32(S * fp32(1 / 6))))   nearest-even, saturating at 448
//   e    = fp32(1 / fp32(decode(code) * fp32(1 / S)))          1 / 0 -> FLT_MAX
//   q    = e2m1(fp32(x * e))                                   saturating at 6
// and dequantization multiplies by d = fp32(decode(code) / S), as compressed-tensors and vLLM
// decode the stored pair. A NaN amax gives S = 1 and a NaN block amax the NaN code 0x7F (its e
// and d are NaN). A negative amax is an error.
inline constexpr float kNvfp4ScaleRange = 2688.0f;
float nvfp4_global_scale(float amax);
std::uint8_t nvfp4_block_scale_code(float block_amax, float global_scale);
float nvfp4_block_encode(std::uint8_t code, float global_scale);
float nvfp4_block_decode(std::uint8_t code, float global_scale);

// floor ceil even rceil trainium3 compressed-tensors
std::optional<MxScaleRule> parse_mx_scale_rule(std::string_view name);
std::string_view mx_scale_rule_name(MxScaleRule rule);

}  // namespace fp8q
