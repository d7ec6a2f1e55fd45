// AVX-512 F + BW histogram kernels: hist_kernel16.hpp over the Ops below. The only file of calib
// compiled with -mavx512f -mavx512bw; chosen at run time where Isa::kAvx512 is supported. Only
// AVX-512F instructions are used (vpcompressd in its register form, vpmovdw, masked compares).
#include <immintrin.h>

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "isa/hist_kernels.hpp"

namespace {

struct OpsHistAvx512 {
  using V = __m512i;
  using M = __mmask16;

  static V load_abs_f32(const float* p) { return _mm512_and_si512(_mm512_loadu_si512(p), _mm512_set1_epi32(0x7FFFFFFF)); }
  static V load_abs_bf16(const std::uint16_t* p) {
    const V w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    return _mm512_and_si512(w, _mm512_set1_epi32(0x7FFF));
  }
  static V load(const std::uint32_t* p) { return _mm512_load_si512(p); }
  static void store(std::uint32_t* p, V v) { _mm512_store_si512(p, v); }
  static void store_u16(std::uint16_t* p, V v) {  // vpmovdw: truncation to the low 16 bits
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtepi32_epi16(v));
  }
  static V set1(std::uint32_t x) { return _mm512_set1_epi32(static_cast<int>(x)); }
  static V add(V a, V b) { return _mm512_add_epi32(a, b); }
  static V sub(V a, V b) { return _mm512_sub_epi32(a, b); }
  static V srl(V a, int n) { return _mm512_srl_epi32(a, _mm_cvtsi32_si128(n)); }
  static V max_u(V a, V b) { return _mm512_max_epu32(a, b); }
  static V min_u(V a, V b) { return _mm512_min_epu32(a, b); }
  static V max_s(V a, V b) { return _mm512_max_epi32(a, b); }
  static M eq(V a, V b) { return _mm512_cmpeq_epi32_mask(a, b); }
  static M gt_u(V a, V b) { return _mm512_cmpgt_epu32_mask(a, b); }
  static M lt_u(V a, V b) { return _mm512_cmplt_epu32_mask(a, b); }
  static V inc_where(V acc, M m) { return _mm512_mask_add_epi32(acc, m, acc, _mm512_set1_epi32(1)); }
  static M both(M a, M b) { return a & b; }
  static unsigned bits(M m) { return m; }
  static std::size_t store_nonzero_u16(std::uint16_t* p, V v) {  // vpcompressd, then vpmovdw
    const M keep = _mm512_test_epi32_mask(v, v);
    store_u16(p, _mm512_maskz_compress_epi32(keep, v));
    return static_cast<std::size_t>(std::popcount(static_cast<unsigned>(keep)));
  }
  static void prefetch(const void* p) { _mm_prefetch(static_cast<const char*>(p), _MM_HINT_T0); }
};

// Every header it includes was included above, so this adds only the kernels, with internal
// linkage.
#include "isa/hist_kernel16.hpp"

}  // namespace

namespace fp8q::calib::detail {
const HistKernels* hist_kernels_avx512() { return &HistKernel16<OpsHistAvx512>::table(); }
}  // namespace fp8q::calib::detail
