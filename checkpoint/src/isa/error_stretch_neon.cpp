// measure_error()'s NEON kernels: error_stretch_kernel.hpp over xsimd on aarch64 Advanced SIMD,
// 4 floats and 2 doubles a register.
#include <arm_neon.h>
#include <xsimd/xsimd.hpp>

#include <cstdint>
#include <cstring>

#include "isa/error_stretch_kernel.hpp"

namespace fp8q::checkpoint::detail {
namespace {

using A = xsimd::neon64;

struct ExtrasNeon {
  using Fb = xsimd::batch<float, A>;
  using Db = xsimd::batch<double, A>;
  using Ib = xsimd::batch<std::int32_t, A>;
  static uint16x4_t load4_u16(const std::byte* p) { return vld1_u16(reinterpret_cast<const std::uint16_t*>(p)); }
  static Fb load_bf16(const std::byte* p) { return vreinterpretq_f32_u32(vshll_n_u16(load4_u16(p), 16)); }
  static Fb load_f16(const std::byte* p) { return vcvt_f32_f16(vreinterpret_f16_u16(load4_u16(p))); }  // exact
  static Ib load_codes(const std::uint8_t* p) {
    std::uint32_t w;
    std::memcpy(&w, p, 4);
    return vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(vmovl_u8(vcreate_u8(w)))));
  }
  static Fb gather(const float* table, Ib idx) {
    alignas(16) std::int32_t i[4];
    idx.store_aligned(i);
    alignas(16) const float v[4] = {table[i[0]], table[i[1]], table[i[2]], table[i[3]]};
    return Fb::load_aligned(v);
  }
  static Db widen_lo(Fb v) { return vcvt_f64_f32(vget_low_f32(v)); }
  static Db widen_hi(Fb v) { return vcvt_high_f64_f32(v); }
  static int count(xsimd::batch_bool<double, A> m) {
    return static_cast<int>(vaddvq_u64(vshrq_n_u64(static_cast<uint64x2_t>(m), 63)));
  }
};

}  // namespace

const ErrorKernels* error_kernels_neon() { return &ErrorStretchKernel<A, ExtrasNeon>::kKernels; }

}  // namespace fp8q::checkpoint::detail
