// Builds without the AVX-512 translation unit (non-x86 hosts) have no AVX-512 trainium3_mx kernel.
#include "trn3mx.hpp"

namespace fp8q::detail {
Trn3MxColumns trn3mx_columns_avx512() { return nullptr; }
}  // namespace fp8q::detail
