// Internal: the arithmetic of the emulated Trainium PE array, written independently of the
// models of numerics/src/accumulation_models.cpp and exact_sum.cpp (tested against them).
//
// A value the array handles is exact: (-1)^negative * sig * 2^exp with a 128-bit integer
// significand, or +/-Inf, or NaN. The only rounding is add_round(): the exact sum of two such
// values rounded once to fp32, nearest-even (what one PSUM / column-accumulator addition of
// the model does). It computes in integers only, so the caller's FP environment (MXCSR
// rounding, FTZ, DAZ) cannot change a bit.
#pragma once

#include <cstdint>

namespace fp8q::trn::detail {

__extension__ typedef unsigned __int128 u128;  // -Wpedantic: __int128 is a GNU extension

struct Exact {
  enum class Kind : std::uint8_t { kFinite, kInf, kNaN };
  Kind kind = Kind::kFinite;
  bool negative = false;
  u128 sig = 0;  // 0 is a signed zero
  int exp = 0;
};

// The exact value of an fp32 number.
Exact exact_of(float x);

// a * b * 2^scale_exp, exact (the significands are < 2^24 each). A NaN operand, Inf * 0 or
// scale_nan give NaN; otherwise an Inf operand gives a signed Inf.
Exact exact_product(float a, float b, int scale_exp = 0, bool scale_nan = false);

// The exact sum of two values (finite ones must have significands below 2^126 once aligned to
// the smaller exponent, which the callers' terms do: products of two FP8 / fp4 values that
// share one scale are within 2^70 of each other). Special values as IEEE: NaN with a NaN or
// with +Inf and -Inf, else Inf with an Inf. An exactly zero result is -0 only when both are -0.
// Throws std::logic_error when the aligned sum would not fit.
Exact exact_add(const Exact& x, const Exact& y);

// fp32(x + y): the exact sum rounded once, nearest-even, overflow to Inf, subnormals kept;
// a NaN result is the canonical 0x7FC00000. Any exponents (x is typically an fp32
// accumulator and y a product or a partition sum).
float add_round(const Exact& x, const Exact& y);

// fp32(x), nearest-even (the same rules as add_round).
float round_f32(const Exact& x);

}  // namespace fp8q::trn::detail
