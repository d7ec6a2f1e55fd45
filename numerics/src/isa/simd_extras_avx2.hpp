// Internal: SimdExtras<xsimd::avx2>, what ops_xsimd.hpp needs beyond xsimd 8.1 on AVX2 + F16C
// (8 x 32-bit lanes): shifts by a count in a register, 32 x 32 -> 64-bit products, fp16
// widening, and the saturating packs (vpackusdw, vpackuswb, vpackssdw) and vpmaddwd that store
// 32 byte codes with their signs in a few operations.
#pragma once

#include <immintrin.h>
#include <xsimd/xsimd.hpp>

#include <cstddef>
#include <cstdint>

#include "isa/ops_xsimd.hpp"

template <>
struct SimdExtras<xsimd::avx2> {
  using I = xsimd::batch<std::int32_t, xsimd::avx2>;
  using Fb = xsimd::batch<float, xsimd::avx2>;
  using Count = __m128i;  // vpslld / vpsrld / vpsrlw take their count in a register
  static Count count(int n) { return _mm_cvtsi32_si128(n); }

  static void prefetch(const void* p) { _mm_prefetch(static_cast<const char*>(p), _MM_HINT_T0); }
  static I mask_of(xsimd::batch_bool<std::int32_t, xsimd::avx2> b) { return I(static_cast<__m256i>(b)); }
  // vcmpps _CMP_UNORD_Q (xsimd 8.1's != on AVX is the ordered compare: false for NaN != NaN)
  static Fb is_nan(Fb a) { return _mm256_cmp_ps(a, a, _CMP_UNORD_Q); }
  static I sll(I x, int n) { return _mm256_sll_epi32(x, count(n)); }
  static I srl(I x, int n) { return _mm256_srl_epi32(x, count(n)); }
  static I sllv(I x, I n) { return _mm256_sllv_epi32(x, n); }  // counts > 31 give 0
  static I srlv(I x, I n) { return _mm256_srlv_epi32(x, n); }
  static I select(I mask, I yes, I no) { return _mm256_blendv_epi8(no, yes, mask); }
  static Fb div(Fb x, Fb y) { return _mm256_div_ps(x, y); }  // vdivps: a NaN dividend is the result
  static bool any(I mask) { return _mm256_movemask_epi8(mask) != 0; }
  static std::int32_t hmax(I a) {
    __m128i m = _mm_max_epi32(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
    m = _mm_max_epi32(m, _mm_shuffle_epi32(m, 0x4E));
    m = _mm_max_epi32(m, _mm_shuffle_epi32(m, 0xB1));
    return _mm_cvtsi128_si32(m);
  }

  static void mulhilo(I a, I b, I& hi, I& lo) {
    const __m256i even = _mm256_mul_epu32(a, b);
    const __m256i odd = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), _mm256_srli_epi64(b, 32));
    lo = _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA);
    hi = _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xAA);
  }

  // Philox on 64-bit lanes: the even lanes' 64-bit products, high halves moved down, and the
  // even / odd lanes put back together.
  static I mul_wide(I a, I b) { return _mm256_mul_epu32(a, b); }
  static I high_down(I a) { return _mm256_srli_epi64(a, 32); }
  static I interleave(I even, I odd) { return _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA); }

  // 8 unsigned 16-bit values at p, zero-extended to 32 bits.
  static I widen_u16(const unsigned char* p) { return _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  // 8 fp16 values at p, exactly in fp32 (vcvtph2ps).
  static Fb widen_f16(const unsigned char* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }

  // ---- 32 byte codes from four vectors (what the packs make cheap on x86)
  static constexpr bool kPacks = true;
  static void store32(std::uint8_t* out, __m256i v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), v); }
  // The packs work within 128-bit halves: a0-3 b0-3 c0-3 d0-3 | a4-7 b4-7 c4-7 d4-7, put back
  // in order by one permute.
  static __m256i natural(__m256i packed) { return _mm256_permutevar8x32_epi32(packed, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)); }
  // The low byte of each lane of a, b, c, d (lanes <= 0xFF: the saturating packs keep them).
  static void store_bytes4(std::uint8_t* out, I a, I b, I c, I d) {
    store32(out, natural(_mm256_packus_epi16(_mm256_packus_epi32(a, b), _mm256_packus_epi32(c, d))));
  }

  // bf16 -> fp32 by unpacking with zero: one instruction per 8 elements instead of two, but the
  // order within a 32-element block becomes 0-3 8-11 | 4-7 12-15 | 16-19 24-27 | 20-23 28-31;
  // store_bytes4_interleaved() puts it back.
  static constexpr bool kInterleavedBf16 = true;
  static void load4_bf16_interleaved(const unsigned char* p, I u[4]) {
    const __m256i z = _mm256_setzero_si256();
    const __m256i x0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    const __m256i x1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32));
    u[0] = _mm256_unpacklo_epi16(z, x0);
    u[1] = _mm256_unpackhi_epi16(z, x0);
    u[2] = _mm256_unpacklo_epi16(z, x1);
    u[3] = _mm256_unpackhi_epi16(z, x1);
  }
  static void store_bytes4_interleaved(std::uint8_t* out, I a, I b, I c, I d) {
    const __m256i bytes = _mm256_packus_epi16(_mm256_packus_epi32(a, b), _mm256_packus_epi32(c, d));
    store32(out, _mm256_permute4x64_epi64(bytes, 0xD8));  // 0-7 16-23 | 8-15 24-31 -> order
  }

  // Magnitude codes c[0..3] (<= 0x7F) of 8-bit targets with the sign bits of the fp32 patterns
  // u[0..3] in bit 7: the signed saturating packs keep each lane's sign, so 32 signs take four
  // operations; without -0 a zero code keeps no sign. kInterleaved: the lanes came from
  // load4_bf16_interleaved, else from four natural-order loads.
  template <bool kNegativeZero, bool kInterleaved>
  static void store_bytes4_signed(std::uint8_t* out, const I c[4], const I u[4]) {
    const __m256i codes = _mm256_packus_epi16(_mm256_packus_epi32(c[0], c[1]), _mm256_packus_epi32(c[2], c[3]));
    store_codes_signed<kNegativeZero, kInterleaved>(out, codes, u);
  }

  // The same for codes held as t = (code << s) + c in 32-bit lanes (0 <= t < 2^15, the form of
  // the fp32 kernel's vpmaddwd): subtracting c and shifting happen after the first pack, on
  // twice the lanes.
  static constexpr bool kShiftedCodes = true;
  static I madd16(I a, I b) { return _mm256_madd_epi16(a, b); }  // per 32-bit lane: lo*lo + hi*hi
  template <bool kNegativeZero, bool kInterleaved>
  static void store_bytes4_signed_shifted(std::uint8_t* out, const I t[4], const I u[4], I c16, Count s) {
    const __m256i lo = _mm256_srl_epi16(_mm256_sub_epi16(_mm256_packus_epi32(t[0], t[1]), c16), s);
    const __m256i hi = _mm256_srl_epi16(_mm256_sub_epi16(_mm256_packus_epi32(t[2], t[3]), c16), s);
    store_codes_signed<kNegativeZero, kInterleaved>(out, _mm256_packus_epi16(lo, hi), u);
  }

  // 32 byte codes (in pack order) or-ed with the signs of u[0..3], put back in order and stored.
  template <bool kNegativeZero, bool kInterleaved>
  [[gnu::always_inline]] static void store_codes_signed(std::uint8_t* out, __m256i codes, const I u[4]) {
    __m256i sign = _mm256_packs_epi16(_mm256_packs_epi32(u[0], u[1]), _mm256_packs_epi32(u[2], u[3]));
    sign = _mm256_and_si256(sign, _mm256_set1_epi8(static_cast<char>(0x80)));
    if constexpr (!kNegativeZero) sign = _mm256_andnot_si256(_mm256_cmpeq_epi8(codes, _mm256_setzero_si256()), sign);
    const __m256i bytes = _mm256_or_si256(codes, sign);
    store32(out, kInterleaved ? _mm256_permute4x64_epi64(bytes, 0xD8) : natural(bytes));
  }
};
