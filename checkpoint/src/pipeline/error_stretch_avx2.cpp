// One stretch of measure_error() with AVX2 + F16C (error_kernels.hpp), 8 elements a step.
// The only file of fp8q::checkpoint compiled with -mavx2 -mf16c; stretch_kernel() calls it
// only on a CPU that has both.
//
// Why it gives the generic kernel's bits:
//   - the four partial sums sig_0..3 (and err_0..3) are the four lanes of one __m256d, so
//     element 4j + k is added into lane k in increasing j, as in the specification; a step
//     of 8 elements adds its first 4 (group 2j) and then its last 4 (group 2j + 1);
//   - a skipped element (x or x^ NaN / Inf) adds +0.0, which leaves a sum of squares (never
//     -0.0) unchanged, and takes part in neither a count nor the maximum;
//   - x^ = fp32(decoded[q] * s) is one vmulps, the widening to double (vcvtps2pd) is exact,
//     and every double operation is the single rounded operation the C++ writes (this file is
//     compiled with -ffp-contract=off like the rest of the module, and uses no FMA);
//   - the maximum of non-negative, non-NaN values does not depend on the order;
//   - the last n mod 8 elements run through the same scalar steps as the generic kernel.
// F16 inputs widen with vcvtph2ps, exact for every finite F16 (and NaN / Inf stay NaN / Inf,
// which are skipped whatever their payload).
#include <immintrin.h>

#include <bit>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "pipeline/error_kernels.hpp"

namespace fp8q::checkpoint::detail {
namespace {

// 8 elements of the original as fp32.
template <DType D>
__m256 load8(const std::byte* p) {
  if constexpr (D == DType::kF32) {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(p));
  } else if constexpr (D == DType::kBF16) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  } else {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
}

// One element as fp32, the same value as load8's lane.
template <DType D>
float load1(const std::byte* p, std::size_t i) {
  if constexpr (D == DType::kF32) {
    float v;
    std::memcpy(&v, p + 4 * i, 4);
    return v;
  } else if constexpr (D == DType::kBF16) {
    std::uint16_t b;
    std::memcpy(&b, p + 2 * i, 2);
    return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
  } else {
    std::uint16_t b;
    std::memcpy(&b, p + 2 * i, 2);
    return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(b)));
  }
}

// Sums over 4 elements whose widened values are x, x^ = h and whose lanes are in `keep`
// (all ones: measured; zero: skipped).
struct Acc {
  __m256d sig = _mm256_setzero_pd(), err = _mm256_setzero_pd(), max = _mm256_setzero_pd();
};

inline void add4(Acc& a, __m256d x, __m256d h, __m256d keep, __m256d threshold, std::uint64_t& saturated) {
  const __m256d abs_mask = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7FFFFFFFFFFFFFFF));
  const __m256d e = _mm256_sub_pd(x, h);
  a.sig = _mm256_add_pd(a.sig, _mm256_and_pd(keep, _mm256_mul_pd(x, x)));
  a.err = _mm256_add_pd(a.err, _mm256_and_pd(keep, _mm256_mul_pd(e, e)));
  a.max = _mm256_max_pd(a.max, _mm256_and_pd(keep, _mm256_and_pd(abs_mask, e)));
  const __m256d over = _mm256_and_pd(keep, _mm256_cmp_pd(_mm256_and_pd(abs_mask, x), threshold, _CMP_GT_OQ));
  saturated += static_cast<std::uint64_t>(std::popcount(static_cast<unsigned>(_mm256_movemask_pd(over))));
}

// A stretch's sums after its vector steps, and what remains to add.
struct Partials {
  double* sig;  // the four partial sums, as stored from the vector lanes
  double* err;
  double max_err;
  std::uint64_t counted, nonfinite, saturated;
};

// The last elements [i, n) of the stretch as the specification steps them (a full group of 4
// into partials 0..3, then the rest into partial 0), then the stretch's totals into st.
template <DType D, bool kPerElement>
void finish(const Stretch& s, std::size_t i, Partials p, ErrorStats& st) {
  auto add = [&](std::size_t j, std::size_t k) {
    const float xv = load1<D>(s.x, j);
    const float sc = kPerElement ? s.scales[j] : s.scale;
    const float xh = s.decoded[s.codes[j]] * sc;
    if (!(std::fabs(xv) <= FLT_MAX) || !(std::fabs(xh) <= FLT_MAX)) {
      ++p.nonfinite;
      return;
    }
    const double x = xv, e = x - static_cast<double>(xh);
    ++p.counted;
    p.sig[k] += x * x;
    p.err[k] += e * e;
    p.max_err = std::max(p.max_err, std::fabs(e));
    p.saturated += std::fabs(x) > s.clip * static_cast<double>(sc) ? 1 : 0;
  };
  for (; i + 4 <= s.n; i += 4)
    for (std::size_t k = 0; k < 4; ++k) add(i + k, k);
  for (; i < s.n; ++i) add(i, 0);
  st.count += p.counted;
  st.nonfinite += p.nonfinite;
  st.saturated += p.saturated;
  st.sum_sq_signal += (p.sig[0] + p.sig[1]) + (p.sig[2] + p.sig[3]);
  st.sum_sq_error += (p.err[0] + p.err[1]) + (p.err[2] + p.err[3]);
  st.max_abs_error = p.max_err;
}

// The masked kernel: any stretch, including NaN / Inf and saturated elements.
template <DType D, bool kPerElement>
void stretch_masked(const Stretch& s, ErrorStats& st) {
  const __m256 abs_mask_ps = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  const __m256 flt_max = _mm256_set1_ps(FLT_MAX);
  const __m256 scale = _mm256_set1_ps(s.scale);
  const __m256d clip = _mm256_set1_pd(s.clip);
  const __m256d threshold_const = _mm256_set1_pd(s.clip * static_cast<double>(s.scale));
  constexpr std::size_t kWidth = D == DType::kF32 ? 4 : 2;
  Acc a;
  std::uint64_t counted = 0, saturated = 0;
  std::size_t i = 0;
  for (; i + 8 <= s.n; i += 8) {
    const __m256 xv = load8<D>(s.x + kWidth * i);
    const __m128i q8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(s.codes + i));
    const __m256 dec = _mm256_i32gather_ps(s.decoded, _mm256_cvtepu8_epi32(q8), 4);
    const __m256 sc = kPerElement ? _mm256_loadu_ps(s.scales + i) : scale;
    const __m256 xh = _mm256_mul_ps(dec, sc);
    // finite: |x| <= FLT_MAX and |x^| <= FLT_MAX (ordered: false for NaN)
    const __m256 finite = _mm256_and_ps(_mm256_cmp_ps(_mm256_and_ps(abs_mask_ps, xv), flt_max, _CMP_LE_OQ),
                                        _mm256_cmp_ps(_mm256_and_ps(abs_mask_ps, xh), flt_max, _CMP_LE_OQ));
    counted += static_cast<std::uint64_t>(std::popcount(static_cast<unsigned>(_mm256_movemask_ps(finite))));
    const __m256i fi = _mm256_castps_si256(finite);
    const __m256d keep_lo = _mm256_castsi256_pd(_mm256_cvtepi32_epi64(_mm256_castsi256_si128(fi)));
    const __m256d keep_hi = _mm256_castsi256_pd(_mm256_cvtepi32_epi64(_mm256_extracti128_si256(fi, 1)));
    __m256d thr_lo = threshold_const, thr_hi = threshold_const;
    if constexpr (kPerElement) {
      thr_lo = _mm256_mul_pd(clip, _mm256_cvtps_pd(_mm256_castps256_ps128(sc)));
      thr_hi = _mm256_mul_pd(clip, _mm256_cvtps_pd(_mm256_extractf128_ps(sc, 1)));
    }
    add4(a, _mm256_cvtps_pd(_mm256_castps256_ps128(xv)), _mm256_cvtps_pd(_mm256_castps256_ps128(xh)), keep_lo, thr_lo,
         saturated);
    add4(a, _mm256_cvtps_pd(_mm256_extractf128_ps(xv, 1)), _mm256_cvtps_pd(_mm256_extractf128_ps(xh, 1)), keep_hi, thr_hi,
         saturated);
  }
  alignas(32) double sig[4], err[4], mx[4];
  _mm256_store_pd(sig, a.sig);
  _mm256_store_pd(err, a.err);
  _mm256_store_pd(mx, a.max);
  double max_err = std::max(std::max(st.max_abs_error, std::max(mx[0], mx[1])), std::max(mx[2], mx[3]));
  std::uint64_t nonfinite = i - counted;  // of the vector steps
  finish<D, kPerElement>(s, i, {sig, err, max_err, counted, nonfinite, saturated}, st);
}

// The fast kernel, for the stretches of real weights: every x and x^ finite, no code NaN or
// Inf, nothing saturated (in the vector steps). It measures on the assumption that this
// holds, without masks, counts or a table, and checks it once at the end:
//   - a NaN / Inf x or x^ makes some x * x or e * e NaN or +Inf, and a partial sum that has
//     taken one in stays NaN or +Inf (only non-negative values are ever added); while x and
//     x^ are finite fp32 values, no square (< 2^257) and no sum of them can overflow a double;
//   - codes whose table value is NaN / Inf (magnitude >= special_from) are seen by one
//     compare, since the arithmetic decode would give them a finite value;
//   - saturated elements: with one multiplier, max |x| <= clip * s says there are none; with
//     one per element, each compare result is or-ed up.
// If the check fails it returns false with `st` untouched, and the masked kernel measures
// the stretch. Otherwise the sums, the maximum and the counts are the masked kernel's: the
// same additions into the same lanes, and x^ from the checked arithmetic decode.
template <DType D, bool kPerElement>
bool stretch_fast(const Stretch& s, ErrorStats& st) {
  if (s.decode_shift < 0 || s.n < 8) return false;
  const float scale_pow = s.scale * s.decode_pow;  // exact when finite (decode_pow = 2^k, k >= 0)
  if (!kPerElement && !(std::fabs(scale_pow) <= FLT_MAX)) return false;
  const __m256 abs_mask_ps = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  const __m256d abs_mask = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7FFFFFFFFFFFFFFF));
  const __m256i magnitude = _mm256_set1_epi32(0x7F), sign = _mm256_set1_epi32(0x80);
  const __m256i special_below = _mm256_set1_epi32(static_cast<int>(s.special_from) - 1);
  const __m128i shift = _mm_cvtsi32_si128(s.decode_shift);
  const __m256 pow = _mm256_set1_ps(s.decode_pow), scale = _mm256_set1_ps(scale_pow);
  const __m256d clip = _mm256_set1_pd(s.clip);
  constexpr std::size_t kWidth = D == DType::kF32 ? 4 : 2;
  __m256d sig = _mm256_setzero_pd(), err = _mm256_setzero_pd(), max_e = _mm256_setzero_pd();
  __m256 max_x = _mm256_setzero_ps();   // one multiplier: max |x|
  __m256d over = _mm256_setzero_pd();   // one per element: any |x| > clip * s_i
  __m256i special = _mm256_setzero_si256();
  const std::size_t n8 = s.n / 8 * 8;
  for (std::size_t i = 0; i < n8; i += 8) {
    const __m256 xv = load8<D>(s.x + kWidth * i);
    const __m256i q = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(s.codes + i)));
    const __m256i m = _mm256_and_si256(q, magnitude);
    special = _mm256_or_si256(special, _mm256_cmpgt_epi32(m, special_below));
    const __m256 bits = _mm256_castsi256_ps(
        _mm256_or_si256(_mm256_sll_epi32(m, shift), _mm256_slli_epi32(_mm256_and_si256(q, sign), 24)));
    __m256 sc = scale;
    if constexpr (kPerElement) sc = _mm256_mul_ps(_mm256_loadu_ps(s.scales + i), pow);
    const __m256 xh = _mm256_mul_ps(bits, sc);  // = fp32(decoded[q] * s_i), or non-finite
    const __m256d x_lo = _mm256_cvtps_pd(_mm256_castps256_ps128(xv)), x_hi = _mm256_cvtps_pd(_mm256_extractf128_ps(xv, 1));
    const __m256d e_lo = _mm256_sub_pd(x_lo, _mm256_cvtps_pd(_mm256_castps256_ps128(xh)));
    const __m256d e_hi = _mm256_sub_pd(x_hi, _mm256_cvtps_pd(_mm256_extractf128_ps(xh, 1)));
    sig = _mm256_add_pd(_mm256_add_pd(sig, _mm256_mul_pd(x_lo, x_lo)), _mm256_mul_pd(x_hi, x_hi));
    err = _mm256_add_pd(_mm256_add_pd(err, _mm256_mul_pd(e_lo, e_lo)), _mm256_mul_pd(e_hi, e_hi));
    max_e = _mm256_max_pd(max_e, _mm256_max_pd(_mm256_and_pd(abs_mask, e_lo), _mm256_and_pd(abs_mask, e_hi)));
    if constexpr (kPerElement) {
      const __m256 si = _mm256_loadu_ps(s.scales + i);
      const __m256d t_lo = _mm256_mul_pd(clip, _mm256_cvtps_pd(_mm256_castps256_ps128(si)));
      const __m256d t_hi = _mm256_mul_pd(clip, _mm256_cvtps_pd(_mm256_extractf128_ps(si, 1)));
      over = _mm256_or_pd(over, _mm256_or_pd(_mm256_cmp_pd(_mm256_and_pd(abs_mask, x_lo), t_lo, _CMP_GT_OQ),
                                             _mm256_cmp_pd(_mm256_and_pd(abs_mask, x_hi), t_hi, _CMP_GT_OQ)));
    } else {
      max_x = _mm256_max_ps(max_x, _mm256_and_ps(abs_mask_ps, xv));
    }
  }
  if (!_mm256_testz_si256(special, special)) return false;
  const __m256d dbl_max = _mm256_set1_pd(DBL_MAX);
  const __m256d finite = _mm256_and_pd(_mm256_cmp_pd(sig, dbl_max, _CMP_LE_OQ), _mm256_cmp_pd(err, dbl_max, _CMP_LE_OQ));
  if (_mm256_movemask_pd(finite) != 0xF) return false;
  if constexpr (kPerElement) {
    if (_mm256_movemask_pd(over) != 0) return false;
  } else {
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(max_x), _mm256_extractf128_ps(max_x, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_shuffle_ps(m4, m4, 1));
    if (static_cast<double>(_mm_cvtss_f32(m4)) > s.clip * static_cast<double>(s.scale)) return false;
  }
  // The check passed: n8 elements measured, none saturated.
  __m128d me2 = _mm_max_pd(_mm256_castpd256_pd128(max_e), _mm256_extractf128_pd(max_e, 1));
  me2 = _mm_max_sd(me2, _mm_unpackhi_pd(me2, me2));
  double max_err = std::max(st.max_abs_error, _mm_cvtsd_f64(me2));
  if (n8 == s.n) {
    // (sig_0 + sig_1) + (sig_2 + sig_3): one horizontal add gives both inner sums
    const __m128d sig2 = _mm_hadd_pd(_mm256_castpd256_pd128(sig), _mm256_extractf128_pd(sig, 1));
    const __m128d err2 = _mm_hadd_pd(_mm256_castpd256_pd128(err), _mm256_extractf128_pd(err, 1));
    st.count += n8;
    st.sum_sq_signal += _mm_cvtsd_f64(_mm_add_sd(sig2, _mm_unpackhi_pd(sig2, sig2)));
    st.sum_sq_error += _mm_cvtsd_f64(_mm_add_sd(err2, _mm_unpackhi_pd(err2, err2)));
    st.max_abs_error = max_err;
    return true;
  }
  // The last n mod 8 as the masked kernel steps them.
  alignas(32) double sg[4], er[4];
  _mm256_store_pd(sg, sig);
  _mm256_store_pd(er, err);
  finish<D, kPerElement>(s, n8, {sg, er, max_err, n8, 0, 0}, st);
  return true;
}

template <DType D>
void stretch_dtype(const Stretch& s, ErrorStats& st) {
  if (s.scales != nullptr) {
    if (!stretch_fast<D, true>(s, st)) stretch_masked<D, true>(s, st);
  } else {
    if (!stretch_fast<D, false>(s, st)) stretch_masked<D, false>(s, st);
  }
}

template <DType D>
void stretches_dtype(std::span<const Stretch> stretches, ErrorStats& st) {
  for (const Stretch& s : stretches) stretch_dtype<D>(s, st);
}

// Any lane of 16 16-bit elements with the exponent field `mask` all ones.
inline bool any16(const std::byte* p, __m256i mask) {
  const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  return _mm256_movemask_epi8(_mm256_cmpeq_epi16(_mm256_and_si256(v, mask), mask)) != 0;
}


void stretch_avx2(std::span<const Stretch> stretches, ErrorStats& st) {
  if (stretches.empty()) return;
  // One dtype per call (measure_error's): dispatched once, not per stretch.
  const DType d = stretches.front().dtype;
  for (const Stretch& s : stretches)
    if (s.dtype != d) throw std::logic_error("stretch_avx2: stretches of different dtypes in one call");
  switch (d) {
    case DType::kF32: stretches_dtype<DType::kF32>(stretches, st); break;
    case DType::kBF16: stretches_dtype<DType::kBF16>(stretches, st); break;
    case DType::kF16: stretches_dtype<DType::kF16>(stretches, st); break;
    default: stretch_generic(stretches, st); break;  // throws the generic kernel's error
  }
}

// Blocks of 64 elements are tested with a few vector compares; the first block that has a
// NaN / Inf is searched element by element, so the index is the generic scan's.
std::size_t first_nonfinite_avx2(const std::byte* data, DType dtype, std::size_t begin, std::size_t end) {
  const std::size_t width = dtype == DType::kF32 ? 4 : 2;
  std::size_t i = begin;
  for (; i + 64 <= end; i += 64) {
    const std::byte* p = data + width * i;
    bool any;
    if (dtype == DType::kF32) {
      const __m256i mask = _mm256_set1_epi32(0x7F800000);
      __m256i hit = _mm256_setzero_si256();
      for (int k = 0; k < 8; ++k) {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32 * k));
        hit = _mm256_or_si256(hit, _mm256_cmpeq_epi32(_mm256_and_si256(v, mask), mask));
      }
      any = !_mm256_testz_si256(hit, hit);
    } else {
      const __m256i mask = _mm256_set1_epi16(static_cast<short>(dtype == DType::kBF16 ? 0x7F80 : 0x7C00));
      any = any16(p, mask) || any16(p + 32, mask) || any16(p + 64, mask) || any16(p + 96, mask);
    }
    if (any) return first_nonfinite_generic(data, dtype, i, i + 64);
  }
  return first_nonfinite_generic(data, dtype, i, end);
}

}  // namespace

const ErrorKernels* error_kernels_avx2() {
  static constexpr ErrorKernels k{&stretch_avx2, &first_nonfinite_avx2};
  return &k;
}

}  // namespace fp8q::checkpoint::detail
