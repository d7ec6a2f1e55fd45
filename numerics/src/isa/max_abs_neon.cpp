// NEON kernels of fp8q/numerics/max_abs.hpp: max_abs_kernel.hpp on aarch64 Advanced SIMD.
#include <arm_neon.h>
#include <xsimd/xsimd.hpp>

#include <cstdint>

#include "isa/max_abs_kernel.hpp"

namespace fp8q::detail {
namespace {

using A = xsimd::neon64;

struct HmaxNeon {
  static std::uint16_t hmax(xsimd::batch<std::uint16_t, A> v) { return vmaxvq_u16(v); }
  static std::uint32_t hmax(xsimd::batch<std::uint32_t, A> v) { return vmaxvq_u32(v); }
};

}  // namespace

const MaxAbsKernels* max_abs_kernels_neon() { return &kMaxAbsKernels<A, HmaxNeon>; }

}  // namespace fp8q::detail
