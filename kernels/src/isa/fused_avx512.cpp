// The AVX-512 (F + BW) fused micro-kernel: fused_kernel.hpp over zmm registers, one row of 16
// outputs per int32 accumulator (5 accumulators, with their 5 scales, stay in registers).
// Model exponents: four K slots per vector (vpaddsb + vpmaxsb). Every float operation is exact
// (fused.hpp), so neither FMA nor the rounding mode could change a bit (MXCSR is 0x1F80 anyway).
// Each operation below is the one the test's emulation (tests/kernels/ops_lanes16_models.hpp)
// reproduces lane by lane.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "fp8q/numerics/isa.hpp"
#include "isa/fused.hpp"

namespace {

#include "isa/fused_kernel.hpp"

struct OpsFuAvx512 {
  static constexpr std::size_t kLanes = 16;
  using B = __m512i;
  using I = __m512i;
  using F = __m512;
  using L = __m512i;
  using D = __m512d;

  static B load_i8(const std::int8_t* p) { return _mm512_loadu_si512(p); }
  static B load_i8_low32(B src, const std::int8_t* p) { return _mm512_mask_loadu_epi8(src, 0xFFFFFFFFull, p); }
  static B set1_i8(std::int8_t x) { return _mm512_set1_epi8(x); }
  static B set1_u32(std::uint32_t x) { return _mm512_set1_epi32(static_cast<int>(x)); }
  static B shuffle_i8(B a, B idx) { return _mm512_shuffle_epi8(a, idx); }
  static B adds_i8(B a, B b) { return _mm512_adds_epi8(a, b); }
  static B max_i8(B a, B b) { return _mm512_max_epi8(a, b); }
  static B swap256(B a) { return _mm512_shuffle_i64x2(a, a, 0x4E); }
  static B swap128(B a) { return _mm512_shuffle_i64x2(a, a, 0xB1); }
  static I widen_i8(B a) { return _mm512_cvtepi8_epi32(_mm512_castsi512_si128(a)); }

  static I set1_i32(int x) { return _mm512_set1_epi32(x); }
  static I add_i32(I a, I b) { return _mm512_add_epi32(a, b); }
  static I sub_i32(I a, I b) { return _mm512_sub_epi32(a, b); }
  static I max_i32(I a, I b) { return _mm512_max_epi32(a, b); }
  static I and_i32(I a, I b) { return _mm512_and_si512(a, b); }
  static I srli_i32(I a, unsigned n) { return _mm512_srli_epi32(a, n); }
  static I slli_i32(I a, unsigned n) { return _mm512_slli_epi32(a, n); }
  static __mmask16 testn_i32(I a, I b) { return _mm512_testn_epi32_mask(a, b); }
  static I blend_i32(__mmask16 m, I no, I yes) { return _mm512_mask_blend_epi32(m, no, yes); }
  static I bits(F a) { return _mm512_castps_si512(a); }
  static F as_f(I a) { return _mm512_castsi512_ps(a); }

  static F load_f(const float* p) { return _mm512_loadu_ps(p); }
  static F set1_f(float x) { return _mm512_set1_ps(x); }
  static F mul_f(F a, F b) { return _mm512_mul_ps(a, b); }
  static void store_f(float* p, F a) { _mm512_storeu_ps(p, a); }
  static I cvtt(F a) { return _mm512_cvttps_epi32(a); }

  static D i32_to_pd_lo(I a) { return _mm512_cvtepi32_pd(_mm512_castsi512_si256(a)); }
  static D i32_to_pd_hi(I a) { return _mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(a, 1)); }
  static L bits_d(D a) { return _mm512_castpd_si512(a); }
  static D as_d(L a) { return _mm512_castsi512_pd(a); }
  static L set1_i64(std::int64_t x) { return _mm512_set1_epi64(x); }
  static L add_i64(L a, L b) { return _mm512_add_epi64(a, b); }
  static L and_i64(L a, L b) { return _mm512_and_si512(a, b); }
  static L andnot_i64(L m, L x) { return _mm512_andnot_si512(m, x); }
  static L srl_i64(L a, int n) { return _mm512_srl_epi64(a, _mm_cvtsi32_si128(n)); }
  // two vcvtpd2ps (masked form: GCC warns on the unmasked intrinsic's undefined source), joined
  static F pd_to_ps(D lo, D hi) {
    const __m256 l = _mm512_maskz_cvtpd_ps(0xFF, lo), h = _mm512_maskz_cvtpd_ps(0xFF, hi);
    const __m512d joined = _mm512_insertf64x4(_mm512_zextpd256_pd512(_mm256_castps_pd(l)), _mm256_castps_pd(h), 1);
    return _mm512_castpd_ps(joined);
  }
};

}  // namespace

namespace fp8q::detail {

FuKernel fused_kernel_avx512() {
  return isa_supported(Isa::kAvx512) ? &FuKernelT<OpsFuAvx512>::run : nullptr;
}

}  // namespace fp8q::detail
