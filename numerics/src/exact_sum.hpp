// Internal: exact sums of fp32 values and products, rounded once (exact_sum.cpp). Every sum is
// computed in integers and rounded by fp8q's generic integer rounding (encode_exact), so no
// host floating-point operation, and so no caller FP environment, takes part in a result. Used
// by the accumulation models (accumulation_models.cpp) and the exact fp32 arithmetic (arith.cpp).
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "fp8q/numerics/convert.hpp"
#include "fp8q/numerics/format.hpp"

namespace fp8q::detail {

inline constexpr std::uint32_t kCanonicalNan = 0x7FC00000u;

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

inline int bit_length(std::uint64_t v) { return 64 - std::countl_zero(v); }

// The exact value of an fp32 number; model_exp is its normalised exponent (-126 when subnormal).
Term term_of(float x);

// a * b * 2^scale_exp, exact; scale_nan marks a NaN MX scale. emin_a, emin_b: the operands'
// formats' emin (model_exp takes a subnormal operand's exponent as emin).
Term product(float a, float b, int emin_a, int emin_b, int scale_exp, bool scale_nan);

// ---- ExactSum: the exact sum of a few terms, rounded once ------------------------------------------
// Finite terms are added as magnitudes into two big integers (positive and negative parts)
// whose last bit weighs 2^lo, lo = the smallest term exponent; the widest possible span
// (fp32 operands, products, E8M0 scales: 2^-552 .. 2^510) fits in kWords words.
class ExactSum {
 public:
  void add(const Term& t);

  // The sum rounded into `to` (fp32, or fp32's layout with fewer mantissa bits), returned as
  // the fp32 value of that code.
  float round(const Format& to, Rounding r) const;

  // The finite sum as a term (the fused model's product groups): zero keeps the IEEE sign
  // (-0 only when every term was -0); otherwise model_exp is the exponent of the leading bit
  // and the term is the sum truncated toward zero to a multiple of 2^quantum, which needs the
  // sum below 2^(quantum + 64). Only for sums without special terms.
  Term truncated(int quantum) const;
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
  Magnitude magnitude() const;
  bool negative_zero() const { return count_ > 0 && all_negative_zero_; }

  static void accumulate(std::array<std::uint64_t, kWords>& acc, std::uint64_t sig, int offset);
  // The 64 bits of `v` starting at bit `pos`.
  static std::uint64_t bits_at(const std::array<std::uint64_t, kWords>& v, int pos);
  // The fp32 value of a code of `to` (fp32's layout with <= 23 mantissa bits: exact in fp32).
  static float decode(std::uint64_t code, const Format& to);

  std::vector<Term> terms_;
  std::size_t count_ = 0;
  bool all_negative_zero_ = true;
  bool nan_ = false, pos_inf_ = false, neg_inf_ = false;
};

// fp32(x + t), nearest-even.
float add_rne(float x, const Term& t);

}  // namespace fp8q::detail
