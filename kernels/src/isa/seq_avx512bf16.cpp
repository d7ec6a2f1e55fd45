// The AVX-512 BF16 fp32-sequential micro-kernel: 6 x 64 outputs in 24 zmm accumulators, two
// K steps per instruction. Compiled with -mavx512f -mavx512bf16. vdpbf16ps computes per 32-bit
// lane acc = fp32(fp32(acc + a_hi * b_hi) + a_lo * b_lo), nearest-even (docs/numerics.md:
// measured bit for bit), which is the definition's two steps k (high half) and k + 1 (low
// half): the products of decoded FP8 values are exact in fp32. Each lane is one output.
//
// The instruction treats subnormal inputs and results as zero. Here no sum can be subnormal:
// every product is an integer multiple of 2^-34 (the smallest decoded magnitude, e5m2fnuz's
// 2^-17, squared), so a nonzero sum of them has magnitude >= 2^-34, far above fp32's smallest
// normal 2^-126.
// Only an init value could be subnormal; a tile with one takes the scalar loop below.
#include <immintrin.h>

#include "fp8q/numerics/isa.hpp"

#include <bit>

#include "seq_bf16.hpp"

namespace fp8q::detail {
namespace {

static_assert(kPairMr == 6 && kPairNr == 64, "the register tile below is written for 6 x 64");

// Whether any of the tile's init values is subnormal: 0 < |x| < 2^-126, i.e. |bits| - 1 below
// 0x7FFFFF as unsigned integers.
bool has_subnormal(const float* init, std::size_t ldi) {
  const __m512i magnitude = _mm512_set1_epi32(0x7FFFFFFF), one = _mm512_set1_epi32(1),
                top = _mm512_set1_epi32(0x007FFFFF);
  __mmask16 any = 0;
  for (std::size_t i = 0; i < kPairMr; ++i)
    for (std::size_t h = 0; h < kPairNr / 16; ++h) {
      const __m512i x = _mm512_and_si512(_mm512_loadu_si512(init + i * ldi + 16 * h), magnitude);
      any |= _mm512_cmp_epu32_mask(_mm512_sub_epi32(x, one), top, _MM_CMPINT_LT);
    }
  return any != 0;
}

// The definition step by step in scalar fp32 (-ffp-contract=off; the driver runs under the
// IEEE default environment, so subnormals are kept): the tile whose init holds a subnormal.
void scalar_tile(std::size_t pairs, const std::uint32_t* ap, const std::uint32_t* bp, const float* init,
                 std::size_t ldi, float* out, std::size_t ldo) {  // init is set, so never `add`
  auto hi = [](std::uint32_t w) { return std::bit_cast<float>(w & 0xFFFF0000u); };
  auto lo = [](std::uint32_t w) { return std::bit_cast<float>(w << 16); };
  for (std::size_t i = 0; i < kPairMr; ++i)
    for (std::size_t j = 0; j < kPairNr; ++j) {
      float acc = init[i * ldi + j];
      for (std::size_t q = 0; q < pairs; ++q) {
        const std::uint32_t a = ap[q * kPairMr + i], b = bp[q * kPairNr + j];
        acc = acc + hi(a) * hi(b);
        acc = acc + lo(a) * lo(b);
      }
      out[i * ldo + j] = acc;
    }
}

inline __m512bh as_bf16(__m512i v) { return reinterpret_cast<__m512bh&>(v); }

// Twenty-four named accumulators (an array would be stored to the stack each iteration, as in
// seq_avx2.cpp). Per pair: 4 B loads, 6 broadcasts, 24 vdpbf16ps.
void kernel(std::size_t pairs, const std::uint32_t* ap, const std::uint32_t* bp, const float* init, std::size_t ldi,
            float* out, std::size_t ldo, bool add) {
  if (init != nullptr && has_subnormal(init, ldi)) return scalar_tile(pairs, ap, bp, init, ldi, out, ldo);
  auto load = [&](std::size_t i, std::size_t h) {
    return init != nullptr ? _mm512_loadu_ps(init + i * ldi + 16 * h) : _mm512_setzero_ps();
  };
#define FP8Q_ROW(i) __m512 c##i##0 = load(i, 0), c##i##1 = load(i, 1), c##i##2 = load(i, 2), c##i##3 = load(i, 3)
  FP8Q_ROW(0); FP8Q_ROW(1); FP8Q_ROW(2); FP8Q_ROW(3); FP8Q_ROW(4); FP8Q_ROW(5);
#undef FP8Q_ROW
  for (std::size_t q = 0; q < pairs; ++q, ap += kPairMr, bp += kPairNr) {
    const __m512bh b0 = as_bf16(_mm512_loadu_si512(bp)), b1 = as_bf16(_mm512_loadu_si512(bp + 16));
    const __m512bh b2 = as_bf16(_mm512_loadu_si512(bp + 32)), b3 = as_bf16(_mm512_loadu_si512(bp + 48));
#define FP8Q_ROW(i)                                                                      \
  {                                                                                      \
    const __m512bh a = as_bf16(_mm512_set1_epi32(static_cast<int>(ap[i])));              \
    c##i##0 = _mm512_dpbf16_ps(c##i##0, a, b0), c##i##1 = _mm512_dpbf16_ps(c##i##1, a, b1); \
    c##i##2 = _mm512_dpbf16_ps(c##i##2, a, b2), c##i##3 = _mm512_dpbf16_ps(c##i##3, a, b3); \
  }
    FP8Q_ROW(0) FP8Q_ROW(1) FP8Q_ROW(2) FP8Q_ROW(3) FP8Q_ROW(4) FP8Q_ROW(5)
#undef FP8Q_ROW
  }
  const __m512 c[kPairMr][4] = {{c00, c01, c02, c03}, {c10, c11, c12, c13}, {c20, c21, c22, c23},
                                {c30, c31, c32, c33}, {c40, c41, c42, c43}, {c50, c51, c52, c53}};
  for (std::size_t i = 0; i < kPairMr; ++i)
    for (std::size_t h = 0; h < 4; ++h) {
      float* o = out + i * ldo + 16 * h;
      _mm512_storeu_ps(o, add ? _mm512_add_ps(_mm512_loadu_ps(o), c[i][h]) : c[i][h]);
    }
}

}  // namespace

PairKernel seq_kernel_avx512bf16() {
  static const bool bf16 = isa_supported(Isa::kAvx512) && __builtin_cpu_supports("avx512bf16");
  return bf16 ? &kernel : nullptr;
}

}  // namespace fp8q::detail
