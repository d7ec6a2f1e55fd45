// make_widen_params (isa/widen.hpp): the formula's constants, and its check against the table.
#include <bit>
#include <cmath>
#include <cstring>

#include "fp8q/numerics/fp_env.hpp"
#include "isa/widen.hpp"

namespace fp8q::detail {
namespace {

// The formula of widen.hpp for one code, as the kernels compute it.
std::uint32_t widen_f32(std::uint32_t c, const WidenParams& p) {
  const std::uint32_t mag = c & ((1u << p.sign_bit) - 1), sign = (c >> p.sign_bit) & 1;
  const float x = std::bit_cast<float>(mag << p.shift) * p.multiplier;
  return std::bit_cast<std::uint32_t>(x) | sign << 31;
}

// fp16 bits of an fp32 value that fp16 holds exactly (every finite non-special result here).
std::uint32_t f16_of_exact(std::uint32_t f) {
  const std::uint32_t sign = (f >> 16) & 0x8000, a = f & 0x7FFFFFFF;
  if (a == 0) return sign;
  const int e = static_cast<int>(a >> 23) - 127;
  const std::uint32_t frac = (a & 0x7FFFFF) | 0x800000;  // 24 bits with the hidden one
  if (e >= -14) return sign | static_cast<std::uint32_t>(e + 15) << 10 | (frac >> 13 & 0x3FF);
  return sign | frac >> (13 + (-14 - e));  // subnormal: exact by the caller's check
}

std::uint32_t expected(std::uint32_t c, WideOut out, const WidenParams& p) {
  const std::uint32_t f = widen_f32(c, p);
  return out == WideOut::kF32 ? f : out == WideOut::kBF16 ? f >> 16 : f16_of_exact(f);
}

std::uint32_t table_entry(const void* table, WideOut out, std::uint32_t c) {
  std::uint32_t v = 0;
  std::memcpy(&v, static_cast<const unsigned char*>(table) + c * (out == WideOut::kF32 ? 4 : 2),
              out == WideOut::kF32 ? 4 : 2);
  return v;
}

}  // namespace

bool make_widen_params(const Format& from, WideOut out, const void* table, WidenParams& p) {
  if (!from.is_signed || from.bits() > 8 || from.bits() < 2 || from.man_bits > 7 || from.exp_bits > 8) return false;
  ScopedDefaultFpEnv env;  // the check computes the product as the kernels do, FTZ / DAZ off
  p.sign_bit = from.bits() - 1;
  p.shift = 23 - from.man_bits;
  p.multiplier = std::ldexp(1.0f, 127 - from.bias);
  p.table = table;
  const std::uint32_t mags = 1u << p.sign_bit, sign = mags;
  // the largest run of magnitudes from 0 that the formula gets right with either sign (the
  // negative zero code aside, where the format has none)
  const bool neg_zero_ok = expected(sign, out, p) == table_entry(table, out, sign);
  p.special_code = neg_zero_ok ? -1 : static_cast<std::int32_t>(sign);
  std::uint32_t a = 0;
  for (; a < mags; ++a) {
    const bool pos = expected(a, out, p) == table_entry(table, out, a);
    const bool neg = (a == 0 && !neg_zero_ok) || expected(a | sign, out, p) == table_entry(table, out, a | sign);
    if (!pos || !neg) break;
  }
  // above the run, every code is taken from the table (the formula need not hold there); a run
  // that stops short of the top quarter of the magnitudes (a scale, e8m0) is not worth it
  if (a == 0 || a < mags * 3 / 4) return false;
  p.max_mag = a - 1;
  return true;
}

void widen_from_table(const std::uint8_t* in, std::byte* out, std::size_t n, const WidenParams& p, std::size_t bytes) {
  const auto* table = static_cast<const unsigned char*>(p.table);
  for (std::size_t i = 0; i < n; ++i) std::memcpy(out + i * bytes, table + in[i] * bytes, bytes);
}

}  // namespace fp8q::detail
