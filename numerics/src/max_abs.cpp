// The largest |x| pattern of an array (fp8q/numerics/max_abs.hpp): the baseline kernels
// (SSE2, part of x86-64; plain loops elsewhere) and the dispatch to the AVX2 ones.
#include "fp8q/numerics/max_abs.hpp"

#include <algorithm>
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

// Blocks of 16: each block's 16-byte vectors combined, then its lanes reduced by the scalar step.
template <class T, class L>
void blocks16_base(const void* in, std::size_t blocks, std::uint32_t* m) {
  const auto* p = static_cast<const unsigned char*>(in);
  for (std::size_t b = 0; b < blocks; ++b, p += 16 * sizeof(T)) {
#if defined(__SSE2__)
    constexpr std::size_t kRegs = sizeof(T) * 16 / 16;
    const __m128i mask = L::mask();
    __m128i v = _mm_and_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)), mask);
    for (std::size_t k = 1; k < kRegs; ++k)
      v = L::max(v, _mm_and_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * k)), mask));
    alignas(16) T lanes[16 / sizeof(T)];
    _mm_store_si128(reinterpret_cast<__m128i*>(lanes), v);
    m[b] = std::max<std::uint32_t>(m[b], max_abs_tail<T>(lanes, 0, 16 / sizeof(T), 0));
#else
    m[b] = std::max<std::uint32_t>(m[b], max_abs_tail<T>(p, 0, 16, 0));
#endif
  }
}

// Elementwise maxima, 16 bytes at a time, then the last elements.
template <class T, class L>
void accumulate_base(const void* in, std::size_t n, void* acc) {
  std::size_t i = 0;
#if defined(__SSE2__)
  constexpr std::size_t kLanes = 16 / sizeof(T);
  const auto* p = static_cast<const unsigned char*>(in);
  auto* a = static_cast<unsigned char*>(acc);
  const __m128i mask = L::mask();
  for (; i + kLanes <= n; i += kLanes) {
    const __m128i x = _mm_and_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + sizeof(T) * i)), mask);
    auto* v = reinterpret_cast<__m128i*>(a + sizeof(T) * i);
    _mm_storeu_si128(v, L::max(_mm_loadu_si128(v), x));
  }
#endif
  accumulate_tail<T>(in, i, n, acc);
}

#if defined(__SSE2__)
using Lanes16 = Sse2Lanes16;
using Lanes32 = Sse2Lanes32;
#else
using Lanes16 = void;
using Lanes32 = void;
#endif
constexpr MaxAbsKernels kBase{&bits_base<std::uint16_t, Lanes16>,       &bits_base<std::uint32_t, Lanes32>,
                              &blocks16_base<std::uint16_t, Lanes16>,   &blocks16_base<std::uint32_t, Lanes32>,
                              &accumulate_base<std::uint16_t, Lanes16>, &accumulate_base<std::uint32_t, Lanes32>};

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

namespace {
void check_blocks16(std::size_t elements, std::size_t blocks) {
  if (elements != 16 * blocks)
    throw std::invalid_argument("max_abs_bits_blocks16: " + std::to_string(elements) + " elements are not " +
                                std::to_string(blocks) + " blocks of 16");
}
void check_accumulate(std::size_t elements, std::size_t accumulators) {
  if (elements != accumulators)
    throw std::invalid_argument("max_abs_accumulate: " + std::to_string(elements) + " elements, " +
                                std::to_string(accumulators) + " accumulators");
}
}  // namespace

void max_abs_accumulate(std::span<const float> x, std::span<float> acc, std::optional<Isa> isa) {
  check_accumulate(x.size(), acc.size());
  kernels_for(isa).accumulate32(x.data(), x.size(), acc.data());
}

void max_abs_accumulate(std::span<const std::uint16_t> x, std::span<std::uint16_t> acc, std::optional<Isa> isa) {
  check_accumulate(x.size(), acc.size());
  kernels_for(isa).accumulate16(x.data(), x.size(), acc.data());
}

void max_abs_bits_blocks16(std::span<const float> x, std::span<std::uint32_t> m, std::optional<Isa> isa) {
  check_blocks16(x.size(), m.size());
  kernels_for(isa).blocks16_32(x.data(), m.size(), m.data());
}

void max_abs_bits_blocks16(std::span<const std::uint16_t> x, std::span<std::uint32_t> m, std::optional<Isa> isa) {
  check_blocks16(x.size(), m.size());
  kernels_for(isa).blocks16_16(x.data(), m.size(), m.data());
}

}  // namespace fp8q
