// The 16-point Hadamard transform (hadamard.hpp). Each output's sum is exact in fp64 when the
// block's nonzero values lie within 2^25 of each other (24-bit significands, 16 terms: at most
// 53 bits), and is then rounded once by the conversion to fp32; a wider block is summed in
// integers (exact_sum.hpp). Either way the result is the exact sum rounded once.
#include "fp8q/numerics/hadamard.hpp"

#include <algorithm>
#include <array>
#include <stdexcept>
#include <string>

#include "exact_sum.hpp"
#include "fp8q/numerics/convert.hpp"
#include "fp8q/numerics/fp_env.hpp"
#include "fp8q/numerics/parallel.hpp"

namespace fp8q {
namespace {

constexpr std::size_t kB = kHadamardBlock;

// H_16 diag(s) as signs: term i of output j is negated where bit i of row j is set. Sylvester's
// doubling, H_2n = [[H_n, H_n], [H_n, -H_n]], gives bit i of row j = parity(i & j). (Written as
// the doubling: GCC 12.2 at -O2 compiles the parity loop over i and j to all-zero rows.)
std::array<std::uint16_t, kB> negations(std::uint16_t sign_mask) {
  std::array<std::uint16_t, kB> h{};
  for (std::size_t n = 1; n < kB; n *= 2)
    for (std::size_t j = 0; j < n; ++j) {
      const unsigned top = h[j], low = (1u << n) - 1;
      h[j] = static_cast<std::uint16_t>(top | (top << n));
      h[j + n] = static_cast<std::uint16_t>(top | ((top ^ low) << n));
    }
  for (auto& row : h) row = static_cast<std::uint16_t>(row ^ sign_mask);
  return h;
}

// Whether every sum of +-x_i over the block is exact in fp64: the nonzero finite exponents span
// at most 25 binades (terms below 2^(top + 1), multiples of 2^(low - 23), 16 of them).
bool fp64_exact(const float* x) {
  int top = -1000, low = 1000;
  for (std::size_t i = 0; i < kB; ++i) {
    const std::uint32_t field = (bits_of(x[i]) >> 23) & 0xFF;
    if ((bits_of(x[i]) & 0x7FFFFFFFu) == 0) continue;
    if (field == 0xFF) return true;  // an Inf or NaN decides the sum: fp64 gives the IEEE result
    const int e = field == 0 ? 1 : static_cast<int>(field);
    top = std::max(top, e), low = std::min(low, e);
  }
  return top - low <= 25;
}

float canonical(float y) { return y != y ? float_of(detail::kCanonicalNan) : y; }

void block(const float* x, float* y, const std::array<std::uint16_t, kB>& neg) {
  if (fp64_exact(x)) {
    for (std::size_t j = 0; j < kB; ++j) {
      double s = -0.0;  // IEEE: an exact zero sum is -0 only when every term is -0
      for (std::size_t i = 0; i < kB; ++i) s += ((neg[j] >> i) & 1u) != 0 ? -static_cast<double>(x[i]) : x[i];
      y[j] = canonical(static_cast<float>(s * 0.25));  // s / 4 exact; one rounding to fp32
    }
    return;
  }
  for (std::size_t j = 0; j < kB; ++j) {
    detail::ExactSum s;
    for (std::size_t i = 0; i < kB; ++i) {
      detail::Term t = detail::term_of(x[i]);
      if (((neg[j] >> i) & 1u) != 0) t.negative = !t.negative;
      t.exp -= 2;  // x / 4, exact as a term
      s.add(t);
    }
    y[j] = canonical(s.round(kF32, Rounding::kNearestEven));
  }
}

}  // namespace

void hadamard16(std::span<const float> x, std::span<float> out, std::uint16_t sign_mask, int threads) {
  if (x.size() % kB != 0)
    throw std::invalid_argument("hadamard16: " + std::to_string(x.size()) + " values, not a multiple of 16");
  if (out.size() != x.size())
    throw std::invalid_argument("hadamard16: out has " + std::to_string(out.size()) + " values, x " +
                                std::to_string(x.size()));
  const auto neg = negations(sign_mask);
  parallel_chunks(x.size() / kB, threads, [&](std::size_t b, std::size_t e) {
    ScopedDefaultFpEnv env;
    for (std::size_t k = b; k < e; ++k) block(&x[k * kB], &out[k * kB], neg);
  });
}

}  // namespace fp8q
