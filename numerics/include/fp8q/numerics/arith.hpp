// fp8q/numerics/arith.hpp: fp32 arithmetic that scale computations need, correctly rounded
// (nearest-even) with integers, so that no caller FP environment (rounding mode, FTZ, DAZ)
// can change a result.
#pragma once

#include <cstdint>

namespace fp8q {

// fp32(n / d) and fp32(a * b) for finite positive operands (subnormals included); the result
// may be +Inf (overflow) or a subnormal / zero (underflow), as IEEE nearest-even gives.
float divide_rne(float n, float d);
float multiply_rne(float a, float b);

// fp32(x * 2^e) for finite x, one nearest-even rounding (exact unless the result leaves
// fp32's normal range).
float ldexp_rne(float x, int e);

// fp32(x + y) and fp32(x * y) for any operands: IEEE nearest-even, subnormals kept, NaN
// results canonical (0x7FC00000), equal to the hardware's with MXCSR 0x1F80 (the GEMM
// epilogues and the accumulation models use them).
float add_f32_rne(float x, float y);
float mul_f32_rne(float x, float y);

// floor(log2(|x|)) of a finite nonzero fp32, from its bits (subnormals by their leading bit).
int floor_log2(float x);
// Whether |x| (finite, nonzero) is a power of two.
bool is_power_of_two(float x);
// 2^e as fp32 for -149 <= e <= 127 (subnormal below -126).
float exp2i(int e);

}  // namespace fp8q
