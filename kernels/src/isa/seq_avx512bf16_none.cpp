// Builds without the AVX-512 BF16 translation unit (non-x86 hosts) have no bf16 pair kernel.
#include "seq_bf16.hpp"

namespace fp8q::detail {
PairKernel seq_kernel_avx512bf16() { return nullptr; }
}  // namespace fp8q::detail
