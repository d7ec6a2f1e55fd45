// The largest |x| pattern of an array (fp8q/numerics/max_abs.hpp): the baseline kernels
// (SSE2, part of x86-64; plain loops elsewhere) and the dispatch to the AVX2 ones.
#include "fp8q/numerics/max_abs.hpp"

#include <stdexcept>
#include <string>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "fp8q/numerics/convert.hpp"
#include "isa/max_abs_kernels.hpp"

namespace fp8q {
namespace detail {
namespace {

// Largest sign-cleared pattern; with the sign bit cleared every pattern is a non-negative
// signed integer, so SSE2's signed 16-bit max (and, for fp32, a signed compare) orders them.
#if defined(__SSE2__)
struct Sse2Lanes16 {
  using T = std::uint16_t;
  static __m128i mask() { return _mm_set1_epi16(0x7FFF); }
  static __m128i max(__m128i a, __m128i b) { return _mm_max_epi16(a, b); }
};
struct Sse2Lanes32 {  // SSE2 has no 32-bit max: a compare and a select
  using T = std::uint32_t;
  static __m128i mask() { return _mm_set1_epi32(0x7FFFFFFF); }
  static __m128i max(__m128i a, __m128i b) {
    const __m128i gt = _mm_cmpgt_epi32(b, a);
    return _mm_or_si128(_mm_and_si128(gt, b), _mm_andnot_si128(gt, a));
  }
};
#endif

// One 16-byte vector at a time, its lanes reduced by the scalar step, then the last elements.
template <class T, class L>
T bits_base(const void* in, std::size_t n) {
  std::size_t i = 0;
  T m = 0;
#if defined(__SSE2__)
  constexpr std::size_t kLanes = 16 / sizeof(T);
  const auto* p = static_cast<const unsigned char*>(in);
  const __m128i mask = L::mask();
  __m128i vm = _mm_setzero_si128();
  for (; i + kLanes <= n; i += kLanes)
    vm = L::max(vm, _mm_and_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + sizeof(T) * i)), mask));
  alignas(16) T lanes[kLanes];
  _mm_store_si128(reinterpret_cast<__m128i*>(lanes), vm);
  m = max_abs_tail<T>(lanes, 0, kLanes, 0);
#endif
  return max_abs_tail<T>(in, i, n, m);
}

#if defined(__SSE2__)
constexpr MaxAbsKernels kBase{&bits_base<std::uint16_t, Sse2Lanes16>, &bits_base<std::uint32_t, Sse2Lanes32>};
#else
constexpr MaxAbsKernels kBase{&bits_base<std::uint16_t, void>, &bits_base<std::uint32_t, void>};
#endif

}  // namespace

const MaxAbsKernels& max_abs_kernels(Isa isa) {
  return *dispatch(isa, [] { return &kBase; }, max_abs_kernels_avx2, kNoKernel, max_abs_kernels_neon);
}

float amax_value(std::uint32_t bits, const Format& from) {
  if (from == kF32) return float_of(bits);
  if (from == kBF16) return float_of(bits << 16);
  return decode_f32(bits, kF16);  // exact, Inf kept
}

}  // namespace detail

namespace {

const detail::MaxAbsKernels& kernels_for(std::optional<Isa> forced) {
  // looked up once: per-block amaxes call this for every row of every block
  static const detail::MaxAbsKernels& active = detail::max_abs_kernels(active_isa());
  if (!forced) return active;
  return detail::max_abs_kernels(resolve_isa(forced, "max_abs_bits: BulkOptions::isa"));
}

}  // namespace

std::uint32_t max_abs_bits(std::span<const float> x, std::optional<Isa> isa) {
  return kernels_for(isa).bits32(x.data(), x.size());
}

std::uint16_t max_abs_bits(std::span<const std::uint16_t> x, std::optional<Isa> isa) {
  return kernels_for(isa).bits16(x.data(), x.size());
}

}  // namespace fp8q
