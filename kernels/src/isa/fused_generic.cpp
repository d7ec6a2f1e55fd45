// The portable fused micro-kernel (any CPU): the arithmetic of fused.hpp, one output at a time,
// on the same packed operands as the AVX2 kernel. Compiled with -ffp-contract=off.
#include <cstdint>
#include <cstring>

#include "fused.hpp"

namespace fp8q::detail {
namespace {

float pow2f(int e) {  // 2^e for -126 <= e <= 127, built from its bits
  const std::uint32_t u = static_cast<std::uint32_t>(e + 127) << 23;
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

// The model exponent of C: that of its fp32 value (never subnormal here); kFuZeroExp for 0.
int exp_of(float c) {
  std::uint32_t u;
  std::memcpy(&u, &c, sizeof u);
  if ((u & 0x7FFFFFFFu) == 0) return kFuZeroExp;
  const int e = static_cast<int>((u >> 23) & 0xFF) - 127;
  return e < -126 ? -126 : e;
}

// |s| rounded to f + 1 significant bits, sign kept (exact integers below 2^31).
std::int64_t round_sig(std::int64_t s, int f, bool nearest_even) {
  const bool neg = s < 0;
  std::uint64_t m = static_cast<std::uint64_t>(neg ? -s : s);
  int bits = 0;
  while ((m >> bits) != 0) ++bits;
  if (bits > f + 1) {
    const int drop = bits - (f + 1);
    const std::uint64_t rest = m & ((std::uint64_t{1} << drop) - 1), half = std::uint64_t{1} << (drop - 1);
    m >>= drop;
    if (nearest_even && (rest > half || (rest == half && (m & 1) != 0))) ++m;  // may carry to 2^(f+1): still exact
    m <<= drop;
  }
  return neg ? -static_cast<std::int64_t>(m) : static_cast<std::int64_t>(m);
}

void kernel(const FuTile& t) {
  const float* ap = t.ap;
  const std::uint16_t* am = t.am;
  const float* bp = t.bp;
  const std::int8_t* bm = t.bm;
  const int f = t.align_bits, r = t.result_bits;
  for (std::size_t step = 0; step < t.nsteps; ++step) {
    const std::size_t n = t.len[step];
    for (std::size_t i = 0; i < kFuMr; ++i)
      for (std::size_t j = 0; j < kFuNr; ++j) {
        float& c = t.c[i * t.ld + j];
        int e = exp_of(c);
        for (std::size_t k = 0; k < n; ++k) {
          const auto ea = static_cast<std::int8_t>(am[(k / 2) * kFuMr + i] >> (8 * (k % 2)));
          const int sum = ea + bm[k * kFuNr + j];  // the AVX2 kernel saturates at -128: same max
          e = sum > e ? sum : e;
        }
        e = e < kFuMinE ? kFuMinE : e;
        const float scale = pow2f(f - e);
        std::int64_t s = static_cast<std::int32_t>(c * scale);  // truncation toward zero
        for (std::size_t k = 0; k < n; ++k) s += static_cast<std::int32_t>(ap[k * kFuMr + i] * bp[k * kFuNr + j] * scale);
        c = static_cast<float>(round_sig(s, r, t.nearest_even)) * pow2f(e - f);
      }
    ap += n * kFuMr;
    am += n / 2 * kFuMr;
    bp += n * kFuNr;
    bm += n * kFuNr;
  }
}

}  // namespace

FuKernel fused_kernel_generic() { return &kernel; }

}  // namespace fp8q::detail
