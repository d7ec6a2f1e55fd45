// AVX2 + F16C narrowing kernels: the ISA-independent kernel text over xsimd (ops_xsimd.hpp) with
// the AVX2 extras, and the 16-bit bf16 kernel's operations (ops16_avx2.hpp). Compiled with the
// avx2 flags (and nothing else is).
#include <immintrin.h>
#include <xsimd/xsimd.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "fp8q/numerics/convert.hpp"
#include "fp8q/numerics/philox.hpp"
#include "isa/narrow.hpp"

// Every header below was included above, so these includes only add the code to the
// anonymous namespace: internal linkage, no ODR clash with another ISA's copy.
namespace {
#include "isa/ops_xsimd.hpp"
#include "isa/simd_extras_avx2.hpp"
#include "isa/ops16_avx2.hpp"
#include "isa/narrow_kernel.hpp"
using OpsAvx2 = OpsXsimd<xsimd::avx2>;
}  // namespace

namespace fp8q::detail {
NarrowFn narrow_kernel_avx2(Source s, Rounding r) { return NarrowKernel<OpsAvx2, Ops16Avx2>::table(s, r); }
MxFn mx_kernel_avx2(Source s, Rounding r) { return NarrowKernel<OpsAvx2, Ops16Avx2>::mx_table(s, r); }
}  // namespace fp8q::detail
