// The row kernels of quantized-input conversion (reencode/rows_body.hpp) compiled for AVX512;
// row_kernels() calls them only on a CPU that has it.
#include "reencode/rows_body.hpp"

namespace fp8q::checkpoint::reencode {
namespace {
struct Avx512;
}  // namespace

const RowKernels* row_kernels_avx512() { return &RowText<Avx512>::kKernels; }

}  // namespace fp8q::checkpoint::reencode
