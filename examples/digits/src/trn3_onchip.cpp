#include "trn3_onchip.hpp"

#include <algorithm>

namespace digits::trn3 {

std::uint64_t tiles(std::uint64_t K) { return (K + 511) / 512; }

Slot onchip_slot(KLayout layout, std::uint64_t k) {
  const std::uint64_t t = k / 512, r = k % 512;
  if (layout == KLayout::kWrapX) return {t, r % 128, r / 128};  // r = 128c + p
  return {t, r / 4, r % 4};                                      // r = 4p + c
}

std::uint64_t group_of_k(KLayout layout, std::uint64_t k) {
  const Slot s = onchip_slot(layout, k);
  return 16 * s.tile + s.partition / 8;
}

std::uint64_t groups(KLayout layout, std::uint64_t K) {
  if (layout == KLayout::k1x32) return (K + 31) / 32;
  // wrapX: full tiles have 16 groups; in the last tile group g holds a real k iff its
  // smallest one, 8g (slot 0), is below r = K mod 512.
  const std::uint64_t r = K % 512;
  return 16 * (K / 512) + std::min<std::uint64_t>(16, (r + 7) / 8);
}

std::uint64_t code_offset(KLayout layout, std::uint64_t K, std::uint64_t N, std::uint64_t k, std::uint64_t n) {
  const Slot s = onchip_slot(layout, k);
  const std::uint64_t T = tiles(K);
  return ((s.partition * T + s.tile) * N + n) * 4 + s.slot;
}

std::uint64_t scale_offset(KLayout layout, std::uint64_t K, std::uint64_t N, std::uint64_t k, std::uint64_t n) {
  const Slot s = onchip_slot(layout, k);
  const std::uint64_t g = s.partition / 8;            // group within the tile, 0..15
  const std::uint64_t partition = (g / 4) * 32 + g % 4;  // 4 scale rows at each quadrant's base
  return (partition * tiles(K) + s.tile) * N + n;
}

}  // namespace digits::trn3
