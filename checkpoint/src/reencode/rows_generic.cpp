// The row kernels (rows_body.hpp) for any CPU, and the choice between the instances.
#include "reencode/rows.hpp"
#include "reencode/rows_body.hpp"

namespace fp8q::checkpoint::reencode {
namespace {
struct Generic;
}  // namespace

const RowKernels* row_kernels_generic() { return &RowText<Generic>::kKernels; }

const RowKernels& row_kernels(Isa isa) {
  return *dispatch(isa, row_kernels_generic, row_kernels_avx2, row_kernels_avx512, kNoKernel);
}

}  // namespace fp8q::checkpoint::reencode
