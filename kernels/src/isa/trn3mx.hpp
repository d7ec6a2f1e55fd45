// Internal: the trainium3_mx:1x32 column kernel's interface, shared by its driver
// (fast_trainium3_mx.cpp) and each ISA's translation unit. Not installed.
//
// For kTrn3Lanes adjacent output columns of one row (lane l = column j0 + l), per 512-K instruction
// at k0: t = +0, then for each partition p (k = k0 + 4p, its MX group q = k / 32)
//   s_p = (sum_c a[k + c] * b[(k + c) * ldb + l]) * sa[q] * sb[q * ldb + l]     (exact in fp64)
//   t   = fp32(t + s_p), one rounding: a two-sum r + e = t + s_p, r rounded to odd at 53
//         bits (moved one ulp toward e when e != 0 and r's last bit is even), then to fp32
// and psum = fp32(psum + t). Every step is an IEEE operation whose result is the same in any
// lane width, under the IEEE default environment the driver holds (fast_trainium3_mx.cpp says
// why the sums are exact).
#pragma once

#include <cstddef>

namespace fp8q::detail {

inline constexpr std::size_t kTrn3Lanes = 32;  // columns per call

// a: the row's K decoded values; sa: its ceil(K / 32) group scales (fp64 powers of two or NaN);
// b: K rows of ldb decoded values, lane 0 at b[0]; sb: the groups' scales, ldb per group row;
// psum: the kTrn3Lanes column sums, in (C0) and out.
using Trn3MxColumns = void (*)(const double* a, const double* sa, const double* b, const double* sb,
                               std::size_t ldb, std::size_t k, float* psum);

#if defined(FP8Q_HAVE_AVX2)
Trn3MxColumns trn3mx_columns_avx2();  // nullptr where the CPU lacks AVX2
#else
inline Trn3MxColumns trn3mx_columns_avx2() { return nullptr; }  // not compiled for this target
#endif
#if defined(FP8Q_HAVE_AVX512)
Trn3MxColumns trn3mx_columns_avx512();  // nullptr where the CPU lacks AVX-512
#else
inline Trn3MxColumns trn3mx_columns_avx512() { return nullptr; }  // not compiled for this target
#endif

}  // namespace fp8q::detail
