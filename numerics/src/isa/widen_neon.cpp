// NEON decoding kernels (isa/widen.hpp): widen_kernel.hpp over 4-lane vectors, 16 codes a step.
#include <arm_neon.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "isa/widen.hpp"

namespace {

struct OpsWidenNeon {
  using I = int32x4_t;
  using F = float32x4_t;
  using Count = int32x4_t;
  static constexpr std::size_t kLanes = 4;

  static I codes(const std::uint8_t* p) {
    std::uint32_t w;
    std::memcpy(&w, p, 4);
    const uint16x8_t h = vmovl_u8(vreinterpret_u8_u32(vdup_n_u32(w)));
    return vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(h)));
  }
  static I set1(std::int32_t x) { return vdupq_n_s32(x); }
  static F set1f(float x) { return vdupq_n_f32(x); }
  static Count count(int n) { return vdupq_n_s32(n); }
  static I and_(I a, I b) { return vandq_s32(a, b); }
  static I or_(I a, I b) { return vorrq_s32(a, b); }
  static I sll(I a, Count n) { return vshlq_s32(a, n); }
  static I mul(I a, F m) { return vreinterpretq_s32_f32(vmulq_f32(vreinterpretq_f32_s32(a), m)); }
  static I gt(I a, I b) { return vreinterpretq_s32_u32(vcgtq_s32(a, b)); }
  static I eq(I a, I b) { return vreinterpretq_s32_u32(vceqq_s32(a, b)); }
  static bool any(I m) { return vmaxvq_u32(vreinterpretq_u32_s32(m)) != 0; }
  static void store_f32(std::byte* p, I v) { vst1q_u8(reinterpret_cast<std::uint8_t*>(p), vreinterpretq_u8_s32(v)); }
  static void store_bf16(std::byte* p, I a, I b) {
    const uint16x8_t h = vcombine_u16(vshrn_n_u32(vreinterpretq_u32_s32(a), 16), vshrn_n_u32(vreinterpretq_u32_s32(b), 16));
    vst1q_u8(reinterpret_cast<std::uint8_t*>(p), vreinterpretq_u8_u16(h));
  }
  static void store_f16(std::byte* p, I v) {
    vst1_u8(reinterpret_cast<std::uint8_t*>(p), vreinterpret_u8_f16(vcvt_f16_f32(vreinterpretq_f32_s32(v))));
  }
};

// Every header it includes was included above, so this adds only the kernels, with internal linkage.
#include "isa/widen_kernel.hpp"

}  // namespace

namespace fp8q::detail {
WidenFn widen_kernel_neon(WideOut out) { return widen_run_for<OpsWidenNeon>(out); }
}  // namespace fp8q::detail
