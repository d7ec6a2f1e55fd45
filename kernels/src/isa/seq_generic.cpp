// The portable fp32-sequential micro-kernel (any CPU). Compiled with -ffp-contract=off, so
// `acc + a * b` stays a rounded multiply then a rounded add.
#include "seq.hpp"

namespace fp8q::detail {
namespace {

void kernel(std::size_t kc, const float* ap, const float* bp, const float* init, std::size_t ldi, float* out,
            std::size_t ldo, bool add) {
  float acc[kMr][kNr];
  for (std::size_t i = 0; i < kMr; ++i)
    for (std::size_t j = 0; j < kNr; ++j) acc[i][j] = init != nullptr ? init[i * ldi + j] : 0.0f;
  for (std::size_t k = 0; k < kc; ++k, ap += kMr, bp += kNr)
    for (std::size_t i = 0; i < kMr; ++i) {
      const float a = ap[i];
      for (std::size_t j = 0; j < kNr; ++j) {
        const float p = a * bp[j];
        acc[i][j] = acc[i][j] + p;
      }
    }
  for (std::size_t i = 0; i < kMr; ++i)
    for (std::size_t j = 0; j < kNr; ++j) out[i * ldo + j] = add ? out[i * ldo + j] + acc[i][j] : acc[i][j];
}

}  // namespace

SeqKernel seq_kernel_generic() { return &kernel; }

}  // namespace fp8q::detail
