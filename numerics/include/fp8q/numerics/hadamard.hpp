// fp8q/numerics/hadamard.hpp: the 16-point random Hadamard transform that NVFP4 training applies
// to the weight-gradient GEMM's operands along their contraction (docs/numerics.md section 5,
// "The random Hadamard transform").
//
// Per block of 16 consecutive values x_0..x_15: y_j = fp32((1/4) sum_i H_ji s_i x_i), with
// H_ji = (-1)^popcount(i & j) (Sylvester's H_16) and s_i = -1 where bit i of sign_mask is set,
// else +1: the exact sum rounded once to fp32, nearest-even. (1/4) H diag(s) is orthogonal, so the
// same transform on both operands of a product along its contraction leaves the product unchanged.
// A zero sum is +0 unless every term (+-x_i) is -0. A NaN in, or +Inf with -Inf, gives the
// canonical NaN 0x7FC00000. No caller FP environment changes a bit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace fp8q {

inline constexpr std::size_t kHadamardBlock = 16;

// out = the transform of every block of x; x.size() a multiple of 16 and out.size() == x.size()
// (else std::invalid_argument naming the sizes). `threads` splits the blocks; the bits do not
// depend on it.
void hadamard16(std::span<const float> x, std::span<float> out, std::uint16_t sign_mask, int threads = 1);

}  // namespace fp8q
