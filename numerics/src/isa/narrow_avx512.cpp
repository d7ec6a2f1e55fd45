// AVX-512 F + BW narrowing kernels. Compiled with -mavx512f -mavx512bw (and nothing else is).
#include <immintrin.h>

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
#include "isa/ops16_avx2.hpp"    // Ops16Avx2: MX blocks of bf16 at 256 bits (AVX-512 implies AVX2)
#include "isa/ops16_avx512.hpp"  // Ops16Avx512: the plain bf16 conversion at 512 bits
#include "isa/ops_avx512.hpp"
#include "isa/narrow_kernel.hpp"
}  // namespace

namespace fp8q::detail {
NarrowFn narrow_kernel_avx512(Source s, Rounding r) { return NarrowKernel<OpsAvx512, Ops16Avx2, Ops16Avx512>::table(s, r); }
MxFn mx_kernel_avx512(Source s, Rounding r) { return NarrowKernel<OpsAvx512, Ops16Avx2>::mx_table(s, r); }
}  // namespace fp8q::detail
