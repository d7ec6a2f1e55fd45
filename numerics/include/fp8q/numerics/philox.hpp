// fp8q/numerics/philox.hpp: Philox4x32-10, the counter-based generator of stochastic rounding.
//
// Salmon, Moraes, Dror, Shaw, "Parallel random numbers: as easy as 1, 2, 3" (SC 2011).
// A bijection of a 128-bit counter under a 64-bit key: ten rounds of
//   (hi0, lo0) = M0 * c0,  (hi1, lo1) = M1 * c2          (32 x 32 -> 64-bit products)
//   c = (hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0)
//   k += (W0, W1)                                           (Weyl sequence, between rounds)
// Being counter-based, element i's random word depends on (seed, offset + i) alone, never
// on which thread or SIMD lane computes it.
#pragma once

#include <array>
#include <cstdint>

namespace fp8q {

inline constexpr std::uint32_t kPhiloxM0 = 0xD2511F53u;
inline constexpr std::uint32_t kPhiloxM1 = 0xCD9E8D57u;
inline constexpr std::uint32_t kPhiloxW0 = 0x9E3779B9u;  // golden ratio
inline constexpr std::uint32_t kPhiloxW1 = 0xBB67AE85u;  // sqrt(3) - 1

constexpr std::array<std::uint32_t, 4> philox4x32_10(std::array<std::uint32_t, 4> c,
                                                     std::array<std::uint32_t, 2> k) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k[0] += kPhiloxW0;
      k[1] += kPhiloxW1;
    }
    const std::uint64_t p0 = std::uint64_t{kPhiloxM0} * c[0];
    const std::uint64_t p1 = std::uint64_t{kPhiloxM1} * c[2];
    c = {static_cast<std::uint32_t>(p1 >> 32) ^ c[1] ^ k[0], static_cast<std::uint32_t>(p1),
         static_cast<std::uint32_t>(p0 >> 32) ^ c[3] ^ k[1], static_cast<std::uint32_t>(p0)};
  }
  return c;
}

// The 32-bit random word of stochastic rounding for one element:
// word 0 of Philox4x32-10(counter = (lo32(n), hi32(n), 0, 0), key = (lo32(seed), hi32(seed)))
// with n = offset + index.
constexpr std::uint32_t sr_random(std::uint64_t seed, std::uint64_t n) {
  return philox4x32_10({static_cast<std::uint32_t>(n), static_cast<std::uint32_t>(n >> 32), 0, 0},
                       {static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)})[0];
}

}  // namespace fp8q
