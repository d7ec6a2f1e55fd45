// fp8q/numerics/format.hpp: one parametric descriptor for every floating-point format.
//
// Sources: OCP 8-bit Floating Point Specification (OFP8) rev 1.0; OCP Microscaling Formats
// (MX) v1.0; IEEE 754-2019; AWS Neuron NKI dtypes (Trainium2's float8_e4m3 is the
// IEEE-style E4M3 with range +/-240).
//
// A format is (sign bit?, exponent bits, mantissa bits, bias, how the top codes are used).
// Every named format below is an instance; every conversion in fp8q is one generic
// algorithm over this descriptor (numerics/convert.hpp), never a per-format copy.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace fp8q {

// How a format spends its special codes.
enum class Specials : std::uint8_t {
  kIeee,           // exponent all ones: mantissa 0 is Inf, anything else NaN (fp32, e5m2, e4m3)
  kFiniteNanOnes,  // "fn": no Inf; only S.1111.111 (all magnitude bits set) is NaN (e4m3fn)
  kFiniteNanUz,    // "fnuz": no Inf, no -0; the negative-zero code 0x80 is the one NaN
  kFinite,         // no Inf, no NaN: every code is a number (MX fp6 / fp4)
  kExponentOnly,   // e8m0: unsigned, no mantissa, no zero; code 0xFF is NaN
};

struct Format {
  std::string_view name;
  int exp_bits;
  int man_bits;
  int bias;
  bool is_signed;
  Specials specials;

  constexpr bool operator==(const Format&) const = default;

  // ---- layout ---------------------------------------------------------------------------
  constexpr int bits() const { return (is_signed ? 1 : 0) + exp_bits + man_bits; }
  // Bytes one element occupies in memory (fp6/fp4 take one code per byte, in the low bits).
  constexpr int storage_bytes() const { return bits() <= 8 ? 1 : bits() / 8; }
  constexpr std::uint64_t sign_bit() const {
    return is_signed ? std::uint64_t{1} << (exp_bits + man_bits) : 0;
  }
  constexpr std::uint64_t magnitude_mask() const {
    return (std::uint64_t{1} << (exp_bits + man_bits)) - 1;
  }

  // ---- special values -------------------------------------------------------------------
  constexpr bool has_inf() const { return specials == Specials::kIeee; }
  constexpr bool has_nan() const { return specials != Specials::kFinite; }
  constexpr bool has_zero() const { return specials != Specials::kExponentOnly; }
  constexpr bool has_negative_zero() const {
    return is_signed && specials != Specials::kFiniteNanUz;
  }
  // NaN carries the input's sign where the format has signed NaNs.
  constexpr bool has_signed_nan() const {
    return is_signed && (specials == Specials::kIeee || specials == Specials::kFiniteNanOnes);
  }

  // Smallest exponent of a normal number. Biased exponent 0 holds the subnormals, except in
  // e8m0, where code 0 is the normal number 2^-bias.
  constexpr int emin() const { return has_zero() ? 1 - bias : -bias; }

  // Magnitude code of the largest finite value.
  constexpr std::uint64_t max_finite_code() const {
    const std::uint64_t all = magnitude_mask();
    switch (specials) {
      case Specials::kIeee:
        return all - (std::uint64_t{1} << man_bits);  // top exponent minus one, mantissa all ones
      case Specials::kFiniteNanOnes:
      case Specials::kExponentOnly:
        return all - 1;  // the all-ones code is NaN
      case Specials::kFiniteNanUz:
      case Specials::kFinite:
        return all;
    }
    return all;
  }
  // Magnitude code of +Inf (kIeee only).
  constexpr std::uint64_t inf_code() const { return magnitude_mask() - ((std::uint64_t{1} << man_bits) - 1); }
  // The canonical quiet NaN, positive. IEEE formats set the top mantissa bit (for e4m3 this is
  // S.1111.100); "fn" uses all ones; "fnuz" uses 0x80; e8m0 uses 0xFF.
  constexpr std::uint64_t canonical_nan() const {
    switch (specials) {
      case Specials::kIeee:
        return inf_code() | (std::uint64_t{1} << (man_bits - 1));
      case Specials::kFiniteNanOnes:
      case Specials::kExponentOnly:
        return magnitude_mask();
      case Specials::kFiniteNanUz:
        return sign_bit();
      case Specials::kFinite:
        return 0;  // no NaN: see NanPolicy
    }
    return 0;
  }

  // ---- numeric_limits-style facts (as doubles: exact for every format here) -----------------
  // Value of a magnitude code: b = code >> m, f = code & (2^m - 1);
  //   subnormal (b == 0 and the format has zero): f * 2^(emin - m)
  //   otherwise:                                  (2^m + f) * 2^(b - bias - m)
  constexpr double magnitude_value(std::uint64_t code) const {
    const std::uint64_t b = code >> man_bits;
    const std::uint64_t f = code & ((std::uint64_t{1} << man_bits) - 1);
    if (b == 0 && has_zero()) return static_cast<double>(f) * pow2(emin() - man_bits);
    return static_cast<double>((std::uint64_t{1} << man_bits) + f) *
           pow2(static_cast<int>(b) - bias - man_bits);
  }
  constexpr double max_finite() const { return magnitude_value(max_finite_code()); }
  constexpr double min_normal() const { return pow2(emin()); }
  // Smallest positive value: a subnormal, or 2^-bias for e8m0 (which has none).
  constexpr double denorm_min() const {
    return has_zero() ? pow2(emin() - man_bits) : pow2(emin());
  }
  // Distance from 1 to the next larger value.
  constexpr double epsilon() const { return pow2(-man_bits); }
  // Exponent of the largest finite value (MX's emax_elem).
  constexpr int emax() const {
    return static_cast<int>(max_finite_code() >> man_bits) - bias;
  }

  static constexpr double pow2(int e) {
    double r = 1.0;
    for (; e > 0; --e) r *= 2.0;
    for (; e < 0; ++e) r *= 0.5;
    return r;
  }
};

// ---- the formats ---------------------------------------------------------------------------
// name, exponent bits, mantissa bits, bias, signed, specials
inline constexpr Format kF64{"f64", 11, 52, 1023, true, Specials::kIeee};
inline constexpr Format kF32{"f32", 8, 23, 127, true, Specials::kIeee};
inline constexpr Format kBF16{"bf16", 8, 7, 127, true, Specials::kIeee};
inline constexpr Format kF16{"f16", 5, 10, 15, true, Specials::kIeee};
inline constexpr Format kE4M3FN{"e4m3fn", 4, 3, 7, true, Specials::kFiniteNanOnes};
inline constexpr Format kE4M3{"e4m3", 4, 3, 7, true, Specials::kIeee};
inline constexpr Format kE5M2{"e5m2", 5, 2, 15, true, Specials::kIeee};
inline constexpr Format kE4M3FNUZ{"e4m3fnuz", 4, 3, 8, true, Specials::kFiniteNanUz};
inline constexpr Format kE5M2FNUZ{"e5m2fnuz", 5, 2, 16, true, Specials::kFiniteNanUz};
inline constexpr Format kE3M4{"e3m4", 3, 4, 3, true, Specials::kIeee};
inline constexpr Format kE8M0{"e8m0", 8, 0, 127, false, Specials::kExponentOnly};
inline constexpr Format kE2M3{"e2m3", 2, 3, 1, true, Specials::kFinite};
inline constexpr Format kE3M2{"e3m2", 3, 2, 3, true, Specials::kFinite};
inline constexpr Format kE2M1{"e2m1", 2, 1, 1, true, Specials::kFinite};

// A closed set of identifiers, so a format can be a run-time value (CLI, file headers) and
// a `switch` can be checked for completeness.
enum class FormatId : std::uint8_t {
  kF32, kF64, kBF16, kF16,
  kE4M3FN, kE4M3, kE5M2, kE4M3FNUZ, kE5M2FNUZ, kE3M4, kE8M0, kE2M3, kE3M2, kE2M1,
};

inline constexpr std::array<FormatId, 14> kAllFormats = {
    FormatId::kF32,    FormatId::kF64,      FormatId::kBF16,     FormatId::kF16,
    FormatId::kE4M3FN, FormatId::kE4M3,     FormatId::kE5M2,     FormatId::kE4M3FNUZ,
    FormatId::kE5M2FNUZ, FormatId::kE3M4,   FormatId::kE8M0,     FormatId::kE2M3,
    FormatId::kE3M2,   FormatId::kE2M1};

// The low-precision formats of docs/numerics.md section 1 (everything but the source formats).
inline constexpr std::array<FormatId, 10> kNarrowFormats = {
    FormatId::kE4M3FN, FormatId::kE4M3, FormatId::kE5M2, FormatId::kE4M3FNUZ,
    FormatId::kE5M2FNUZ, FormatId::kE3M4, FormatId::kE8M0, FormatId::kE2M3,
    FormatId::kE3M2,   FormatId::kE2M1};

constexpr const Format& format_of(FormatId id) {
  switch (id) {
    case FormatId::kF32: return kF32;
    case FormatId::kF64: return kF64;
    case FormatId::kBF16: return kBF16;
    case FormatId::kF16: return kF16;
    case FormatId::kE4M3FN: return kE4M3FN;
    case FormatId::kE4M3: return kE4M3;
    case FormatId::kE5M2: return kE5M2;
    case FormatId::kE4M3FNUZ: return kE4M3FNUZ;
    case FormatId::kE5M2FNUZ: return kE5M2FNUZ;
    case FormatId::kE3M4: return kE3M4;
    case FormatId::kE8M0: return kE8M0;
    case FormatId::kE2M3: return kE2M3;
    case FormatId::kE3M2: return kE3M2;
    case FormatId::kE2M1: return kE2M1;
  }
  return kF32;
}

// Whether `to` holds every value of `from`: every finite value exactly (with the sign of its
// zero), and Inf and NaN where `from` has them. A value sig * 2^k of `from` (sig < 2^(m+1),
// k >= emin - m) lies on `to`'s grid iff to.m >= from.m (normal in `to`) and to's smallest
// quantum 2^(emin - m) divides it (subnormal in `to`), and it is finite in `to` iff it is at
// most to's max finite. Such a conversion is exact under every policy (numerics.md section 2).
constexpr bool is_widening(const Format& from, const Format& to) {
  return (to.is_signed || !from.is_signed) && (to.has_zero() || !from.has_zero()) &&
         (to.has_negative_zero() || !from.has_negative_zero()) && (to.has_inf() || !from.has_inf()) &&
         (to.has_nan() || !from.has_nan()) && to.man_bits >= from.man_bits &&
         to.emin() - to.man_bits <= from.emin() - from.man_bits && to.max_finite() >= from.max_finite();
}

// Parses a format name as the CLI spells it ("e4m3fn", "bf16", ...).
std::optional<FormatId> parse_format(std::string_view name);

// ---- the table of docs/numerics.md section 1, checked at compile time --------------------------------
namespace format_checks {
constexpr double p2(int e) { return Format::pow2(e); }
// e4m3fn: 0b0'1111'110 = 1.75 * 2^8 = 448; 0b0'1111'111 is NaN.
static_assert(kE4M3FN.max_finite_code() == 0b0'1111'110 && kE4M3FN.max_finite() == 448);
static_assert(kE4M3FN.min_normal() == p2(-6) && kE4M3FN.denorm_min() == p2(-9));  // 1/512
static_assert(kE4M3FN.canonical_nan() == 0x7F && kE4M3FN.epsilon() == 0.125);
// e4m3 (IEEE-style, Trainium2): 0b0'1110'111 = 1.875 * 2^7 = 240; 0b0'1111'000 = Inf.
static_assert(kE4M3.max_finite_code() == 0b0'1110'111 && kE4M3.max_finite() == 240);
static_assert(kE4M3.inf_code() == 0x78 && kE4M3.canonical_nan() == 0x7C);
static_assert(kE4M3.min_normal() == p2(-6) && kE4M3.denorm_min() == p2(-9));
// e5m2: 0b0'11110'11 = 1.75 * 2^15 = 57344; Inf 0x7C; quiet NaN 0x7E.
static_assert(kE5M2.max_finite() == 57344 && kE5M2.inf_code() == 0x7C && kE5M2.canonical_nan() == 0x7E);
static_assert(kE5M2.min_normal() == p2(-14) && kE5M2.denorm_min() == p2(-16) && kE5M2.epsilon() == 0.25);
// fnuz: bias one larger, 0x80 is the only NaN.
static_assert(kE4M3FNUZ.max_finite() == 240 && kE4M3FNUZ.min_normal() == p2(-7) && kE4M3FNUZ.denorm_min() == p2(-10));
static_assert(kE5M2FNUZ.max_finite() == 57344 && kE5M2FNUZ.min_normal() == p2(-15) && kE5M2FNUZ.denorm_min() == p2(-17));
static_assert(kE4M3FNUZ.canonical_nan() == 0x80 && kE5M2FNUZ.canonical_nan() == 0x80);
// e3m4: 0b0'110'1111 = 1.9375 * 2^3 = 15.5.
static_assert(kE3M4.max_finite() == 15.5 && kE3M4.min_normal() == 0.25 && kE3M4.denorm_min() == p2(-6));
// e8m0: code c is 2^(c - 127); 0xFE = 2^127, 0x00 = 2^-127, 0xFF NaN.
static_assert(kE8M0.max_finite() == p2(127) && kE8M0.min_normal() == p2(-127) && kE8M0.denorm_min() == p2(-127));
static_assert(kE8M0.canonical_nan() == 0xFF && kE8M0.max_finite_code() == 0xFE);
// MX fp6 / fp4: every code is a number.
static_assert(kE2M3.max_finite() == 7.5 && kE2M3.min_normal() == 1 && kE2M3.denorm_min() == 0.125);
static_assert(kE3M2.max_finite() == 28 && kE3M2.min_normal() == 0.25 && kE3M2.denorm_min() == 0.0625);
static_assert(kE2M1.max_finite() == 6 && kE2M1.min_normal() == 1 && kE2M1.denorm_min() == 0.5);
// MX emax_elem (docs/numerics.md section 5): e4m3fn 8, e5m2 15, e2m3 2, e3m2 4, e2m1 2.
static_assert(kE4M3FN.emax() == 8 && kE5M2.emax() == 15 && kE2M3.emax() == 2 && kE3M2.emax() == 4 && kE2M1.emax() == 2);
// The wide formats describe themselves too.
static_assert(kF32.max_finite() == 3.4028234663852886e38 && kF32.denorm_min() == p2(-149));
static_assert(kBF16.max_finite() == 3.3895313892515355e38 && kF16.max_finite() == 65504);
static_assert(kF16.storage_bytes() == 2 && kE2M1.storage_bytes() == 1 && kF64.storage_bytes() == 8);
// Widening: every 8-bit format into f32; e5m2 is f16's top byte; e8m0's 2^-127 is a bf16
// subnormal but below f16's range; neither of bf16 / f16 holds the other; e4m3fn has a bit
// more than e5m2; fnuz has no -0 for e4m3fn's.
static_assert(is_widening(kE5M2, kF32) && is_widening(kE5M2, kF16) && is_widening(kE4M3, kBF16));
static_assert(is_widening(kF32, kF64) && is_widening(kBF16, kF32) && is_widening(kF16, kF32) && is_widening(kF32, kF32));
static_assert(is_widening(kE8M0, kBF16) && !is_widening(kE8M0, kF16) && is_widening(kE2M1, kE4M3FN));
static_assert(!is_widening(kBF16, kF16) && !is_widening(kF16, kBF16) && !is_widening(kE4M3FN, kE5M2));
static_assert(!is_widening(kF32, kE5M2) && !is_widening(kE4M3FN, kE4M3FNUZ) && !is_widening(kE4M3FNUZ, kE4M3FN));
}  // namespace format_checks

}  // namespace fp8q
