// The specification of one stretch of measure_error() (error_kernels.hpp), element by
// element in plain C++, and the plain scan for NaN / Inf. Compiled for any x86-64 (and any
// other target); the AVX2 kernels in error_stretch_avx2.cpp must give the same bits.
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

template <float (*Load)(const std::byte*, std::size_t)>
void stretch(const Stretch& s, ErrorStats& st) {
  double max_err = st.max_abs_error;
  std::uint64_t counted = 0, nonfinite = 0, saturated = 0;
  // Element i into the partial sums (sig, err) it is given.
  auto add = [&](std::size_t i, double& sig, double& err) {
    const float xv = Load(s.x, i);
    const float sc = s.scales != nullptr ? s.scales[i] : s.scale;
    const float xh = s.decoded[s.codes[i]] * sc;  // fp32(decode(q) * s): one rounding
    if (!(std::fabs(xv) <= FLT_MAX) || !(std::fabs(xh) <= FLT_MAX)) {  // NaN or Inf
      ++nonfinite;
      return;
    }
    const double x = xv, e = x - static_cast<double>(xh);
    ++counted;
    sig += x * x;
    err += e * e;
    max_err = std::max(max_err, std::fabs(e));
    saturated += std::fabs(x) > s.clip * static_cast<double>(sc) ? 1 : 0;
  };
  double sig0 = 0, sig1 = 0, sig2 = 0, sig3 = 0, err0 = 0, err1 = 0, err2 = 0, err3 = 0;
  std::size_t i = 0;
  for (; i + 4 <= s.n; i += 4) {
    add(i, sig0, err0);
    add(i + 1, sig1, err1);
    add(i + 2, sig2, err2);
    add(i + 3, sig3, err3);
  }
  for (; i < s.n; ++i) add(i, sig0, err0);
  st.count += counted;
  st.nonfinite += nonfinite;
  st.saturated += saturated;
  st.sum_sq_signal += (sig0 + sig1) + (sig2 + sig3);
  st.sum_sq_error += (err0 + err1) + (err2 + err3);
  st.max_abs_error = max_err;
}

}  // namespace

void stretch_generic(std::span<const Stretch> stretches, ErrorStats& st) {
  for (const Stretch& s : stretches) {
    switch (s.dtype) {
      case DType::kF32: stretch<load_f32>(s, st); break;
      case DType::kBF16: stretch<load_bf16>(s, st); break;
      case DType::kF16: stretch<load_f16>(s, st); break;
      default:
        throw std::invalid_argument("measure_error: dtype " + std::string(dtype_name(s.dtype)) + " is not F32, BF16 or F16");
    }
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
