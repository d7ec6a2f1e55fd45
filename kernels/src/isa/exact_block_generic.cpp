// The portable exact_block micro-kernel (any CPU): the same sums as the AVX2 kernel, one
// output at a time. Compiled with -ffp-contract=off, so `s + a * b` is a multiply and an add,
// both exact here (see exact_block.hpp), and the TwoSum below is not fused.
#include <cstring>

#include "exact_block.hpp"

namespace fp8q::detail {
namespace {

std::uint64_t bits(double x) {
  std::uint64_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}
double from_bits(std::uint64_t u) {
  double x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

// hi + lo (both exact fp64 sums) rounded once to fp32: TwoSum gives s + err = hi + lo exactly;
// s made odd toward err is the round-to-odd of hi + lo at 53 bits; its fp32 rounding is the
// correct one. With a NaN or an infinity in hi or lo, err is NaN and s is the IEEE sum.
float round_pair(double hi, double lo) {
  const double s = hi + lo;
  const double bb = s - hi;
  const double err = (hi - (s - bb)) + (lo - bb);
  std::uint64_t u = bits(s);
  if (err != 0.0 && err == err && (u & 1) == 0) u += ((u ^ bits(err)) >> 63) != 0 ? std::uint64_t(-1) : 1;
  return static_cast<float>(from_bits(u));
}

void kernel(const XbTile& t) {
  const double* ap = t.ap;
  const double* bp = t.bp;
  for (std::size_t blk = 0; blk < t.nblocks; ++blk) {
    const std::size_t n = t.len[blk];
    for (std::size_t i = 0; i < kXbMr; ++i)
      for (std::size_t j = 0; j < kXbNr; ++j) {
        float r;
        if (t.mode[blk] == kXbDirect) {
          double s = -0.0;  // -0 + x = x; -0 stays only when every product is -0, as in the exact sum
          for (std::size_t k = 0; k < n; ++k) s = s + ap[k * kXbMr + i] * bp[k * kXbNr + j];
          r = static_cast<float>(s);  // the exact sum, rounded once (nearest-even)
        } else {
          const double thr = t.thr[(blk * kXbMr + i) * kXbNr + j];
          double hi = -0.0, lo = -0.0;
          for (std::size_t k = 0; k < n; ++k) {
            const double p = ap[k * kXbMr + i] * bp[k * kXbNr + j];
            if ((p < 0.0 ? -p : p) >= thr) hi = hi + p;
            else lo = lo + p;  // also NaN products
          }
          r = round_pair(hi, lo);
        }
        float& acc = t.acc[i * t.ld + j];
        acc = acc + r;
      }
    ap += n * kXbMr;
    bp += n * kXbNr;
  }
}

}  // namespace

XbKernel exact_block_kernel_generic() { return &kernel; }

}  // namespace fp8q::detail
