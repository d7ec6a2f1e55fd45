// The narrowing kernels instantiated over OpsLanes16 (ops_lanes16.hpp): the template paths of
// the AVX-512 build, on any AVX2 machine. Compiled with -mavx2 -mf16c, like
// numerics/src/isa/narrow_avx2.cpp, for the 16-bit bf16 kernel (Ops16Avx2, which the AVX-512
// build's MX driver also uses, and Ops16Pair, its plain conversion's 32 lanes); nothing else is
// in this file, so no inline function compiled with these flags reaches the rest of the test
// binary (every kernel header sits in an anonymous namespace).
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "fp8q/numerics/convert.hpp"
#include "fp8q/numerics/philox.hpp"
#include "isa/narrow.hpp"

namespace {
#include "isa/ops16_avx2.hpp"
#include "ops16_pair.hpp"
#include "ops_lanes16.hpp"
#include "isa/narrow_kernel.hpp"
}  // namespace

namespace fp8q::test {
detail::NarrowFn narrow_kernel_lanes16(detail::Source s, Rounding r) {
  return NarrowKernel<OpsLanes16, Ops16Avx2, Ops16Pair>::table(s, r);
}
detail::MxFn mx_kernel_lanes16(detail::Source s, Rounding r) { return NarrowKernel<OpsLanes16, Ops16Avx2>::mx_table(s, r); }
}  // namespace fp8q::test
