// AVX2 + F16C decoding kernels (isa/widen.hpp): widen_kernel.hpp over 8-lane vectors, 32 codes
// a step.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "isa/widen.hpp"

namespace {

struct OpsWidenAvx2 {
  using I = __m256i;
  using F = __m256;
  using Count = __m128i;
  static constexpr std::size_t kLanes = 8;

  static I codes(const std::uint8_t* p) { return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))); }
  static I set1(std::int32_t x) { return _mm256_set1_epi32(x); }
  static F set1f(float x) { return _mm256_set1_ps(x); }
  static Count count(int n) { return _mm_cvtsi32_si128(n); }
  static I and_(I a, I b) { return _mm256_and_si256(a, b); }
  static I or_(I a, I b) { return _mm256_or_si256(a, b); }
  static I sll(I a, Count n) { return _mm256_sll_epi32(a, n); }
  static I mul(I a, F m) { return _mm256_castps_si256(_mm256_mul_ps(_mm256_castsi256_ps(a), m)); }
  static I gt(I a, I b) { return _mm256_cmpgt_epi32(a, b); }
  static I eq(I a, I b) { return _mm256_cmpeq_epi32(a, b); }
  static bool any(I m) { return _mm256_testz_si256(m, m) == 0; }
  static void store_f32(std::byte* p, I v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v); }
  static void store_bf16(std::byte* p, I a, I b) {  // vpackusdw interleaves the 128-bit halves: vpermq restores the order
    const __m256i h = _mm256_packus_epi32(_mm256_srli_epi32(a, 16), _mm256_srli_epi32(b, 16));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm256_permute4x64_epi64(h, 0xD8));
  }
  static void store_f16(std::byte* p, I v) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p),
                     _mm256_cvtps_ph(_mm256_castsi256_ps(v), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
};

// Every header it includes was included above, so this adds only the kernels, with internal linkage.
#include "isa/widen_kernel.hpp"

}  // namespace

namespace fp8q::detail {
WidenFn widen_kernel_avx2(WideOut out) { return widen_run_for<OpsWidenAvx2>(out); }
}  // namespace fp8q::detail
