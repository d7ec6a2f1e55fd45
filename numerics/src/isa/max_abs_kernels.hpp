// Internal: the kernels behind fp8q/numerics/max_abs.hpp, one set per instruction set (the
// baseline in max_abs.cpp, AVX2 in max_abs_avx2.cpp). Inputs may have any alignment. Not
// installed.
#pragma once

#include <cstddef>
#include <cstdint>

#include "fp8q/numerics/isa.hpp"

namespace fp8q::detail {

struct MaxAbsKernels {
  std::uint16_t (*bits16)(const void* p, std::size_t n);  // max of (2-byte pattern & 0x7FFF)
  std::uint32_t (*bits32)(const void* p, std::size_t n);  // max of (4-byte pattern & 0x7FFFFFFF)
};

// nullptr where this binary has no AVX2 build of them.
const MaxAbsKernels* max_abs_kernels_avx2();
// The kernels for `isa` (AVX-512 machines run the AVX2 ones: a max is bound by the loads).
const MaxAbsKernels& max_abs_kernels(Isa isa);

}  // namespace fp8q::detail
