// Internal: the trainium3_mx micro-kernel's interface, shared by its driver
// (fast_trainium3_mx.cpp) and each ISA's translation unit. Not installed.
//
// One instruction tile (512 K) for a block of rows and one panel of columns. Operands are in
// partition-slot order (position 4p + c is partition p's slot c, whichever K the layout puts
// there), decoded to fp64 and multiplied by their MX scale (exact); slots past K hold -0 in A
// and +0 in B, whose product -0 leaves every sum unchanged. Per output lane:
//   s_p  = sum_c a[4p + c] * b[4p + c]                  exact in fp64 (the driver's bound)
//   t    = fp32(t + s_p) for p = 0..parts-1, from t = +0, one rounding
//   psum = fp32(psum + t)                                PSUM
// t + s_p is rounded to fp32 through its fp64 sum x: fp32(x) is the correct rounding unless the
// fp64 addition was inexact and rounded onto an fp32 midpoint (x's 29 low bits 1 then 28 zeros)
// or, when the scales allow bits below 2^-149, below fp32's normal range (rounding is monotonic
// and the midpoints are fp64 numbers, so x and the exact sum round alike otherwise); a step where
// any lane is such a suspect takes the exact form: a two-sum r + e = t + s_p, r rounded to odd at 53 bits (one
// ulp toward e where e != 0 and r's last bit is even), then to fp32 (Boldo & Melquiond, IEEE
// TC 57(4), 2008: 53 >= 24 + 2). Both forms give the same bits; a text whose ISA rounds each
// instruction its own way (AVX-512) rounds every step to odd from the sums rounded up and down
// instead (trn3mx_kernel.hpp, add_odd). docs/numerics.md, "Fast paths".
#pragma once

#include <cstddef>

namespace fp8q::detail {

inline constexpr std::size_t kTrn3Slots = 512, kTrn3Parts = 128;

struct Trn3MxTile {
  const double* a = nullptr;  // rows x kTrn3Slots, row-major
  const double* b = nullptr;  // kTrn3Slots x the kernel's cols, row-major
  std::size_t rows = 0;       // a multiple of the kernel's rows
  std::size_t parts = 0;      // partitions to run, 1..kTrn3Parts
  float* psum = nullptr;      // psum[r * ldp + j], updated in place
  std::size_t ldp = 0;
  bool tiny = false;  // sums may have bits below 2^-149: suspect every x below 2^-126 too
};

struct Trn3MxKernel {
  void (*run)(const Trn3MxTile& tile) = nullptr;  // nullptr: not available on this CPU
  std::size_t rows = 1, cols = 1;                  // rows per register tile, columns per panel
};

Trn3MxKernel trn3mx_kernel_generic();
#if defined(FP8Q_HAVE_AVX2)
Trn3MxKernel trn3mx_kernel_avx2();  // run == nullptr where the CPU lacks AVX2 + FMA
#else
inline Trn3MxKernel trn3mx_kernel_avx2() { return {}; }  // not compiled for this target
#endif
#if defined(FP8Q_HAVE_AVX512)
Trn3MxKernel trn3mx_kernel_avx512();  // run == nullptr where the CPU lacks AVX-512
#else
inline Trn3MxKernel trn3mx_kernel_avx512() { return {}; }  // not compiled for this target
#endif

}  // namespace fp8q::detail
