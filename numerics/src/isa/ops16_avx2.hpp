// Internal: the 16-bit-lane operations of the bf16 kernel (narrow_bf16_kernel.hpp) on AVX2, for
// the AVX2 and AVX-512 builds. The 32-bit-lane operations are ops_xsimd.hpp's on xsimd::avx2.
// Masks (M) are vectors with all bits of a lane set (true) or clear (false).
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "isa/narrow.hpp"

// 32 bytes to out (any alignment).
inline void store32(std::uint8_t* out, __m256i v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), v); }

// The 16-bit-lane operations of NarrowBf16Kernel (narrow_bf16_kernel.hpp) on AVX2: 16 lanes.
struct Ops16Avx2 {
  using V = __m256i;
  static constexpr std::size_t kLanes = 16;
  static void prefetch(const void* p) { _mm_prefetch(static_cast<const char*>(p), _MM_HINT_T0); }

  static V load(const unsigned char* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
  static V set1(std::int16_t x) { return _mm256_set1_epi16(x); }
  static V set1_8(std::uint8_t x) { return _mm256_set1_epi8(static_cast<char>(x)); }
  static V broadcast(const std::int16_t* p) { return _mm256_set1_epi16(*p); }  // vpbroadcastw from memory
  static V set_bytes(const std::uint8_t (&t)[16]) {  // the same 16 bytes in both 128-bit halves
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(t));
    return _mm256_broadcastsi128_si256(h);
  }
  static V add(V a, V b) { return _mm256_add_epi16(a, b); }
  static V sub(V a, V b) { return _mm256_sub_epi16(a, b); }
  static V subs_u(V a, V b) { return _mm256_subs_epu16(a, b); }  // max(a - b, 0), unsigned
  static V min_u(V a, V b) { return _mm256_min_epu16(a, b); }
  static V max_u(V a, V b) { return _mm256_max_epu16(a, b); }
  static V band(V a, V b) { return _mm256_and_si256(a, b); }
  static V bor(V a, V b) { return _mm256_or_si256(a, b); }
  static V andnot(V mask, V b) { return _mm256_andnot_si256(mask, b); }  // ~mask & b
  template <int N> static V srl(V a) { return _mm256_srli_epi16(a, N); }
  template <int N> static V sll(V a) { return _mm256_slli_epi16(a, N); }
  static V srl(V a, int n) { return _mm256_srl_epi16(a, _mm_cvtsi32_si128(n)); }
  using Count = __m128i;  // a shift count held in a register
  static Count count(int n) { return _mm_cvtsi32_si128(n); }
  static V srl(V a, Count n) { return _mm256_srl_epi16(a, n); }
  static V sll(V a, int n) { return _mm256_sll_epi16(a, _mm_cvtsi32_si128(n)); }
  // Per 16-bit lane, (low byte of a, unsigned) * b, for 0 <= b <= 127: vpmaddubsw adds the
  // products of the two byte pairs of a lane, and b's high byte is 0.
  static V mul_low_byte(V a, V b) { return _mm256_maddubs_epi16(a, b); }
  // Per 16-bit lane, table[lane] for lanes holding 0..15: the low byte indexes the table, the
  // high byte (0) reads table[0], which must be 0.
  static V lookup(V table, V idx) { return _mm256_shuffle_epi8(table, idx); }
  static V gt(V a, V b) { return _mm256_cmpgt_epi16(a, b); }  // signed
  static V eq(V a, V b) { return _mm256_cmpeq_epi16(a, b); }
  static V select(V mask, V yes, V no) { return _mm256_blendv_epi8(no, yes, mask); }
  static bool any(V mask) { return !_mm256_testz_si256(mask, mask); }
  using M = V;  // a comparison's result
  static M none() { return _mm256_setzero_si256(); }
  // Eight 16-bit lanes (one per MX block), for the scale codes of eight blocks at a time.
  using H = __m128i;
  static H h_set1(std::int16_t x) { return _mm_set1_epi16(x); }
  static H h_add(H a, H b) { return _mm_add_epi16(a, b); }
  static H h_sub(H a, H b) { return _mm_sub_epi16(a, b); }
  static H h_and(H a, H b) { return _mm_and_si128(a, b); }
  static H h_or(H a, H b) { return _mm_or_si128(a, b); }
  static H h_gt(H a, H b) { return _mm_cmpgt_epi16(a, b); }  // signed
  static H h_srl7(H a) { return _mm_srli_epi16(a, 7); }
  static H h_sll7(H a) { return _mm_slli_epi16(a, 7); }
  static bool h_any(H mask) { return _mm_movemask_epi8(mask) != 0; }
  static void h_store(std::int16_t* p, H a) { _mm_storeu_si128(reinterpret_cast<__m128i*>(p), a); }
  static void h_store_bytes(std::uint8_t* p, H a) {  // the low byte of each lane (lanes <= 0xFF)
    _mm_storel_epi64(reinterpret_cast<__m128i*>(p), _mm_packus_epi16(a, a));
  }

  // The largest |x| pattern of each of 8 consecutive 32-element bf16 blocks at p: per block
  // one vector of 16 maxima, then the 8 vectors reduced together (interleave and max, 16-,
  // 32-, 64-bit, then the two 128-bit halves), 6 operations a block instead of 9.
  [[gnu::always_inline]] static H block_amax8(const unsigned char* p) {
    const V mask = _mm256_set1_epi16(0x7FFF);
    V m[8];
    for (int j = 0; j < 8; ++j)
      m[j] = _mm256_max_epu16(_mm256_and_si256(load(p + 64 * j), mask), _mm256_and_si256(load(p + 64 * j + 32), mask));
    return reduce8<Max>(m);
  }

  // block_amax8, and in `lowest` each block's smallest |x| pattern minus 1 (unsigned, so a
  // zero counts as 0xFFFF: the smallest nonzero |x| - 1, 0xFFFF for an all-zero block).
  [[gnu::always_inline]] static H block_range8(const unsigned char* p, H& lowest) {
    const V mask = _mm256_set1_epi16(0x7FFF), one = _mm256_set1_epi16(1);
    V hi[8], lo[8];
    for (int j = 0; j < 8; ++j) {
      const V a0 = _mm256_and_si256(load(p + 64 * j), mask), a1 = _mm256_and_si256(load(p + 64 * j + 32), mask);
      hi[j] = _mm256_max_epu16(a0, a1);
      lo[j] = _mm256_min_epu16(_mm256_sub_epi16(a0, one), _mm256_sub_epi16(a1, one));
    }
    lowest = reduce8<Min>(lo);
    return reduce8<Max>(hi);
  }

 private:
  struct Max {
    static V op(V a, V b) { return _mm256_max_epu16(a, b); }
    static H op(H a, H b) { return _mm_max_epu16(a, b); }
  };
  struct Min {
    static V op(V a, V b) { return _mm256_min_epu16(a, b); }
    static H op(H a, H b) { return _mm_min_epu16(a, b); }
  };
  // Eight vectors of 16 lanes -> one lane each: interleave and combine (16-, 32-, 64-bit,
  // then the two 128-bit halves).
  template <class Op>
  [[gnu::always_inline]] static H reduce8(const V (&m)[8]) {
    V a[4], b[2];
    for (int j = 0; j < 4; ++j)
      a[j] = Op::op(_mm256_unpacklo_epi16(m[2 * j], m[2 * j + 1]), _mm256_unpackhi_epi16(m[2 * j], m[2 * j + 1]));
    for (int j = 0; j < 2; ++j)
      b[j] = Op::op(_mm256_unpacklo_epi32(a[2 * j], a[2 * j + 1]), _mm256_unpackhi_epi32(a[2 * j], a[2 * j + 1]));
    const V c = Op::op(_mm256_unpacklo_epi64(b[0], b[1]), _mm256_unpackhi_epi64(b[0], b[1]));
    return Op::op(_mm256_castsi256_si128(c), _mm256_extracti128_si256(c, 1));
  }

 public:

  // Two vectors of 16-bit codes (<= 0xFF) and two of source bf16 patterns -> 32 bytes: the
  // codes or-ed with the sources' sign bits moved to bit `sign_shift` (7 - shift), cleared
  // where the code is 0 unless `negative_zero`. The signed saturating pack keeps each source's
  // sign in bit 7 of its byte; both packs interleave the halves alike, one permute restores it.
  template <bool kSign7, bool kNegativeZero>
  static void store_signed(std::uint8_t* out, V c0, V c1, V x0, V x1, int sign_shift, V sign_bit) {
    V codes = _mm256_packus_epi16(c0, c1);
    V sign = _mm256_packs_epi16(x0, x1);
    if constexpr (!kSign7) sign = _mm256_srl_epi16(sign, _mm_cvtsi32_si128(7 - sign_shift));
    sign = _mm256_and_si256(sign, sign_bit);  // sign_bit: 1 << sign_shift in every byte
    if constexpr (!kNegativeZero) sign = _mm256_andnot_si256(_mm256_cmpeq_epi8(codes, _mm256_setzero_si256()), sign);
    codes = _mm256_or_si256(codes, sign);
    store32(out, _mm256_permute4x64_epi64(codes, 0xD8));
  }
};
