// The AVX2 fused micro-kernel: fused_kernel.hpp over pairs of ymm registers, each 16-lane
// vector of the text as its two 256-bit halves (5 x 16 outputs, the arithmetic of fused.hpp).
// Model exponents: four K slots per pair (vpaddsb + vpmaxsb). Every float operation is exact
// (fused.hpp), so neither FMA nor the rounding mode could change a bit (MXCSR is 0x1F80 anyway).
// Each operation does per half what the AVX-512 one does per vector; a 16-byte lane of the
// text's byte vector is a 128-bit lane of one half, which is where vpshufb works.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "fp8q/numerics/isa.hpp"
#include "isa/fused.hpp"

namespace {

#include "isa/fused_kernel.hpp"

// 16 lanes of 32 bits, 64 bytes or 8 lanes of 64 bits as two ymm halves; a lane mask as two
// halves of all-ones lanes.
// (Two named halves, not an array: GCC keeps the former in registers.)
struct Y2 {
  __m256i lo, hi;
};
struct F2 {
  __m256 lo, hi;
};
struct D2 {
  __m256d lo, hi;
};

struct OpsFuAvx2 {
  static constexpr std::size_t kLanes = 16;
  using B = Y2;
  using I = Y2;
  using F = F2;
  using L = Y2;
  using D = D2;

  template <class Fn>
  static Y2 each(Y2 a, Y2 b, Fn f) { return {f(a.lo, b.lo), f(a.hi, b.hi)}; }
  static Y2 both(__m256i x) { return {x, x}; }
  static __m256i ld(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

  static B load_i8(const std::int8_t* p) { return {ld(p), ld(p + 32)}; }
  static B load_i8_low32(B src, const std::int8_t* p) { return {ld(p), src.hi}; }
  static B set1_i8(std::int8_t x) { return both(_mm256_set1_epi8(x)); }
  static B set1_u32(std::uint32_t x) { return both(_mm256_set1_epi32(static_cast<int>(x))); }
  static B shuffle_i8(B a, B idx) { return each(a, idx, [](__m256i x, __m256i y) { return _mm256_shuffle_epi8(x, y); }); }
  static B adds_i8(B a, B b) { return each(a, b, [](__m256i x, __m256i y) { return _mm256_adds_epi8(x, y); }); }
  static B max_i8(B a, B b) { return each(a, b, [](__m256i x, __m256i y) { return _mm256_max_epi8(x, y); }); }
  static B swap256(B a) { return {a.hi, a.lo}; }
  static B swap128(B a) {
    return {_mm256_permute2x128_si256(a.lo, a.lo, 0x01), _mm256_permute2x128_si256(a.hi, a.hi, 0x01)};
  }
  static I widen_i8(B a) {
    const __m128i low = _mm256_castsi256_si128(a.lo);
    return {_mm256_cvtepi8_epi32(low), _mm256_cvtepi8_epi32(_mm_srli_si128(low, 8))};
  }

  static I set1_i32(int x) { return both(_mm256_set1_epi32(x)); }
  static I add_i32(I a, I b) { return each(a, b, [](__m256i x, __m256i y) { return _mm256_add_epi32(x, y); }); }
  static I sub_i32(I a, I b) { return each(a, b, [](__m256i x, __m256i y) { return _mm256_sub_epi32(x, y); }); }
  static I max_i32(I a, I b) { return each(a, b, [](__m256i x, __m256i y) { return _mm256_max_epi32(x, y); }); }
  static I and_i32(I a, I b) { return each(a, b, [](__m256i x, __m256i y) { return _mm256_and_si256(x, y); }); }
  static I srli_i32(I a, int n) { return {_mm256_srli_epi32(a.lo, n), _mm256_srli_epi32(a.hi, n)}; }
  static I slli_i32(I a, int n) { return {_mm256_slli_epi32(a.lo, n), _mm256_slli_epi32(a.hi, n)}; }
  static I testn_i32(I a, I b) {
    return each(a, b, [](__m256i x, __m256i y) { return _mm256_cmpeq_epi32(_mm256_and_si256(x, y), _mm256_setzero_si256()); });
  }
  static I blend_i32(I m, I no, I yes) {
    return {_mm256_blendv_epi8(no.lo, yes.lo, m.lo), _mm256_blendv_epi8(no.hi, yes.hi, m.hi)};
  }
  static I bits(F a) { return {_mm256_castps_si256(a.lo), _mm256_castps_si256(a.hi)}; }
  static F as_f(I a) { return {_mm256_castsi256_ps(a.lo), _mm256_castsi256_ps(a.hi)}; }

  static F load_f(const float* p) { return {_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)}; }
  static F set1_f(float x) { return {_mm256_set1_ps(x), _mm256_set1_ps(x)}; }
  static F mul_f(F a, F b) { return {_mm256_mul_ps(a.lo, b.lo), _mm256_mul_ps(a.hi, b.hi)}; }
  static void store_f(float* p, F a) { _mm256_storeu_ps(p, a.lo), _mm256_storeu_ps(p + 8, a.hi); }
  static I cvtt(F a) { return {_mm256_cvttps_epi32(a.lo), _mm256_cvttps_epi32(a.hi)}; }

  static D i32_to_pd_lo(I a) {
    return {_mm256_cvtepi32_pd(_mm256_castsi256_si128(a.lo)), _mm256_cvtepi32_pd(_mm256_extracti128_si256(a.lo, 1))};
  }
  static D i32_to_pd_hi(I a) {
    return {_mm256_cvtepi32_pd(_mm256_castsi256_si128(a.hi)), _mm256_cvtepi32_pd(_mm256_extracti128_si256(a.hi, 1))};
  }
  static L bits_d(D a) { return {_mm256_castpd_si256(a.lo), _mm256_castpd_si256(a.hi)}; }
  static D as_d(L a) { return {_mm256_castsi256_pd(a.lo), _mm256_castsi256_pd(a.hi)}; }
  static L set1_i64(std::int64_t x) { return both(_mm256_set1_epi64x(x)); }
  static L add_i64(L a, L b) { return each(a, b, [](__m256i x, __m256i y) { return _mm256_add_epi64(x, y); }); }
  static L and_i64(L a, L b) { return each(a, b, [](__m256i x, __m256i y) { return _mm256_and_si256(x, y); }); }
  static L andnot_i64(L m, L x) { return each(m, x, [](__m256i a, __m256i b) { return _mm256_andnot_si256(a, b); }); }
  static L srl_i64(L a, int n) {
    const __m128i c = _mm_cvtsi32_si128(n);
    return {_mm256_srl_epi64(a.lo, c), _mm256_srl_epi64(a.hi, c)};
  }
  static F pd_to_ps(D lo, D hi) {
    return {_mm256_set_m128(_mm256_cvtpd_ps(lo.hi), _mm256_cvtpd_ps(lo.lo)),
             _mm256_set_m128(_mm256_cvtpd_ps(hi.hi), _mm256_cvtpd_ps(hi.lo))};
  }
};

}  // namespace

namespace fp8q::detail {

FuKernel fused_kernel_avx2() {
  return isa_supported(Isa::kAvx2) ? &FuKernelT<OpsFuAvx2>::run : nullptr;
}

}  // namespace fp8q::detail
