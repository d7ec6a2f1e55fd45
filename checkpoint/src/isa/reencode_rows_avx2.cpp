// The row kernels of quantized-input conversion (reencode/rows_body.hpp) compiled for AVX2;
// row_kernels() calls them only on a CPU that has it.
#include "reencode/rows_body.hpp"

namespace fp8q::checkpoint::reencode {
namespace {
struct Avx2;
}  // namespace

const RowKernels* row_kernels_avx2() { return &RowText<Avx2>::kKernels; }

}  // namespace fp8q::checkpoint::reencode
