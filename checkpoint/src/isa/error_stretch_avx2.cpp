// measure_error()'s AVX2 + F16C kernels: error_stretch_kernel.hpp over xsimd, 8 floats and 4
// doubles a register. The only file of fp8q::checkpoint compiled with -mavx2 -mf16c;
// stretch_kernel() calls it only on a CPU that has both.
#include <immintrin.h>
#include <xsimd/xsimd.hpp>

#include <bit>
#include <cstdint>

#include "isa/error_stretch_kernel.hpp"

namespace fp8q::checkpoint::detail {
namespace {

using A = xsimd::avx2;

struct ExtrasAvx2 {
  using Fb = xsimd::batch<float, A>;
  using Db = xsimd::batch<double, A>;
  using Ib = xsimd::batch<std::int32_t, A>;
  static __m128i load16(const void* p) { return _mm_loadu_si128(static_cast<const __m128i*>(p)); }
  static Fb load_bf16(const std::byte* p) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(load16(p)), 16));
  }
  static Fb load_f16(const std::byte* p) { return _mm256_cvtph_ps(load16(p)); }  // vcvtph2ps: exact
  static Ib load_codes(const std::uint8_t* p) {
    return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
  }
  static Fb gather(const float* table, Ib idx) { return _mm256_i32gather_ps(table, idx, 4); }
  static Db widen_lo(Fb v) { return _mm256_cvtps_pd(_mm256_castps256_ps128(v)); }
  static Db widen_hi(Fb v) { return _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)); }
  static int count(xsimd::batch_bool<double, A> m) {
    return std::popcount(static_cast<unsigned>(_mm256_movemask_pd(static_cast<__m256d>(m))));
  }
};

}  // namespace

const ErrorKernels* error_kernels_avx2() { return &ErrorStretchKernel<A, ExtrasAvx2>::kKernels; }

}  // namespace fp8q::checkpoint::detail
