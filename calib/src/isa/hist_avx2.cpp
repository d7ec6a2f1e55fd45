// AVX2 histogram kernels. The only file of calib compiled with -mavx2; chosen at run time.
//
// Scan: 8 lanes of and + unsigned max + unsigned min + compare-to-zero per instruction group,
// so it runs at the speed of the loads. Count: the bin indices of 8 elements come from one and,
// one shift, one subtraction and one max; the increments themselves are scalar (AVX2 has no
// scatter), spread over kTables tables so that equal neighbouring bins do not serialize.
#include <immintrin.h>

#include "isa/hist_kernels.hpp"

namespace fp8q::calib::detail {
namespace {

// 8 |x| patterns as fp32 lanes.
inline __m256i load_abs_f32(const void* in, std::size_t i) {
  const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(static_cast<const float*>(in) + i));
  return _mm256_and_si256(v, _mm256_set1_epi32(0x7FFFFFFF));
}
inline __m256i load_abs_bf16(const void* in, std::size_t i) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const std::uint16_t*>(in) + i));
  return _mm256_and_si256(_mm256_slli_epi32(_mm256_cvtepu16_epi32(v), 16), _mm256_set1_epi32(0x7FFFFFFF));
}
inline std::uint32_t abs_one_f32(const void* in, std::size_t i) {
  return static_cast<const std::uint32_t*>(in)[i] & 0x7FFFFFFFu;
}
inline std::uint32_t abs_one_bf16(const void* in, std::size_t i) {
  return (std::uint32_t{static_cast<const std::uint16_t*>(in)[i]} << 16) & 0x7FFFFFFFu;
}

template <__m256i (*Load)(const void*, std::size_t), std::uint32_t (*One)(const void*, std::size_t)>
ScanResult scan(const void* in, std::size_t n) {
  __m256i m0 = _mm256_setzero_si256(), m1 = m0, z0 = m0, z1 = m0;
  __m256i l0 = _mm256_set1_epi32(-1), l1 = l0;
  const __m256i zero = _mm256_setzero_si256(), one = _mm256_set1_epi32(1);
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i a = Load(in, i), b = Load(in, i + 8);
    m0 = _mm256_max_epu32(m0, a);
    m1 = _mm256_max_epu32(m1, b);
    z0 = _mm256_sub_epi32(z0, _mm256_cmpeq_epi32(a, zero));  // a lane of all ones is -1
    z1 = _mm256_sub_epi32(z1, _mm256_cmpeq_epi32(b, zero));
    l0 = _mm256_min_epu32(l0, _mm256_sub_epi32(a, one));  // 0 - 1 wraps: zeros never win
    l1 = _mm256_min_epu32(l1, _mm256_sub_epi32(b, one));
  }
  alignas(32) std::uint32_t m[8], z[8], l[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(m), _mm256_max_epu32(m0, m1));
  _mm256_store_si256(reinterpret_cast<__m256i*>(z), _mm256_add_epi32(z0, z1));
  _mm256_store_si256(reinterpret_cast<__m256i*>(l), _mm256_min_epu32(l0, l1));
  ScanResult r;
  std::uint32_t lo = 0xFFFFFFFFu;
  for (int k = 0; k < 8; ++k) {
    r.max_bits = m[k] > r.max_bits ? m[k] : r.max_bits;
    r.zeros += z[k];
    lo = l[k] < lo ? l[k] : lo;
  }
  for (; i < n; ++i) {
    const std::uint32_t a = One(in, i);
    r.max_bits = a > r.max_bits ? a : r.max_bits;
    r.zeros += a == 0;
    lo = a - 1 < lo ? a - 1 : lo;
  }
  r.min_nonzero_bits = lo + 1 == 0 ? 0xFFFFFFFFu : lo + 1;
  return r;
}

template <__m256i (*Load)(const void*, std::size_t), std::uint32_t (*One)(const void*, std::size_t)>
void count(const void* in, std::size_t n, int shift, int base, std::uint32_t* tables, std::size_t bins) {
  static_assert(kTables == 4, "the lane offsets below spread 8 lanes over 4 tables");
  const __m128i sh = _mm_cvtsi32_si128(shift);
  const __m256i vbase = _mm256_set1_epi32(base), zero = _mm256_setzero_si256();
  const auto b = static_cast<int>(bins);
  // lane l increments table l % 4 (element i + l has (i + l) % 4 == l % 4 since i % 8 == 0)
  const __m256i offset = _mm256_setr_epi32(0, b, 2 * b, 3 * b, 0, b, 2 * b, 3 * b);
  alignas(32) std::int32_t idx[16];
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i k0 = _mm256_max_epi32(_mm256_sub_epi32(_mm256_srl_epi32(Load(in, i), sh), vbase), zero);
    const __m256i k1 = _mm256_max_epi32(_mm256_sub_epi32(_mm256_srl_epi32(Load(in, i + 8), sh), vbase), zero);
    _mm256_store_si256(reinterpret_cast<__m256i*>(idx), _mm256_add_epi32(k0, offset));
    _mm256_store_si256(reinterpret_cast<__m256i*>(idx + 8), _mm256_add_epi32(k1, offset));
    for (int l = 0; l < 16; ++l) tables[idx[l]] += 1;
  }
  for (; i < n; ++i) {
    const int p = static_cast<int>(One(in, i) >> shift) - base;
    tables[(i % kTables) * bins + static_cast<std::size_t>(p > 0 ? p : 0)] += 1;
  }
}

}  // namespace

const HistKernels* hist_kernels_avx2() {
  static const HistKernels k{scan<load_abs_f32, abs_one_f32>, scan<load_abs_bf16, abs_one_bf16>,
                             count<load_abs_f32, abs_one_f32>, count<load_abs_bf16, abs_one_bf16>};
  return &k;
}

}  // namespace fp8q::calib::detail
