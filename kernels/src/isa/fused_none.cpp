// Builds without the AVX2 translation unit (non-x86 hosts) have no AVX2 fused kernel.
#include "fused.hpp"

namespace fp8q::detail {
FuKernel fused_kernel_avx2() { return nullptr; }
}  // namespace fp8q::detail
