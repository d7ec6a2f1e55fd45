// The row kernels (rows_body.hpp) for any CPU, and the choice between the instances.
#include "reencode/rows.hpp"

#include <array>
#include <bit>
#include <cmath>

#include "fp8q/numerics/convert.hpp"
#include "reencode/rows_body.hpp"

namespace fp8q::checkpoint::reencode {
namespace {
struct Generic;
}  // namespace

const RowKernels* row_kernels_generic() { return &RowText<Generic>::kKernels; }

std::optional<MinifloatRule> minifloat_rule(const Format& f) {
  if (!f.is_signed || f.bits() > 8 || f.man_bits < 1 || f.man_bits > 23 || f.bias > 126 || f.bias + f.man_bits > 148 ||
      f.emax() > 127 || !f.has_zero())
    return std::nullopt;
  MinifloatRule r;
  r.sign_shift = static_cast<std::uint32_t>(f.bits() - 1);
  r.magnitude_mask = static_cast<std::uint32_t>(f.magnitude_mask());
  r.man_bits = static_cast<std::uint32_t>(f.man_bits);
  r.max_finite = static_cast<std::uint32_t>(f.max_finite_code());
  r.nan_code = f.has_negative_zero() ? 0x100u : static_cast<std::uint32_t>(f.sign_bit());
  r.code_limit = 1u << f.bits();
  r.rebias = static_cast<std::uint32_t>(127 - f.bias) << 23;
  r.subnormal_unit = std::ldexp(1.0f, 1 - f.bias - f.man_bits);
  // every code against the scalar decoding: the regular ones bit for bit
  std::array<std::uint8_t, 256> codes{};
  std::array<double, 256> out{}, one{};
  for (std::size_t i = 0; i < 256; ++i) codes[i] = static_cast<std::uint8_t>(i), one[i] = 1.0;
  RowText<Generic>::decode_rule(codes.data(), r, one.data(), 256, out.data());
  for (std::uint32_t i = 0; i < 256; ++i) {
    const bool irregular = (i & r.magnitude_mask) > r.max_finite || i == r.nan_code || i >= r.code_limit;
    if (irregular != !std::isfinite(i < r.code_limit ? decode_f64(i, f) : NAN)) return std::nullopt;
    if (!irregular && std::bit_cast<std::uint64_t>(out[i]) != std::bit_cast<std::uint64_t>(decode_f64(i, f)))
      return std::nullopt;
  }
  return r;
}

const RowKernels& row_kernels(Isa isa) {
  return *dispatch(isa, row_kernels_generic, row_kernels_avx2, row_kernels_avx512, kNoKernel);
}

}  // namespace fp8q::checkpoint::reencode
