// The specification of one stretch of measure_error() (error_kernels.hpp), element by
// element in plain C++, and the plain scan for NaN / Inf. Compiled for any x86-64 (and any
// other target); the vector kernels (isa/error_stretch_kernel.hpp) must give the same bits.
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <vector>

#include "fp8q/numerics/convert.hpp"
#include "pipeline/error_kernels.hpp"

namespace fp8q::checkpoint::detail {
namespace {

// Element i of the original as fp32: exact for F32, BF16 (the top half of an fp32) and F16.
float load_f32(const std::byte* p, std::size_t i) {
  float v;
  std::memcpy(&v, p + 4 * i, 4);
  return v;
}
float load_bf16(const std::byte* p, std::size_t i) {
  std::uint16_t b;
  std::memcpy(&b, p + 2 * i, 2);
  return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
}
float load_f16(const std::byte* p, std::size_t i) {
  static const std::vector<float> table = [] {  // all 65536 codes, decoded exactly once
    std::vector<float> t(65536);
    for (std::uint32_t c = 0; c < 65536; ++c) t[c] = decode_f32(c, kF16);
    return t;
  }();
  std::uint16_t b;
  std::memcpy(&b, p + 2 * i, 2);
  return table[b];
}

// Elements [i, s.n) into p (i a multiple of 4): groups of 4 into partials 0..3, the rest
// into partial 0.
template <float (*Load)(const std::byte*, std::size_t)>
void add_elements_t(const Stretch& s, std::size_t i, Partials& out) {
  Partials p = out;  // a local copy, kept in registers
  auto add = [&](std::size_t j, std::size_t k) {
    const float xv = Load(s.x, j);
    const float sc = s.scales != nullptr ? s.scales[j] : s.scale;
    const float xh = s.decoded[s.codes[j]] * sc;  // fp32(decode(q) * s): one rounding
    if (!(std::fabs(xv) <= FLT_MAX) || !(std::fabs(xh) <= FLT_MAX)) {  // NaN or Inf
      ++p.nonfinite;
      return;
    }
    const double x = xv, e = x - static_cast<double>(xh);
    ++p.counted;
    p.sig[k] += x * x;
    p.err[k] += e * e;
    p.max_err = std::max(p.max_err, std::fabs(e));
    p.saturated += std::fabs(x) > s.clip * static_cast<double>(sc) ? 1 : 0;
  };
  for (; i + 4 <= s.n; i += 4)
    for (std::size_t k = 0; k < 4; ++k) add(i + k, k);
  for (; i < s.n; ++i) add(i, 0);
  out = p;
}

}  // namespace

void add_elements(const Stretch& s, std::size_t i, Partials& p) {
  switch (s.dtype) {
    case DType::kF32: add_elements_t<load_f32>(s, i, p); break;
    case DType::kBF16: add_elements_t<load_bf16>(s, i, p); break;
    case DType::kF16: add_elements_t<load_f16>(s, i, p); break;
    default:
      throw std::invalid_argument("measure_error: dtype " + std::string(dtype_name(s.dtype)) + " is not F32, BF16 or F16");
  }
}

void stretch_generic(std::span<const Stretch> stretches, ErrorStats& st) {
  for (const Stretch& s : stretches) {
    Partials p;
    p.max_err = st.max_abs_error;
    add_elements(s, 0, p);
    close_stretch(p, st);
  }
}

void arithmetic_decode(Stretch& s, int man_bits, int bias) {
  s.decode_shift = -1;
  if (man_bits < 0 || man_bits > 23 || bias < 0 || bias > 127) return;  // decode_pow >= 1: exact
  const int shift = 23 - man_bits;
  const float pow = std::ldexp(1.0f, 127 - bias);
  // special_from: the smallest magnitude whose code is NaN or Inf (128: none).
  std::uint32_t special_from = 128;
  for (std::uint32_t m = 0; m < 128; ++m)
    if (!std::isfinite(s.decoded[m])) {
      special_from = m;
      break;
    }
  for (std::uint32_t q = 0; q < 256; ++q) {
    const std::uint32_t m = q & 0x7F;
    const float want = s.decoded[q];
    if (m >= special_from) {
      if (std::isfinite(want)) return;
      continue;
    }
    const float got = std::bit_cast<float>((q & 0x80) << 24 | m << shift) * pow;
    if (!std::isfinite(want) || std::bit_cast<std::uint32_t>(got) != std::bit_cast<std::uint32_t>(want)) return;
  }
  s.decode_shift = shift;
  s.decode_pow = pow;
  s.special_from = special_from;
}

std::size_t first_nonfinite_generic(const std::byte* data, DType dtype, std::size_t begin, std::size_t end) {
  for (std::size_t i = begin; i < end; ++i) {
    bool bad;
    if (dtype == DType::kF32) {
      std::uint32_t u;
      std::memcpy(&u, data + 4 * i, 4);
      bad = (u & 0x7F800000u) == 0x7F800000u;
    } else {
      std::uint16_t u;
      std::memcpy(&u, data + 2 * i, 2);
      bad = dtype == DType::kBF16 ? (u & 0x7F80u) == 0x7F80u : (u & 0x7C00u) == 0x7C00u;
    }
    if (bad) return i;
  }
  return end;
}

}  // namespace fp8q::checkpoint::detail
