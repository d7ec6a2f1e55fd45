// Internal: the SIMD narrowing kernels, written once over an `Ops` type (one per ISA, in
// ops_xsimd.hpp (xsimd: AVX2, NEON) and ops_avx512.hpp; the kernels name no ISA intrinsic or
// type themselves).
// Included only by the ISA translation units, inside an anonymous namespace there, so that no
// inline function compiled with one ISA's flags can be picked by the linker for another.
//
// They compute exactly round_into() of convert.cpp, on the fp32 bit pattern u of
// fp32(x * scale). Nearest-even has its own branch-free form (narrow_nearest.hpp, one fp32
// addition does the rounding); every other mode uses 32-bit integer lanes (narrow_modes.hpp).
//   narrow_common.hpp      constants, scaling, the scalar tail
//   philox_lanes.hpp       Philox4x32-10 per lane, for stochastic rounding
//   narrow_nearest.hpp     nearest-even
//   narrow_modes.hpp       the other rounding modes
//   narrow_bf16_kernel.hpp bf16 under nearest-even in 16-bit lanes
//   narrow_mx.hpp          the MX (block-scaled) drivers
//   narrow_tables.hpp      NarrowKernel: driver choice and dispatch tables
#pragma once

#include "isa/narrow_tables.hpp"
