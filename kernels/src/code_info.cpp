#include "code_info.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

#include "fp8q/numerics/convert.hpp"

namespace fp8q::detail {

std::array<CodeInfo, 256> code_info(FormatId id) {
  const Format& f = format_of(id);
  std::array<CodeInfo, 256> t{};
  for (std::size_t c = 0; c < 256; ++c) {
    if ((c >> f.bits()) != 0) continue;  // not a code of f (check_gemm rejects it)
    CodeInfo& i = t[c];
    i.value = decode_f32(c, f);
    i.special = !std::isfinite(i.value);
    i.nonzero = !i.special && i.value != 0.0f;
    if (!i.nonzero) continue;
    // Every element-format value is a normal fp32 number: sig (24 bits, leading one) * 2^(e - 23).
    const std::uint32_t u = bits_of(i.value);
    const int e = static_cast<int>((u >> 23) & 0xFF) - 127;
    const std::uint32_t sig = (u & 0x7FFFFFu) | 0x800000u;
    i.top = e;
    i.low = e - 23 + std::countr_zero(sig);
    i.model_exp = std::max(e, f.emin());
  }
  return t;
}

double e8m0_value(std::uint8_t code) {
  return code == 0xFF ? std::nan("") : std::ldexp(1.0, static_cast<int>(code) - 127);
}

int ceil_log2(std::uint64_t n) { return n <= 1 ? 0 : 64 - std::countl_zero(n - 1); }

}  // namespace fp8q::detail
