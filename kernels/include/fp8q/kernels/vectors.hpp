// fp8q/kernels/vectors.hpp: inputs chosen to separate accumulation models, with the results a
// model gives on them (the conformance vectors `fp8q vectors` writes; docs/validation.md).
//
// Row i of A and column i of B form a designed case; case i follows pattern i + seed (mod 10):
//   0 random       random finite codes of each format (f16, bf16: values within 2^-12 .. 2^8)
//   1 cancel       an exactly cancelling pair (+x, -x) at random K, small terms 1 to 30 bits below
//   2 align        one large product, the others 8 to 28 bits below it (the alignment widths)
//   3 tie          2^E plus terms of 2^(E - w - 1) for a w in [9, 24]: a tie at result width w
//   4 subnormal    operands subnormal in their formats, mixed with the smallest normals
//   5 zeros        signed zero products (all -0 half the time), C = +/-0
//   6 specials     NaN, +/-Inf or Inf * 0 among finite products (where the formats have them)
//   7 boundary     a cancelling pair straddling a multiple of L in {2, 4, ..., 128} (steps,
//                  blocks, tiles, groups), small terms elsewhere
//   8 order        one large product then many 23 to 26 bits below (sequential vs exact sums)
//   9 c            C far above or below the products (C's alignment), otherwise random
// The other (row, column) pairs mix the cases. C, when asked for, is any fp32 value near the
// products (zero a quarter of the time). Deterministic: std::mt19937_64 seeded from `seed`,
// raw draws only (no implementation-defined distributions).
#pragma once

#include <cstddef>
#include <cstdint>

#include "fp8q/kernels/fit.hpp"

namespace fp8q {

struct VectorSpec {
  FormatId format_a = FormatId::kE4M3FN, format_b = FormatId::kE4M3FN;
  std::size_t cases = 64;  // M = N = cases
  std::size_t k = 256;
  bool with_c = false;
  std::uint64_t seed = 0;
};
inline constexpr int kVectorPatterns = 10;

// A, B (and C) of the cases, d empty. Throws std::invalid_argument naming the field for a
// format that is not an operand format (fit.hpp), cases or k of 0, or more than 2^26 values of A or B.
DotSamples generate_inputs(const VectorSpec& spec);

// d = the candidate's result for every sample.
void compute_expected(DotSamples& s, const Candidate& c);

}  // namespace fp8q
