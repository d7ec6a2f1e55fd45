#include "fp8q/numerics/arith.hpp"

#include <bit>
#include <stdexcept>
#include <string>
#include <utility>

#include "exact_sum.hpp"
#include "fp8q/numerics/convert.hpp"

namespace fp8q {
namespace {

// |x| of a finite nonzero fp32 as (sig, exp), |x| = sig * 2^exp, 2^23 <= sig < 2^24
// (subnormals normalised).
std::pair<std::uint64_t, int> normalised(float x) {
  const std::uint32_t abs_bits = bits_of(x) & 0x7FFFFFFFu;
  if (abs_bits == 0 || abs_bits >= 0x7F800000u)
    throw std::invalid_argument("expected a finite nonzero fp32, got bits " + std::to_string(abs_bits));
  const std::uint32_t field = abs_bits >> 23;
  const std::uint64_t sig = field == 0 ? (abs_bits & 0x7FFFFF) : ((abs_bits & 0x7FFFFF) | 0x800000);
  const int exp = (field == 0 ? 1 : static_cast<int>(field)) - 127 - 23;
  const int shift = std::countl_zero(sig) - 40;  // bring the top bit to bit 23
  return {sig << shift, exp - shift};
}

constexpr ConvertOptions kRneToF32{.rounding = Rounding::kNearestEven, .overflow = Overflow::kInfOrNan};

float to_f32(std::uint64_t sig, int exp) {
  return float_of(static_cast<std::uint32_t>(encode_exact(false, sig, exp, kF32, kRneToF32).code));
}

}  // namespace

// A 64 / 24-bit division keeps 40 quotient bits; the remainder is or-ed into the last one
// (round to odd), which leaves the nearest-even rounding to 24 bits unchanged.
float divide_rne(float n, float d) {
  const auto [n_sig, n_exp] = normalised(n);
  const auto [d_sig, d_exp] = normalised(d);
  const std::uint64_t num = n_sig << 40;  // < 2^64
  const std::uint64_t q = num / d_sig, r = num % d_sig;
  return to_f32(q | (r != 0 ? 1 : 0), n_exp - d_exp - 40);
}

float multiply_rne(float a, float b) {  // the 48-bit product is exact
  const auto [a_sig, a_exp] = normalised(a);
  const auto [b_sig, b_exp] = normalised(b);
  return to_f32(a_sig * b_sig, a_exp + b_exp);
}

float ldexp_rne(float x, int e) {
  if ((bits_of(x) & 0x7FFFFFFFu) == 0) return x;  // +/-0 (bits, not ==: DAZ would call subnormals 0)
  const auto [sig, exp] = normalised(x);
  const int clamped = e < -400 ? -400 : e > 400 ? 400 : e;  // beyond that: 0 or Inf either way
  const float r = to_f32(sig, exp + clamped);
  return (bits_of(x) >> 31) != 0 ? -r : r;
}

// Any operands: the exact sum or product (exact_sum.hpp), rounded once.
float add_f32_rne(float x, float y) { return detail::add_rne(x, detail::term_of(y)); }

float mul_f32_rne(float x, float y) {
  detail::ExactSum s;
  s.add(detail::product(x, y, -126, -126, 0, false));
  return s.round(kF32, Rounding::kNearestEven);
}

int floor_log2(float x) { return normalised(x).second + 23; }
bool is_power_of_two(float x) { return normalised(x).first == (std::uint64_t{1} << 23); }

float exp2i(int e) {
  if (e < -149 || e > 127) throw std::invalid_argument("2^" + std::to_string(e) + " is not an fp32 value");
  return to_f32(1, e);
}

}  // namespace fp8q
