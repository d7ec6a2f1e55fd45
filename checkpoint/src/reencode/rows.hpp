// Internal: the per-row loops of the quantized-input conversions (reencode.cpp), one text
// (rows_body.hpp) compiled once per ISA. Every step is an exact IEEE operation (a product or
// quotient of fp64 values checked exact, a difference of two values, a comparison) or integer
// arithmetic on the bits, so each ISA's instance gives the generic instance's bits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "fp8q/numerics/format.hpp"
#include "fp8q/numerics/isa.hpp"

namespace fp8q::checkpoint::reencode {

// A signed minifloat's codes decoded by their fields into fp32 (which holds every value of a
// format of 8 bits or fewer exactly): magnitude m = code & magnitude_mask, as fp32 bits
// (m << (23 - man_bits)) + rebias where m >> man_bits (the exponent) is not 0, else the
// subnormal m * subnormal_unit; the sign from bit sign_shift. Irregular codes (NaN, Inf, bits
// above the format's, or a NaN in place of -0) are left to the caller.
struct MinifloatRule {
  std::uint32_t sign_shift = 7, magnitude_mask = 0x7F, man_bits = 3;
  std::uint32_t max_finite = 0x7E;  // the largest regular magnitude
  std::uint32_t nan_code = 0x100;   // the -0 code where it is NaN, else beyond every code
  std::uint32_t code_limit = 0x100;
  std::uint32_t rebias = 0;
  float subnormal_unit = 0;
};
// The rule of an element format, checked against the scalar decoding of every regular code;
// nullopt for a format it does not describe.
std::optional<MinifloatRule> minifloat_rule(const Format& f);

struct RowKernels {
  // out[c] = table[q[c]] * scale[c]: a row of exact values (the table holds a code's value).
  void (*decode)(const std::uint8_t* q, const double* table, const double* scale, std::size_t n, double* out);
  // The same by the rule; returns how many codes are irregular, whose out[c] the caller must set.
  std::size_t (*decode_rule)(const std::uint8_t* q, const MinifloatRule& rule, const double* scale, std::size_t n,
                             double* out);
  // out[c] = the fp32 round-to-odd of x[c] where |x[c]| is 0 or in fp32's normal range
  // (`rounded` counts those that fp32 cannot hold); returns how many x[c] are outside (NaN,
  // Inf, beyond fp32's range or below its normals), whose out[c] the caller must set.
  std::size_t (*to_odd)(const double* x, std::size_t n, float* out, std::uint64_t& rounded);
  // The same under nearest-even (a carry into 2^128 gives Inf): fp32 codes.
  std::size_t (*nearest)(const double* x, std::size_t n, std::uint32_t* out);
  // v[c] = x[c] / s[c]; false when a quotient is not exact (its remainder x - v * s, exact
  // by a fused multiply-add, is not 0).
  bool (*quotients)(const double* x, const double* s, std::size_t n, double* v);
  // Over c: d = |table[q[c]] * s[c] - x[c]| for finite x[c]; changed += (d != 0), largest =
  // max(largest, d).
  void (*changes)(const std::uint8_t* q, const double* table, const double* s, const double* x, std::size_t n,
                  std::uint64_t& changed, double& largest);
  // The same between two rows of values, NaN equal to NaN and a NaN against a number an
  // infinite change.
  void (*differences)(const double* x, const double* y, std::size_t n, std::uint64_t& changed, double& largest);
  // out[b] = max |x[c]| over the b-th run of `run` columns (the last may be shorter); false
  // when any x[c] is NaN or infinite.
  bool (*run_maxima)(const double* x, std::size_t n, std::size_t run, double* out);
};

// The kernels for `isa` (a supported one, as resolve_isa gives), by fp8q's dispatch rule.
const RowKernels& row_kernels(Isa isa);

// The instances (rows_generic.cpp, isa/reencode_rows_<isa>.cpp); null where this target does
// not compile the ISA.
const RowKernels* row_kernels_generic();
#if defined(FP8Q_HAVE_AVX2)
const RowKernels* row_kernels_avx2();
#else
inline const RowKernels* row_kernels_avx2() { return nullptr; }
#endif
#if defined(FP8Q_HAVE_AVX512)
const RowKernels* row_kernels_avx512();
#else
inline const RowKernels* row_kernels_avx512() { return nullptr; }
#endif

}  // namespace fp8q::checkpoint::reencode
