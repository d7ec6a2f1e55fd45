// NEON kernels of the fused cast + transpose (transpose_kernels.hpp): transpose_kernel.hpp over
// 16-byte vectors; the copy is memcpy (no streaming store is used here).
#include <arm_neon.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "isa/transpose_kernels.hpp"

namespace {

struct OpsTransposeNeon {
  using V = uint8x16_t;
  static constexpr std::size_t kWidth = 16;
  static constexpr std::size_t kTb = fp8q::detail::kTileColumnRows;

  static V load(const std::uint8_t* p) { return vld1q_u8(p); }
  static V zip_lo8(V a, V b) { return vzip1q_u8(a, b); }
  static V zip_hi8(V a, V b) { return vzip2q_u8(a, b); }
  static V zip_lo16(V a, V b) { return vreinterpretq_u8_u16(vzip1q_u16(vreinterpretq_u16_u8(a), vreinterpretq_u16_u8(b))); }
  static V zip_hi16(V a, V b) { return vreinterpretq_u8_u16(vzip2q_u16(vreinterpretq_u16_u8(a), vreinterpretq_u16_u8(b))); }
  static V zip_lo32(V a, V b) { return vreinterpretq_u8_u32(vzip1q_u32(vreinterpretq_u32_u8(a), vreinterpretq_u32_u8(b))); }
  static V zip_hi32(V a, V b) { return vreinterpretq_u8_u32(vzip2q_u32(vreinterpretq_u32_u8(a), vreinterpretq_u32_u8(b))); }
  template <std::size_t j>
  static void store_pair(V d, std::uint8_t* tb) {
    vst1_u8(tb + j * kTb, vget_low_u8(d));
    vst1_u8(tb + (j + 1) * kTb, vget_high_u8(d));
  }
  static void prefetch(const std::uint8_t* p) { __builtin_prefetch(p); }
};

// Every header it includes was included above, so this adds only the kernels, with internal
// linkage.
#include "isa/transpose_kernel.hpp"

void copy_neon(std::uint8_t* dst, const std::uint8_t* src, std::size_t n, bool) { std::memcpy(dst, src, n); }

constexpr fp8q::detail::TransposeKernels kNeon{&TransposeKernel<OpsTransposeNeon>::tile_column, &copy_neon};

}  // namespace

namespace fp8q::detail {
const TransposeKernels* transpose_kernels_neon() { return &kNeon; }
}  // namespace fp8q::detail
