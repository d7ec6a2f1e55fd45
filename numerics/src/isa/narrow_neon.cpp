// aarch64 Advanced SIMD narrowing kernels: the ISA-independent kernel text over xsimd
// (ops_xsimd.hpp) and the NEON extras. Compiled only for aarch64 targets.
#include <arm_neon.h>
#include <xsimd/xsimd.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "fp8q/numerics/convert.hpp"
#include "fp8q/numerics/philox.hpp"
#include "isa/narrow.hpp"

// As narrow_avx2.cpp: the kernel headers go into the anonymous namespace (internal linkage).
namespace {
#include "isa/ops_xsimd.hpp"
#include "isa/simd_extras_neon.hpp"
#include "isa/narrow_kernel.hpp"
using OpsNeon = OpsXsimd<xsimd::neon64>;
}  // namespace

namespace fp8q::detail {
NarrowFn narrow_kernel_neon(Source s, Rounding r) { return NarrowKernel<OpsNeon>::table(s, r); }
MxFn mx_kernel_neon(Source s, Rounding r) { return NarrowKernel<OpsNeon>::mx_table(s, r); }
}  // namespace fp8q::detail
