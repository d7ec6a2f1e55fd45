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
//
// Where the operands of a tile make every fp64 t + s_p exact (trn3_sums), x = fp64(t + s_p) is
// the exact sum and fp32(x) is the single rounding: no check and no directed rounding.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>

namespace fp8q::detail {

inline constexpr std::size_t kTrn3Slots = 512, kTrn3Parts = 128;

// The exponent range of the nonzero finite decoded operands of a tile (each a multiple of 2^low
// and below 2^(top + 1) in magnitude), and whether any operand is Inf or NaN.
struct Trn3Range {
  int low = 1 << 20, top = -(1 << 20);
  bool special = false;
  bool any() const { return top >= low; }
  void add(double x) {
    const std::uint64_t b = std::bit_cast<std::uint64_t>(x) & 0x7FFFFFFFFFFFFFFFu;
    const int e = static_cast<int>(b >> 52);
    if (e == 0x7FF) special = true;
    if (b == 0 || e == 0x7FF) return;
    top = std::max(top, e == 0 ? -1023 : e - 1023);
    low = std::min(low, (e == 0 ? -1074 : e - 1075) + std::countr_zero(b | (std::uint64_t{1} << 52)));
  }
};

// How a tile forms fp32(t + s_p), chosen by the driver from the tile's operands (trn3_sums).
enum class Trn3Sums : std::uint8_t {
  kChecked,       // x = fp64(t + s_p) may be inexact: checked, or rounded to odd
  kCheckedTiny,   // as kChecked, and sums may have bits below 2^-149
  kExact,         // every x is exact: fp32(x) is the one rounding
  kExactBounded,  // as kExact, and every x is finite, below 2^127, with no bit below 2^-149
};

// Every t + s_p of a tile is exact in fp64 when the span fits 53 bits: a product is below
// 2^(top_a + top_b + 2), s_p below 2^(top_a + top_b + 4), t (at most 128 of them, each rounding
// by a factor of at most 1 + 2^-24) below 2^(top_a + top_b + 12); all are multiples of
// 2^(low_a + low_b) (an fp32 rounding keeps that). A side with no nonzero finite operand makes
// every product zero or special, and those sums are exact too.
inline Trn3Sums trn3_sums(const Trn3Range& a, const Trn3Range& b) {
  if (!a.any() || !b.any()) return Trn3Sums::kExact;
  const int top = a.top + b.top + 12, low = a.low + b.low;
  if (top - low > 53) return low < -149 ? Trn3Sums::kCheckedTiny : Trn3Sums::kChecked;
  return low >= -149 && top <= 127 && !a.special && !b.special ? Trn3Sums::kExactBounded : Trn3Sums::kExact;
}

struct Trn3MxTile {
  const double* a = nullptr;  // rows x kTrn3Slots, row-major
  const double* b = nullptr;  // kTrn3Slots x the kernel's cols, row-major
  std::size_t rows = 0;       // a multiple of the kernel's rows
  std::size_t parts = 0;      // partitions to run, 1..kTrn3Parts
  float* psum = nullptr;      // psum[r * ldp + j], updated in place
  std::size_t ldp = 0;
  Trn3Sums sums = Trn3Sums::kCheckedTiny;
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
