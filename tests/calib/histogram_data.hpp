// Adversarial data for the histogram tests (histogram_paths_test.cpp, hist_lanes16_test.cpp):
// fp32 patterns from raw generator bits, the same on every platform, and their bf16 halves.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <random>
#include <vector>

namespace fp8q::calib::test {

inline constexpr std::uint32_t kSpecials[] = {
    0x7F800000u, 0xFF800000u,              // +Inf, -Inf
    0x7F800001u, 0xFF80FFFFu,              // NaNs in the +/-Inf tally slot (0x7F80)
    0x7FC00000u, 0xFFFFFFFFu, 0x7F810000u,  // quiet, all-ones and just-above-the-slot NaNs
    0x00000000u, 0x80000000u,              // +0, -0
    0x00000001u, 0x8000FFFFu, 0x00010000u,  // subnormals in and out of tally slot 0
    0x007FFFFFu, 0x00800000u,              // largest subnormal, smallest normal
    0x7F7FFFFFu, 0xFF7FFFFFu,              // +/- largest finite
};

// The element kinds, mixed per stretch of `stretch` elements.
inline std::vector<std::uint32_t> adversarial(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<std::uint32_t> x(n);
  const std::size_t stretch = 3000 + rng() % 3000;  // not a multiple of any block
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t s = i / stretch;
    const std::uint32_t r = rng();
    std::uint32_t u;
    switch (s % 5) {
      case 0:  // growing: each stretch a few binades above the last (mid-stream range growth)
        u = (std::min<std::uint32_t>(90 + 6 * static_cast<std::uint32_t>(s), 250) << 23) - (r & 0x03FFFFFFu);
        break;
      case 1:  // half zeros: switches the tally kernels
        u = (r & 1) ? (r & 0x80000000u) : (0x3C000000u + (r >> 8 & 0x00FFFFFFu));
        break;
      case 2:  // one value, with a few others
        u = (r & 0xF) ? 0x3FC00000u : (r & 0xBFFFFFFFu);
        break;
      case 3:  // any finite pattern, any sign; now and then a special
        u = (r % 97 == 0) ? kSpecials[(r >> 8) % std::size(kSpecials)] : (r & 0xFF7FFFFFu);
        break;
      default:  // small: subnormals and tiny normals
        u = (r & 0x80000000u) | (r >> 4 & 0x01FFFFFFu);
        break;
    }
    x[i] = u;
  }
  return x;
}

inline std::vector<float> as_f32(const std::vector<std::uint32_t>& b) {
  std::vector<float> f(b.size());
  for (std::size_t i = 0; i < b.size(); ++i) f[i] = std::bit_cast<float>(b[i]);
  return f;
}
// bf16 = the top half of each pattern (truncation keeps every special: Inf, NaN payloads with
// a top-half bit, zeros and subnormals); the NaNs whose payload is only in the low half become
// Inf, which the definition then counts as Inf, as it should.
inline std::vector<std::uint16_t> as_bf16(const std::vector<std::uint32_t>& b) {
  std::vector<std::uint16_t> h(b.size());
  for (std::size_t i = 0; i < b.size(); ++i) h[i] = static_cast<std::uint16_t>(b[i] >> 16);
  return h;
}
inline std::vector<std::uint32_t> widened(const std::vector<std::uint16_t>& h) {
  std::vector<std::uint32_t> b(h.size());
  for (std::size_t i = 0; i < h.size(); ++i) b[i] = std::uint32_t{h[i]} << 16;
  return b;
}

// ReLU-like data: stretches of different zero densities (0.4%, 50%, 94%, every element), so the
// tally switches between its plain and zero-counting kernels and the zero-counting one sees few,
// half and almost all of its elements kept; the zeros are +0 and -0, and among them sit the
// nonzero values that share slot 0 with zero (fp32 subnormals below 2^-133), subnormals just
// above it, the largest finite value mid-stream (range growth), and now and then Inf or NaN.
inline std::vector<std::uint32_t> relu_like(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<std::uint32_t> x(n);
  const std::size_t stretch = 4096 + 1000 + rng() % 3000;
  constexpr std::uint32_t kZeroIn256[] = {1, 128, 240, 256};  // zeros per 256 elements
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t s = i / stretch;
    const std::uint32_t r = rng();
    const bool zero = (r & 0xFF) < kZeroIn256[s % std::size(kZeroIn256)];
    std::uint32_t u;
    if (zero) u = (r >> 8) % 11 == 0 ? 0x80000000u : 0u;
    else if ((r >> 8) % 53 == 0) u = (r >> 16) & 0xFFFFu;                  // q == 0 but not zero (fp32)
    else if ((r >> 8) % 59 == 0) u = 0x00010000u + ((r >> 12) & 0xFFFFu);  // q == 1
    else if ((r >> 8) % 997 == 0) u = kSpecials[(r >> 16) % std::size(kSpecials)];
    else u = 0x3A000000u + ((r >> 6) & 0x07FFFFFFu) * (1 + s % 3);          // 2^-11 .. 2^5ish
    x[i] = u;
  }
  if (n > 3) x[n / 3] = 0x7F7FFFFFu;  // the range grows to the top mid-stream
  return x;
}

}  // namespace fp8q::calib::test
