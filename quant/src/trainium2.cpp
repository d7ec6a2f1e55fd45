#include "fp8q/quant/trainium2.hpp"

#include <array>
#include <stdexcept>
#include <string>

#include "fp8q/numerics/arith.hpp"
#include "fp8q/numerics/convert.hpp"

namespace fp8q {
namespace {

struct Entry {
  std::uint8_t code;
  bool inexact;
  bool nan;
};

// The 256 answers, from the scalar reference: e4m3(fp32(v * 0.5)), nearest-even. v * 0.5 is
// exact in fp32, so the only rounding is into e4m3.
const std::array<Entry, 256>& table() {
  static const std::array<Entry, 256> t = [] {
    std::array<Entry, 256> r{};
    ConvertOptions half;
    half.scale = 0.5f;
    for (unsigned c = 0; c < 256; ++c) {
      const std::uint64_t code = convert_one(c, kE4M3FN, kE4M3, half).code;
      const bool nan = (c & 0x7F) == 0x7F;
      const bool exact = nan || decode_f64(code, kE4M3) * 2 == decode_f64(c, kE4M3FN);
      r[c] = {static_cast<std::uint8_t>(code), !exact, nan};
    }
    return r;
  }();
  return t;
}

}  // namespace

Trainium2Reencoding reencode_e4m3fn_for_trainium2(std::span<const std::uint8_t> in, std::span<std::uint8_t> out) {
  if (in.size() != out.size())
    throw std::invalid_argument("trainium2 re-encoding: " + std::to_string(in.size()) + " codes in, " +
                                std::to_string(out.size()) + " out");
  const auto& t = table();
  Trainium2Reencoding r;
  for (std::size_t i = 0; i < in.size(); ++i) {
    const Entry& e = t[in[i]];
    out[i] = e.code;
    r.inexact += e.inexact;
    r.nans += e.nan;
  }
  return r;
}

void double_scale_inv(std::span<const float> scale_inv, std::span<float> out) {
  if (scale_inv.size() != out.size())
    throw std::invalid_argument("double_scale_inv: " + std::to_string(scale_inv.size()) + " scales in, " +
                                std::to_string(out.size()) + " out");
  for (std::size_t i = 0; i < scale_inv.size(); ++i) {
    if ((bits_of(scale_inv[i]) & 0x7FFFFFFFu) >= 0x7F800000u)
      throw std::invalid_argument("scale_inv[" + std::to_string(i) + "] is not finite");
    const float d = ldexp_rne(scale_inv[i], 1);
    if ((bits_of(d) & 0x7FFFFFFFu) == 0x7F800000u)
      throw std::overflow_error("scale_inv[" + std::to_string(i) + "] = " + std::to_string(scale_inv[i]) +
                                " cannot be doubled in fp32");
    out[i] = d;
  }
}

}  // namespace fp8q
