// trn3_onchip.hpp: the inverse of the Trainium3 nc_matmul_mx operand placement, written from
// the formulas of docs/trainium3_layouts.md section 3 (not from fp8q's quant code).
//
// A weight W [out, in] is the K x N operand with K = in (the contraction) and N = out. With
// T = ceil(K / 512) tiles of 128 partitions x 4 packed slots:
//   wrapX:  k = 512t + 128c + p        1x32:  k = 512t + 4p + c
//   MX group of k: b = 16t + p/8 (8 partitions x 4 slots of one column)
//   code byte  ((p*T + t)*N + n)*4 + c           (codes[128][T][N][4])
//   scale of group b = 16t + g: partition (g/4)*32 + g%4, byte (partition*T + t)*N + n
// K beyond `in` is padding (code 0x00), never read here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace digits::trn3 {

enum class KLayout { kWrapX, k1x32 };

struct Slot {
  std::uint64_t tile, partition, slot;
};
Slot onchip_slot(KLayout layout, std::uint64_t k);
std::uint64_t group_of_k(KLayout layout, std::uint64_t k);   // b = 16t + p/8
std::uint64_t groups(KLayout layout, std::uint64_t K);       // groups holding a real k
std::uint64_t tiles(std::uint64_t K);                        // ceil(K / 512)

// The byte offsets in the on-chip images of the code of (k, n) and of its group's scale.
std::uint64_t code_offset(KLayout layout, std::uint64_t K, std::uint64_t N, std::uint64_t k, std::uint64_t n);
std::uint64_t scale_offset(KLayout layout, std::uint64_t K, std::uint64_t N, std::uint64_t k, std::uint64_t n);

}  // namespace digits::trn3
