// AVX2 histogram kernels: hist_kernel16.hpp over the Ops below, 16 lanes as two ymm. The only
// file of calib compiled with -mavx2; chosen at run time.
#include <immintrin.h>

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "isa/hist_kernels.hpp"

namespace {

// For an 8-bit mask of the 16-bit lanes to keep, the pshufb control that moves them, in order,
// to the front (the other bytes zero).
struct PackTable {
  alignas(16) unsigned char control[256][16];
};
constexpr PackTable make_pack_table() {
  PackTable t{};
  for (int m = 0; m < 256; ++m) {
    int k = 0;
    for (int lane = 0; lane < 8; ++lane)
      if (m >> lane & 1) {
        t.control[m][2 * k] = static_cast<unsigned char>(2 * lane);
        t.control[m][2 * k + 1] = static_cast<unsigned char>(2 * lane + 1);
        ++k;
      }
    for (; k < 8; ++k) t.control[m][2 * k] = t.control[m][2 * k + 1] = 0x80;  // pshufb: zero
  }
  return t;
}
constexpr PackTable kPack = make_pack_table();

// 16 lanes as two ymm halves (named, not an array: GCC keeps named members in registers); a
// mask is the compare's all-ones lanes.
struct OpsHistAvx2 {
  struct V {
    __m256i lo, hi;
  };
  using M = V;

  static __m256i abs_f32(const float* p) {
    return _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)), _mm256_set1_epi32(0x7FFFFFFF));
  }
  static __m256i abs_bf16(const std::uint16_t* p) {
    const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_and_si256(w, _mm256_set1_epi32(0x7FFF));
  }
  // 16 values below 2^16 as 16-bit lanes, in vpackusdw's order (lanes 0-3 of lo, 0-3 of hi, 4-7, 4-7)
  static __m256i narrow(V v) { return _mm256_packus_epi32(v.lo, v.hi); }

  static V load_abs_f32(const float* p) { return {abs_f32(p), abs_f32(p + 8)}; }
  static V load_abs_bf16(const std::uint16_t* p) { return {abs_bf16(p), abs_bf16(p + 8)}; }
  static V load(const std::uint32_t* p) {
    return {_mm256_load_si256(reinterpret_cast<const __m256i*>(p)), _mm256_load_si256(reinterpret_cast<const __m256i*>(p + 8))};
  }
  static void store(std::uint32_t* p, V v) {
    _mm256_store_si256(reinterpret_cast<__m256i*>(p), v.lo);
    _mm256_store_si256(reinterpret_cast<__m256i*>(p + 8), v.hi);
  }
  static void store_u16(std::uint16_t* p, V v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), narrow(v)); }
  static V set1(std::uint32_t x) {
    const __m256i v = _mm256_set1_epi32(static_cast<int>(x));
    return {v, v};
  }
  static V add(V a, V b) { return {_mm256_add_epi32(a.lo, b.lo), _mm256_add_epi32(a.hi, b.hi)}; }
  static V sub(V a, V b) { return {_mm256_sub_epi32(a.lo, b.lo), _mm256_sub_epi32(a.hi, b.hi)}; }
  static V srl(V a, int n) {
    const __m128i c = _mm_cvtsi32_si128(n);
    return {_mm256_srl_epi32(a.lo, c), _mm256_srl_epi32(a.hi, c)};
  }
  static V max_u(V a, V b) { return {_mm256_max_epu32(a.lo, b.lo), _mm256_max_epu32(a.hi, b.hi)}; }
  static V min_u(V a, V b) { return {_mm256_min_epu32(a.lo, b.lo), _mm256_min_epu32(a.hi, b.hi)}; }
  static V max_s(V a, V b) { return {_mm256_max_epi32(a.lo, b.lo), _mm256_max_epi32(a.hi, b.hi)}; }
  static M eq(V a, V b) { return {_mm256_cmpeq_epi32(a.lo, b.lo), _mm256_cmpeq_epi32(a.hi, b.hi)}; }
  // unsigned a > b: a signed compare after flipping both sign bits
  static M gt_u(V a, V b) {
    const __m256i s = _mm256_set1_epi32(static_cast<int>(0x80000000u));
    return {_mm256_cmpgt_epi32(_mm256_xor_si256(a.lo, s), _mm256_xor_si256(b.lo, s)),
            _mm256_cmpgt_epi32(_mm256_xor_si256(a.hi, s), _mm256_xor_si256(b.hi, s))};
  }
  static M lt_u(V a, V b) { return gt_u(b, a); }
  static M both(M a, M b) { return {_mm256_and_si256(a.lo, b.lo), _mm256_and_si256(a.hi, b.hi)}; }
  static unsigned bits(M m) {
    return static_cast<unsigned>(_mm256_movemask_ps(_mm256_castsi256_ps(m.lo))) |
           static_cast<unsigned>(_mm256_movemask_ps(_mm256_castsi256_ps(m.hi))) << 8;
  }
  static V inc_where(V acc, M m) { return sub(acc, m); }  // a lane of all ones is -1
  // Narrowed to 16-bit lanes, then each 128-bit half's nonzero lanes moved to its front by one
  // pshufb (its control from the 8-bit mask of kept lanes) and stored after the previous half's.
  static std::size_t store_nonzero_u16(std::uint16_t* p, V v) {
    const __m256i q = narrow(v);
    const __m256i is_zero = _mm256_cmpeq_epi16(q, _mm256_setzero_si256());
    // packs gives bytes [lanes 0-7, lanes 0-7 | lanes 8-15, lanes 8-15]: mask bits 0-7 and 16-23
    const auto keep = ~static_cast<unsigned>(_mm256_movemask_epi8(_mm256_packs_epi16(is_zero, is_zero)));
    const unsigned lo = keep & 0xFF, hi = keep >> 16 & 0xFF;
    const auto ctl = [](unsigned m) { return _mm_load_si128(reinterpret_cast<const __m128i*>(kPack.control[m])); };
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm_shuffle_epi8(_mm256_castsi256_si128(q), ctl(lo)));
    const auto n_lo = static_cast<std::size_t>(__builtin_popcount(lo));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p + n_lo), _mm_shuffle_epi8(_mm256_extracti128_si256(q, 1), ctl(hi)));
    return n_lo + static_cast<std::size_t>(__builtin_popcount(hi));
  }
  static void prefetch(const void* p) { _mm_prefetch(static_cast<const char*>(p), _MM_HINT_T0); }
};

// Every header it includes was included above, so this adds only the kernels, with internal
// linkage.
#include "isa/hist_kernel16.hpp"

}  // namespace

namespace fp8q::calib::detail {
const HistKernels* hist_kernels_avx2() { return &HistKernel16<OpsHistAvx2>::table(); }
}  // namespace fp8q::calib::detail
