// Internal: the 16-bit-lane operations of the bf16 kernel (narrow_bf16_kernel.hpp) on AVX-512
// BW: 32 lanes, a group of 64 elements, for the plain conversion (the MX driver's groups are
// one 32-element block and keep Ops16Avx2). Comparisons give mask registers (M), which
// select and the NaN record take directly.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "isa/narrow.hpp"

struct Ops16Avx512 {
  using V = __m512i;
  using M = __mmask32;
  static constexpr std::size_t kLanes = 32;
  static void prefetch(const void* p) { _mm_prefetch(static_cast<const char*>(p), _MM_HINT_T0); }

  static V load(const unsigned char* p) { return _mm512_loadu_si512(p); }
  static V set1(std::int16_t x) { return _mm512_set1_epi16(x); }
  static V set1_8(std::uint8_t x) { return _mm512_set1_epi8(static_cast<char>(x)); }
  static V set_bytes(const std::uint8_t (&t)[16]) {  // the same 16 bytes in each 128-bit lane
    return _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(t)));
  }
  static V add(V a, V b) { return _mm512_add_epi16(a, b); }
  static V sub(V a, V b) { return _mm512_sub_epi16(a, b); }
  static V subs_u(V a, V b) { return _mm512_subs_epu16(a, b); }  // max(a - b, 0), unsigned
  static V min_u(V a, V b) { return _mm512_min_epu16(a, b); }
  static V max_u(V a, V b) { return _mm512_max_epu16(a, b); }
  static V band(V a, V b) { return _mm512_and_si512(a, b); }
  static V bor(V a, V b) { return _mm512_or_si512(a, b); }
  template <int N> static V srl(V a) { return _mm512_srli_epi16(a, N); }
  using Count = __m128i;  // a shift count held in a register
  static Count count(int n) { return _mm_cvtsi32_si128(n); }
  static V srl(V a, Count n) { return _mm512_srl_epi16(a, n); }
  static V sll(V a, int n) { return _mm512_sll_epi16(a, _mm_cvtsi32_si128(n)); }
  // (low byte of a, unsigned) * b per lane, b <= 127 (vpmaddubsw: b's high byte is 0).
  static V mul_low_byte(V a, V b) { return _mm512_maddubs_epi16(a, b); }
  // table[lane] for lanes holding 0..15 (the high byte, 0, reads table[0] = 0).
  static V lookup(V table, V idx) { return _mm512_shuffle_epi8(table, idx); }
  static M gt(V a, V b) { return _mm512_cmpgt_epi16_mask(a, b); }  // signed
  static V select(M mask, V yes, V no) { return _mm512_mask_blend_epi16(mask, no, yes); }
  static M none() { return 0; }
  static M bor(M a, M b) { return a | b; }
  static bool any(M mask) { return mask != 0; }
  static bool any(V v) { return _mm512_test_epi16_mask(v, v) != 0; }

  // Two vectors of 16-bit codes (<= 0xFF) and two of source bf16 patterns -> 64 bytes, as
  // Ops16Avx2::store_signed: codes or-ed with the sign moved to bit `sign_shift`, cleared on a
  // zero code unless `negative_zero`. Both packs interleave the 128-bit lanes alike; one
  // permute of 64-bit units restores the order.
  template <bool kSign7, bool kNegativeZero>
  static void store_signed(std::uint8_t* out, V c0, V c1, V x0, V x1, int sign_shift, V sign_bit) {
    V codes = _mm512_packus_epi16(c0, c1);
    V sign = _mm512_packs_epi16(x0, x1);
    if constexpr (!kSign7) sign = _mm512_srl_epi16(sign, _mm_cvtsi32_si128(7 - sign_shift));
    sign = _mm512_and_si512(sign, sign_bit);  // sign_bit: 1 << sign_shift in every byte
    if constexpr (!kNegativeZero) sign = _mm512_maskz_mov_epi8(_mm512_test_epi8_mask(codes, codes), sign);
    codes = _mm512_or_si512(codes, sign);
    const V order = _mm512_setr_epi64(0, 2, 4, 6, 1, 3, 5, 7);
    _mm512_storeu_si512(out, _mm512_permutexvar_epi64(order, codes));
  }
};
