// Internal: SimdExtras<xsimd::neon64>, what ops_xsimd.hpp needs beyond xsimd 8.1, on aarch64
// Advanced SIMD (4 x 32-bit lanes).
#pragma once

#include <arm_neon.h>
#include <xsimd/xsimd.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "isa/ops_xsimd.hpp"

template <>
struct SimdExtras<xsimd::neon64> {
  using I = xsimd::batch<std::int32_t, xsimd::neon64>;
  using Fb = xsimd::batch<float, xsimd::neon64>;

  using Count = int;  // a shift count
  static Count count(int n) { return n; }
  static constexpr bool kPacks = false, kInterleavedBf16 = false, kShiftedCodes = false;

  static void prefetch(const void* p) { __builtin_prefetch(p, 0, 3); }
  static I mask_of(xsimd::batch_bool<std::int32_t, xsimd::neon64> b) { return I(vreinterpretq_s32_u32(b)); }
  static Fb is_nan(Fb a) { return Fb(vreinterpretq_f32_u32(vmvnq_u32(vceqq_f32(a, a)))); }  // all ones where a != a
  // fdiv, the IEEE quotient (xsimd 8.1 divides NEON floats by a reciprocal estimate and Newton
  // steps, which is not correctly rounded). A NaN dividend is the result, as x86's vdivps (fdiv
  // gives a signalling NaN divisor priority).
  static Fb div(Fb x, Fb y) { return xsimd::select(x != x, x, Fb(vdivq_f32(x, y))); }
  // ushl shifts by the signed low byte of each count lane, right for negative counts, and
  // gives 0 from a count of +/-32 on; counts are clamped to 32 first (x86's vpsllvd and
  // vpsrlvd give 0 for any count above 31, negative ones included, as unsigned).
  static I shl(I x, int32x4_t n) { return vreinterpretq_s32_u32(vshlq_u32(vreinterpretq_u32_s32(x), n)); }
  static int32x4_t clamp32(I n) { return vreinterpretq_s32_u32(vminq_u32(vreinterpretq_u32_s32(n), vdupq_n_u32(32))); }
  static I sll(I x, int n) { return shl(x, vdupq_n_s32(n)); }
  static I srl(I x, int n) { return shl(x, vdupq_n_s32(-n)); }
  static I sllv(I x, I n) { return shl(x, clamp32(n)); }
  static I srlv(I x, I n) { return shl(x, vnegq_s32(clamp32(n))); }
  static I select(I mask, I yes, I no) { return vbslq_s32(vreinterpretq_u32_s32(mask), yes, no); }
  static bool any(I mask) { return vmaxvq_u32(vreinterpretq_u32_s32(mask)) != 0; }
  static std::int32_t hmax(I a) { return vmaxvq_s32(a); }

  static void mulhilo(I a, I b, I& hi, I& lo) {
    const uint32x4_t ua = vreinterpretq_u32_s32(a), ub = vreinterpretq_u32_s32(b);
    const uint64x2_t p01 = vmull_u32(vget_low_u32(ua), vget_low_u32(ub));
    const uint64x2_t p23 = vmull_high_u32(ua, ub);
    const uint32x4_t w01 = vreinterpretq_u32_u64(p01), w23 = vreinterpretq_u32_u64(p23);
    lo = vreinterpretq_s32_u32(vuzp1q_u32(w01, w23));  // the even 32-bit halves: low words
    hi = vreinterpretq_s32_u32(vuzp2q_u32(w01, w23));
  }

  // 4 unsigned 16-bit values at p, zero-extended to 32 bits.
  static I widen_u16(const unsigned char* p) {
    return vreinterpretq_s32_u32(vmovl_u16(vld1_u16(reinterpret_cast<const std::uint16_t*>(p))));
  }
  // 4 fp16 values at p, exactly in fp32 (fcvtl; FPCR.FZ16 is clear in the default environment).
  static Fb widen_f16(const unsigned char* p) {
    return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(reinterpret_cast<const std::uint16_t*>(p))));
  }
  // The low byte of each lane of p[0 .. parts - 1] (lanes <= 0xFF), 4 * parts bytes to out.
  static void store_low_bytes(std::uint8_t* out, const I* p, std::size_t parts) {
    std::size_t i = 0;
    for (; i + 2 <= parts; i += 2) {
      const uint16x8_t h = vcombine_u16(vmovn_u32(vreinterpretq_u32_s32(p[i])), vmovn_u32(vreinterpretq_u32_s32(p[i + 1])));
      vst1_u8(out + 4 * i, vmovn_u16(h));
    }
    if (i < parts) {
      const uint16x4_t h = vmovn_u32(vreinterpretq_u32_s32(p[i]));
      const std::uint32_t w = vget_lane_u32(vreinterpret_u32_u8(vmovn_u16(vcombine_u16(h, h))), 0);
      std::memcpy(out + 4 * i, &w, 4);
    }
  }
};
