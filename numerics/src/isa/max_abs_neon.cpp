// NEON kernels of fp8q/numerics/max_abs.hpp (isa/max_abs_kernels.hpp), over xsimd: bit
// patterns are compared (unsigned), never values, so nothing depends on the FP environment.
#include <arm_neon.h>
#include <xsimd/xsimd.hpp>

#include <cstddef>
#include <cstdint>

#include "isa/max_abs_kernels.hpp"

namespace fp8q::detail {
namespace {

using A = xsimd::neon64;

std::uint16_t hmax(xsimd::batch<std::uint16_t, A> v) { return vmaxvq_u16(v); }
std::uint32_t hmax(xsimd::batch<std::uint32_t, A> v) { return vmaxvq_u32(v); }

// Four accumulators over 64-byte steps, one 16-byte step at a time after, then the last
// elements one by one (as the AVX2 kernel).
template <class T>
T bits_neon(const void* in, std::size_t n) {
  using B = xsimd::batch<T, A>;
  constexpr std::size_t kLanes = B::size;
  const auto* p = static_cast<const T*>(in);  // ld1 has no alignment requirement
  const B mask(static_cast<T>(static_cast<T>(~T{0}) >> 1));
  const auto load = [&](std::size_t i) { return B::load_unaligned(p + i) & mask; };
  B m0(T{0}), m1 = m0, m2 = m0, m3 = m0;
  std::size_t i = 0;
  for (; i + 4 * kLanes <= n; i += 4 * kLanes) {
    m0 = xsimd::max(m0, load(i));
    m1 = xsimd::max(m1, load(i + kLanes));
    m2 = xsimd::max(m2, load(i + 2 * kLanes));
    m3 = xsimd::max(m3, load(i + 3 * kLanes));
  }
  for (; i + kLanes <= n; i += kLanes) m0 = xsimd::max(m0, load(i));
  return max_abs_tail<T>(in, i, n, hmax(xsimd::max(xsimd::max(m0, m1), xsimd::max(m2, m3))));
}

constexpr MaxAbsKernels kNeon{&bits_neon<std::uint16_t>, &bits_neon<std::uint32_t>};

}  // namespace

const MaxAbsKernels* max_abs_kernels_neon() { return &kNeon; }

}  // namespace fp8q::detail
