// Builds without the AVX2 translation unit (non-x86 hosts) have no AVX2 kernel.
#include "seq.hpp"

namespace fp8q::detail {
SeqKernel seq_kernel_avx2() { return nullptr; }
}  // namespace fp8q::detail
