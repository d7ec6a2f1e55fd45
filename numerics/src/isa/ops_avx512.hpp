// Internal: the operations NarrowKernel needs, on AVX-512 F + BW (16 x 32-bit lanes).
// Masks are kept as vectors (all bits of a lane set or clear), as in ops_xsimd.hpp, so the
// kernel is the same text for both.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "isa/narrow.hpp"

struct OpsAvx512 {
  using V = __m512i;
  using F = __m512;
  static constexpr std::size_t kLanes = 16;
  using Count = __m128i;  // a shift count held in a register
  static Count count(int n) { return _mm_cvtsi32_si128(n); }

  static V from_mask(__mmask16 m) { return _mm512_maskz_mov_epi32(m, _mm512_set1_epi32(-1)); }
  static __mmask16 to_mask(V m) { return _mm512_test_epi32_mask(m, m); }

  static V set1(std::int32_t x) { return _mm512_set1_epi32(x); }
  static F set1f(float x) { return _mm512_set1_ps(x); }
  static V iota() { return _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15); }
  static V add(V a, V b) { return _mm512_add_epi32(a, b); }
  static V sub(V a, V b) { return _mm512_sub_epi32(a, b); }
  static V band(V a, V b) { return _mm512_and_si512(a, b); }
  static V bor(V a, V b) { return _mm512_or_si512(a, b); }
  static V bxor(V a, V b) { return _mm512_xor_si512(a, b); }
  static V andnot(V mask, V b) { return _mm512_andnot_si512(mask, b); }  // ~mask & b
  static V sll(V a, int n) { return _mm512_sll_epi32(a, _mm_cvtsi32_si128(n)); }
  static V srl(V a, int n) { return _mm512_srl_epi32(a, _mm_cvtsi32_si128(n)); }
  static V sllv(V a, V n) { return _mm512_sllv_epi32(a, n); }  // counts > 31 give 0
  static V srlv(V a, V n) { return _mm512_srlv_epi32(a, n); }
  static V max(V a, V b) { return _mm512_max_epi32(a, b); }  // signed
  static V min(V a, V b) { return _mm512_min_epi32(a, b); }
  // A comparison's result as the mask register it is; where the kernel text combines it with
  // vectors it becomes a vector of all-ones / zero lanes, while a select, a test, an or and an
  // and-not take it as it is (a vector round trip costs two operations).
  struct Mask {
    __mmask16 k;
    operator V() const { return from_mask(k); }
  };
  static Mask gt(V a, V b) { return {_mm512_cmpgt_epi32_mask(a, b)}; }  // signed
  static Mask eq(V a, V b) { return {_mm512_cmpeq_epi32_mask(a, b)}; }
  static V select(V mask, V yes, V no) { return _mm512_mask_blend_epi32(to_mask(mask), no, yes); }
  static V select(Mask m, V yes, V no) { return _mm512_mask_blend_epi32(m.k, no, yes); }
  static bool any(V mask) { return to_mask(mask) != 0; }
  static bool any(Mask m) { return m.k != 0; }
  static V bor(V a, Mask m) { return _mm512_mask_mov_epi32(a, m.k, _mm512_set1_epi32(-1)); }
  static V andnot(Mask m, V b) { return _mm512_maskz_mov_epi32(static_cast<__mmask16>(~m.k), b); }
  static std::int32_t hmax(V a) {  // the largest lane (signed)
    const __m256i h = _mm256_max_epi32(_mm512_castsi512_si256(a), _mm512_extracti64x4_epi64(a, 1));
    __m128i m = _mm_max_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
    m = _mm_max_epi32(m, _mm_shuffle_epi32(m, 0x4E));
    m = _mm_max_epi32(m, _mm_shuffle_epi32(m, 0xB1));
    return _mm_cvtsi128_si32(m);
  }
  static F mul(F a, F b) { return _mm512_mul_ps(a, b); }
  static F div(F a, F b) { return _mm512_div_ps(a, b); }
  static F add_f(F a, F b) { return _mm512_add_ps(a, b); }
  static F as_float(V a) { return _mm512_castsi512_ps(a); }
  // Float masks are __mmask16 here, carried as a vector for the same kernel text.
  static F is_nan(F a) { return _mm512_castsi512_ps(from_mask(_mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q))); }
  static F select_f(F mask, F yes, F no) {
    return _mm512_mask_blend_ps(to_mask(_mm512_castps_si512(mask)), no, yes);
  }
  static V bits(F a) { return _mm512_castps_si512(a); }

  static void mulhilo(V a, V b, V& hi, V& lo) {
    const V even = _mm512_mul_epu32(a, b);
    const V odd = _mm512_mul_epu32(_mm512_srli_epi64(a, 32), _mm512_srli_epi64(b, 32));
    lo = _mm512_mask_blend_epi32(0xAAAA, even, _mm512_slli_epi64(odd, 32));
    hi = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(even, 32), odd);
  }

  // Philox on 64-bit lanes (philox_lanes.hpp): the full products of the even 32-bit lanes, the
  // high halves moved down, the odd lanes moved down, and even / odd lanes put back together.
  static V mul_wide(V a, V b) { return _mm512_mul_epu32(a, b); }
  static V high_down(V a) { return _mm512_srli_epi64(a, 32); }
  static V interleave(V even, V odd) { return _mm512_mask_blend_epi32(0xAAAA, even, _mm512_slli_epi64(odd, 32)); }

  // bf16 keeps the natural-order widening here (no interleaved variant).
  static constexpr bool kInterleavedBf16 = false;
  // No vpmaddwd form of the codes here (rne_shifted, narrow_nearest.hpp): the plain form.
  static constexpr bool kShiftedCodes = false;

  template <fp8q::detail::Source S>
  static F load(const unsigned char* p) {
    if constexpr (S == fp8q::detail::Source::kF32) {
      return _mm512_loadu_ps(p);
    } else if constexpr (S == fp8q::detail::Source::kBF16) {
      const V w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
      return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
    } else {
      return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    }
  }

  static void store_bytes4(std::uint8_t* out, V a, V b, V c, V d) {
    const V v[4] = {a, b, c, d};
    for (int j = 0; j < 4; ++j) _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 16 * j), _mm512_cvtepi32_epi8(v[j]));
  }
  static void prefetch(const void* p) { _mm_prefetch(static_cast<const char*>(p), _MM_HINT_T0); }
  // As SimdExtras<xsimd::avx2>::store_bytes4_signed: magnitude codes of an 8-bit target, the fp32 patterns'
  // signs in bit 7 (none on a zero code without -0).
  template <bool kNegativeZero, bool kInterleaved = false>
  static void store_bytes4_signed(std::uint8_t* out, const V c[4], const V u[4]) {
    static_assert(!kInterleaved, "no interleaved loads here");
    V s[4];
    for (int j = 0; j < 4; ++j) {
      V sign = _mm512_srli_epi32(_mm512_and_si512(u[j], _mm512_set1_epi32(static_cast<std::int32_t>(0x80000000u))), 24);
      if constexpr (!kNegativeZero) sign = _mm512_maskz_mov_epi32(_mm512_test_epi32_mask(c[j], c[j]), sign);
      s[j] = _mm512_or_si512(c[j], sign);
    }
    store_bytes4(out, s[0], s[1], s[2], s[3]);
  }
};
