// Builds without the AVX2 translation unit (non-x86 hosts) have no AVX2 exact_block kernel.
#include "exact_block.hpp"

namespace fp8q::detail {
XbKernel exact_block_kernel_avx2() { return nullptr; }
}  // namespace fp8q::detail
