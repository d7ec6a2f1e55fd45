// Portable histogram kernels: plain loops (the compiler vectorizes the scans). The
// reference the AVX2 kernels are tested against.
#include <cstring>

#include "isa/hist_kernels.hpp"

namespace fp8q::calib::detail {
namespace {

inline std::uint32_t abs_bits_f32(const void* in, std::size_t i) {
  std::uint32_t u;
  std::memcpy(&u, static_cast<const std::uint32_t*>(in) + i, 4);
  return u & 0x7FFFFFFFu;
}
inline std::uint32_t abs_bits_bf16(const void* in, std::size_t i) {
  std::uint16_t u;
  std::memcpy(&u, static_cast<const std::uint16_t*>(in) + i, 2);
  return (std::uint32_t{u} << 16) & 0x7FFFFFFFu;  // bf16 is the top half of an fp32 pattern
}

template <std::uint32_t (*Abs)(const void*, std::size_t)>
ScanResult scan(const void* in, std::size_t n) {  // fp32 or bf16 elements
  std::uint32_t m = 0, z = 0, lo = 0xFFFFFFFFu;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t a = Abs(in, i);
    m = a > m ? a : m;
    z += a == 0;
    const std::uint32_t am1 = a - 1;  // 0 wraps to all ones: zeros never win the min
    lo = am1 < lo ? am1 : lo;
  }
  return {m, z, lo + 1 == 0 ? 0xFFFFFFFFu : lo + 1};
}

// The bin is max((pattern >> shift) - base, 0): integers only.
template <std::uint32_t (*Abs)(const void*, std::size_t)>
void count(const void* in, std::size_t n, int shift, int base, std::uint32_t* tables, std::size_t bins) {
  for (std::size_t i = 0; i < n; ++i) {
    const int p = static_cast<int>(Abs(in, i) >> shift) - base;
    tables[(i % kTables) * bins + static_cast<std::size_t>(p > 0 ? p : 0)] += 1;
  }
}

// ---- pattern tallies ---------------------------------------------------------------------------
// q = top 16 bits of |x| (see hist_kernels.hpp); with CountZeros, the samples with q == 0 are
// counted in a register and added to slot 0 at the end (the table is the same either way).
template <bool CountZeros>
inline void tally_one(std::uint32_t q, std::uint32_t* table, std::uint32_t& zeros) {
  if constexpr (CountZeros) {
    if (q == 0) {
      ++zeros;
      return;
    }
  }
  table[q] += 1;
}

template <bool CountZeros>
ScanResult tally_f32(const float* in, std::size_t n, std::uint32_t* table) {
  const ScanResult r = scan<abs_bits_f32>(in, n);
  std::uint32_t zeros = 0;
  for (std::size_t i = 0; i < n; ++i) tally_one<CountZeros>(abs_bits_f32(in, i) >> 16, table, zeros);
  table[0] += zeros;
  return r;
}

template <bool CountZeros>
void tally_bf16(const std::uint16_t* in, std::size_t n, std::uint32_t* table) {
  std::uint32_t zeros = 0;
  for (std::size_t i = 0; i < n; ++i) tally_one<CountZeros>(abs_bits_bf16(in, i) >> 16, table, zeros);
  table[0] += zeros;
}

std::size_t select_f32(const float* in, std::size_t n, std::uint32_t above, std::uint32_t* out) {
  std::size_t k = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t a = abs_bits_f32(in, i);
    if (a > above && a < 0x7F800000u) out[k++] = a;
  }
  return k;
}

}  // namespace

const HistKernels& hist_kernels_generic() {
  static const HistKernels k{[](const float* in, std::size_t n) { return scan<abs_bits_f32>(in, n); },
                             [](const float* in, std::size_t n, int shift, int base, std::uint32_t* t, std::size_t bins) {
                               count<abs_bits_f32>(in, n, shift, base, t, bins);
                             },
                             tally_f32<false>, tally_f32<true>, tally_bf16<false>, tally_bf16<true>, select_f32};
  return k;
}

}  // namespace fp8q::calib::detail
