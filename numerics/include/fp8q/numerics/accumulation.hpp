// fp8q/numerics/accumulation.hpp: accumulation models, the specification of a dot product
// (docs/numerics.md section 8), and a scalar reference for each.
//
// Products of two 8-bit (or fp6/fp4) values are exact in fp32, so what a matmul returns is
// fixed by the order and the precision of its additions. A model names both. Every model
// starts its accumulator at the accumulator input C (`DotInput::c`, an fp32 value; +0 for a
// plain dot product), as an MMA instruction computes D = A B + C, and adds the K products
// a_k * b_k (times 2^(e_a + e_b) of their MX group when MX scales are given) as follows:
//
//   fp32_sequential       acc = C; acc = fp32(acc + p_k), k = 0, 1, ..., nearest-even.
//   exact_block:B         acc = C; t_j = fp32(exact sum of the products of block j = [jB, jB + B));
//                         acc = fp32(acc + t_j) for j = 0, 1, ... (OCP MX dot product: B = 32).
//   systolic:T            psum = C; per K tile j of T: t_j = fp32-sequential sum from +0 of the
//                         tile's products in K (partition) order; psum = fp32(psum + t_j)
//                         (Trainium PE array: T = 128; fp8 double-row mode on Trainium2: 256).
//   fused:n:f:rtz|rne     NVIDIA tensor cores. Per step of n products plus the carried C
//     [:groupG][:promoteP] (C_0 = the accumulator input C: Hopper's wgmma carries D between
//   fused:n:alignA:resultR:rtz|rne[:groupG][:promoteP]
//                         instructions, so C_(s+1) = step(C_s, products of step s) and D = the
//                         last C; C takes part in the first step's alignment like a product and
//                         is truncated with them): each product is exact with exponent
//                         e_a + e_b (+ MX scale exponents); an operand's exponent is that of
//                         its normalised form, or its format's emin when it is subnormal in
//                         that format (`DotInput::emin_a/b`). With :groupG the step's products
//                         are first added exactly in consecutive groups of G (the last may be
//                         shorter); a group's term is that exact sum, with the exponent of its
//                         leading bit (floor(log2 |sum|)); G = 1 (the default) keeps each
//                         product as its own term. E = the largest exponent among the nonzero
//                         terms and a nonzero C; each term is truncated toward zero to a
//                         multiple of 2^(E - A) (the alignment width A); the terms are added
//                         exactly; the sum is rounded (rtz or rne) to the fp32 layout with R
//                         mantissa bits (the result width R; same exponent range as fp32),
//                         which is the next C:
//                           C' = round_R( sum_t trunc(t * 2^(A - E)) * 2^(E - A) ).
//                         fused:n:f is A = R = f. Hopper FP8 is fused:32:13:rtz (checked
//                         against 5000/5000 H100 results per format).
//                         With :promoteP (P a multiple of n), the fused accumulator restarts
//                         from +0 every P products and each partial is added into a plain fp32
//                         accumulator that starts at C: acc = C; acc = fp32(acc + partial)
//                         (DeepSeek-V3: P = 128; C is the CUDA-core accumulator's input).
//                         With K = 0 no step runs: D = C (unrounded).
//   trainium3_mx:wrapx|1x32
//                         nc_matmul_mx contracts 512 K per instruction: 128 partitions x 4
//                         packed elements. K is split into instructions of 512 (the last is
//                         zero-padded). In instruction i with base k0 = 512 i, partition p holds
//                           wrapx: k = k0 + p + 128 c,   1x32: k = k0 + 4 p + c,   c = 0..3.
//                         s_p = the exact sum of partition p's 4 scaled products; the column
//                         accumulator t = +0, then per partition p = 0..127 in order
//                         t = fp32(t + s_p); then psum = fp32(psum + t) per instruction, from
//                         psum = C (the PSUM tile's value before an accumulate=True matmul).
//                         The parts AWS does not document are the named assumptions of
//                         Trainium3MxAssumptions below.
//
// Special values, in every model: a NaN operand, Inf * 0, or a NaN MX scale (E8M0 0xFF) make
// the product NaN; a sum with a NaN, or with both +Inf and -Inf, is NaN; otherwise a sum with
// an Inf is that Inf. Results that are NaN are the canonical fp32 quiet NaN 0x7FC00000.
// An exact sum that is zero is +0 unless every term is -0 (IEEE, round to nearest). A nonzero
// sum that rounds to zero keeps its sign: MX-scaled products can lie below 2^-150, and a
// model whose rounding adds a negative one to +0 returns -0 (fp32_sequential, fused); the
// systolic and Trainium models add each column sum (from +0) to PSUM. So with C = -0 and no
// MX scales the result is -0 exactly when every product is -0 (fp32_sequential, exact_block,
// fused) or K = 0, and never otherwise in systolic and trainium3_mx (their column sums start
// at +0); with MX scales a negative sum that rounds to zero counts as -0 too. A NaN C gives
// NaN, an infinite C that infinity unless a product is NaN or the opposite infinity. Overflow: a nearest-even fp32 rounding gives +/-Inf, a toward-zero
// rounding gives the largest finite value of the target layout (IEEE 754-2019 7.4).
//
// The references compute every sum exactly in integers and round with fp8q's integer
// rounding (numerics/convert.hpp), so the caller's FP environment (MXCSR rounding, FTZ, DAZ)
// cannot change a bit.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "fp8q/numerics/policy.hpp"

namespace fp8q {

enum class AccumKind : std::uint8_t {
  kFp32Sequential,
  kExactBlock,
  kSystolic,
  kFused,
  kTrainium3Mx,
};

// Which K indices share a Trainium3 partition (and so an exact partial sum).
enum class Trn3Layout : std::uint8_t {
  kWrapX,  // the 4 packed elements of a partition are 128 apart in K
  k1x32,   // consecutive K: dst[p, 4f + c] = src[4p + c, f]
};

// Assumptions about Trainium3's PE array that AWS does not document. Each is a parameter so
// that one measurement on the chip can correct it; the defaults are docs/numerics.md section 8's
// reading. Named in model names only when they differ from the default (see model_name()).
struct Trainium3MxAssumptions {
  // A1: a partition's 4 scaled products are summed exactly (no intermediate rounding).
  //     false: they are added left to right in fp32 (nearest-even), starting from +0.
  bool exact_partition_sum = true;
  // A2: the partition sum enters the column accumulator with one rounding,
  //     t = fp32(t + s_p). false: s_p is first rounded to fp32, then t = fp32(t + fp32(s_p)).
  bool single_rounding_add = true;

  constexpr bool operator==(const Trainium3MxAssumptions&) const = default;
};

struct AccumulationModel {
  AccumKind kind = AccumKind::kFp32Sequential;
  int block = 0;       // exact_block: B; systolic: T; fused: n (products per step)
  int align_bits = 0;  // fused: A, the bits kept below the largest exponent when the terms are aligned
  int result_bits = 0; // fused: R, the mantissa bits the normalised (rounded) result of a step keeps
  Rounding rounding = Rounding::kTowardZero;  // fused: kTowardZero or kNearestEven
  int group = 1;       // fused: G, products added exactly in groups of G before the alignment
  int promote = 0;     // fused: restart into a plain fp32 accumulator every P products; 0 = never
  Trn3Layout layout = Trn3Layout::kWrapX;     // trainium3_mx
  Trainium3MxAssumptions trn3{};              // trainium3_mx

  constexpr bool operator==(const AccumulationModel&) const = default;

  static constexpr AccumulationModel fp32_sequential() { return {}; }
  static constexpr AccumulationModel exact_block(int b) { return {.kind = AccumKind::kExactBlock, .block = b}; }
  static constexpr AccumulationModel systolic(int t) { return {.kind = AccumKind::kSystolic, .block = t}; }
  // fused:n:f: alignment and result widths both f.
  static constexpr AccumulationModel fused(int n, int frac_bits, Rounding r, int promote = 0) {
    return fused_widths(n, frac_bits, frac_bits, r, 1, promote);
  }
  static constexpr AccumulationModel fused_widths(int n, int align, int result, Rounding r, int group = 1,
                                                  int promote = 0) {
    return {.kind = AccumKind::kFused, .block = n, .align_bits = align, .result_bits = result, .rounding = r,
            .group = group, .promote = promote};
  }
  static constexpr AccumulationModel trainium3_mx(Trn3Layout layout, Trainium3MxAssumptions a = {}) {
    return {.kind = AccumKind::kTrainium3Mx, .layout = layout, .trn3 = a};
  }
  // Hopper FP8 (wgmma): fused(32, 13, toward zero).
  static constexpr AccumulationModel hopper() { return fused(32, 13, Rounding::kTowardZero); }
};

// Products per Trainium3 MX instruction (128 partitions x 4) and elements per MX group.
inline constexpr int kTrn3MxInstructionK = 512;
inline constexpr int kMxGroup = 32;

// Throws std::invalid_argument naming the field when a parameter is out of range:
// block >= 1 (fused n <= 4096), fused 1 <= align_bits <= 60, 1 <= result_bits <= 23,
// 1 <= group <= n, rounding rtz or rne, promote a positive multiple of n or 0.
void validate(const AccumulationModel& m);

// Names: "fp32_sequential", "exact_block:32", "systolic:128", "fused:32:13:rtz",
// "fused:32:13:rtz:promote128", "fused:32:align24:result23:rtz:group4" (the widths as
// alignA:resultR only when they differ; :groupG only for G > 1, before :promoteP),
// "trainium3_mx:wrapx", "trainium3_mx:1x32"; Trainium3
// assumptions that differ from the default append ":rounded_partition_sum" (A1 false) and
// ":round_then_add" (A2 false). parse_model(model_name(m)) == m.
std::string model_name(const AccumulationModel& m);
// Parses a name; std::nullopt when it is not one, std::invalid_argument when a parameter is
// out of range (the message names it).
std::optional<AccumulationModel> parse_model(std::string_view name);

// ---- scalar reference dot products ----------------------------------------------------------
// One dot product's inputs. a and b hold the K operands as exact fp32 values (every FP8, fp6,
// fp4 value is exact in fp32). mx_scale_a / mx_scale_b, when not empty, hold E8M0 codes
// (2^(code - 127); 0xFF is NaN), one per group of kMxGroup consecutive K (ceil(K / 32) of
// them): product k is then a_k * b_k * 2^(e_a(k / 32) + e_b(k / 32)), exactly.
struct DotInput {
  std::span<const float> a;
  std::span<const float> b;
  std::span<const std::uint8_t> mx_scale_a{};
  std::span<const std::uint8_t> mx_scale_b{};
  // The smallest normal exponent of the operands' formats (fused only: a subnormal operand
  // has this exponent, e.g. -6 for e4m3fn, -14 for e5m2). fp32's -126 by default.
  int emin_a = -126;
  int emin_b = -126;
  // The accumulator input C: the value the model's accumulator starts at (any fp32 value; in
  // the fused model its exponent is that of its normalised form, -126 when subnormal).
  float c = 0.0f;
};

// The model's result for one dot product. Throws std::invalid_argument when a and b differ
// in length or a scale span has the wrong length.
float reference_dot(const AccumulationModel& m, const DotInput& in);

}  // namespace fp8q
