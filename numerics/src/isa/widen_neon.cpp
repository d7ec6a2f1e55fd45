// NEON decoding kernels (isa/widen.hpp) over xsimd: the formula on 4-lane batches, 16 codes per
// step; a step holding a special code takes all its codes from the table (rare in data).
#include <arm_neon.h>
#include <xsimd/xsimd.hpp>

#include "isa/widen.hpp"

namespace fp8q::detail {
namespace {

using A = xsimd::neon64;
using I = xsimd::batch<std::int32_t, A>;
using Fb = xsimd::batch<float, A>;

// 16 codes at p, zero-extended to four batches of 32-bit lanes.
void widen_bytes(const std::uint8_t* p, I (&c)[4]) {
  const uint8x16_t b = vld1q_u8(p);
  const uint16x8_t lo = vmovl_u8(vget_low_u8(b)), hi = vmovl_high_u8(b);
  c[0] = vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(lo)));
  c[1] = vreinterpretq_s32_u32(vmovl_high_u16(lo));
  c[2] = vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(hi)));
  c[3] = vreinterpretq_s32_u32(vmovl_high_u16(hi));
}

template <WideOut kOut>
void run(const std::uint8_t* in, std::byte* out, std::size_t n, const WidenParams& p) {
  constexpr std::size_t kBytes = kOut == WideOut::kF32 ? 4 : 2;
  const I mag_mask((1 << p.sign_bit) - 1), max_mag(static_cast<std::int32_t>(p.max_mag)), special(p.special_code);
  const I sign_bit(static_cast<std::int32_t>(0x80000000u));
  const int32x4_t shift = vdupq_n_s32(p.shift), sign_shift = vdupq_n_s32(31 - p.sign_bit);
  const Fb multiplier(p.multiplier);
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    I c[4], f[4];
    widen_bytes(in + i, c);
    I odd(0);
    for (int j = 0; j < 4; ++j) {
      const I mag = c[j] & mag_mask;
      const Fb x = xsimd::bitwise_cast<Fb>(I(vshlq_s32(mag, shift))) * multiplier;
      f[j] = xsimd::bitwise_cast<I>(x) | (I(vshlq_s32(c[j], sign_shift)) & sign_bit);
      odd = odd | xsimd::select((mag > max_mag) || (c[j] == special), I(-1), I(0));
    }
    std::byte* o = out + i * kBytes;
    if (vmaxvq_u32(vreinterpretq_u32_s32(odd)) != 0) {  // a special code: the table, for all 16
      widen_from_table(in + i, o, 16, p, kBytes);
      continue;
    }
    for (int j = 0; j < 4; ++j) {
      if constexpr (kOut == WideOut::kF32) {
        f[j].store_unaligned(reinterpret_cast<std::int32_t*>(o) + 4 * j);
      } else if constexpr (kOut == WideOut::kBF16) {  // the high halves (the low ones are 0)
        vst1_u16(reinterpret_cast<std::uint16_t*>(o) + 4 * j, vshrn_n_u32(vreinterpretq_u32_s32(f[j]), 16));
      } else {  // exact: every non-special result is an fp16 value
        vst1_u16(reinterpret_cast<std::uint16_t*>(o) + 4 * j,
                 vreinterpret_u16_f16(vcvt_f16_f32(vreinterpretq_f32_s32(f[j]))));
      }
    }
  }
  widen_from_table(in + i, out + i * kBytes, n - i, p, kBytes);
}

}  // namespace

WidenFn widen_kernel_neon(WideOut out) {
  switch (out) {
    case WideOut::kF32: return &run<WideOut::kF32>;
    case WideOut::kBF16: return &run<WideOut::kBF16>;
    case WideOut::kF16: return &run<WideOut::kF16>;
  }
  return nullptr;
}

}  // namespace fp8q::detail
