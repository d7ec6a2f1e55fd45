// Internal: the reference GEMM on a range of rows (the fast path falls back to it for models
// without a vectorised kernel).
#pragma once

#include <cstddef>

#include "fp8q/kernels/gemm.hpp"

namespace fp8q::detail {

// Writes rows [m0, m1) of the fp32 result (canonical NaN, before any bf16 conversion) to
// out[(m - m0) * N + n]. The arguments must have passed check_gemm.
void reference_rows(const GemmArgs& g, const GemmOptions& o, std::size_t m0, std::size_t m1, float* out);

}  // namespace fp8q::detail
