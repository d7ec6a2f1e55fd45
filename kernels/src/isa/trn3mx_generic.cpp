// The trainium3_mx micro-kernel (isa/trn3mx_kernel.hpp) on one fp64 lane: the portable path,
// and the text the vector kernels run lane by lane. fma is a product and a sum, exact here.
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "isa/trn3mx.hpp"

namespace {
#include "isa/trn3mx_kernel.hpp"

struct OpsTrn3Scalar {
  static constexpr std::size_t kLanes = 1;
  using D = double;
  using M = bool;
  using P = float;
  static std::uint64_t bits(D x) { return std::bit_cast<std::uint64_t>(x); }
  static D zero() { return 0.0; }
  static D set1(double x) { return x; }
  static D load(const double* p) { return *p; }
  static D add(D a, D b) { return a + b; }
  static D sub(D a, D b) { return a - b; }
  static D mul(D a, D b) { return a * b; }
  static D fma(D x, D y, D s) { return x * y + s; }
  static M finite(D r) { return (bits(r) & 0x7FF0000000000000u) != 0x7FF0000000000000u; }
  static M nonzero(D e) { return !(e == 0.0); }
  static M even(D r) { return (bits(r) & 1) == 0; }
  static M differ(D e, D r) { return (e > 0.0) != (r > 0.0); }
  static M m_and(M a, M b) { return a && b; }
  static M m_andnot(M a, M b) { return !a && b; }
  static M m_or(M a, M b) { return a || b; }
  static bool any(M m) { return m; }
  static M inexact(D x, D t, D s) { return (x - t < s || x - t > s) || (x - s < t || x - s > t); }
  static M midpoint(D x) { return (bits(x) & 0x1FFFFFFFu) == 0x10000000u; }
  static M below_normal(D x) {
    const std::uint64_t abs = bits(x) & 0x7FFFFFFFFFFFFFFFu;
    return abs != 0 && abs < 0x3810000000000000u;
  }
  static D step(D r, M up, M down) { return std::bit_cast<D>(bits(r) + (up ? 1u : 0u) - (down ? 1u : 0u)); }
  static D round_f32(D x) { return static_cast<float>(x); }
  static P p_load(const float* p) { return *p; }
  static void p_store(float* p, P v) { *p = v; }
  static P p_add(P psum, D t) { return psum + static_cast<float>(t); }
};
}  // namespace

namespace fp8q::detail {
Trn3MxKernel trn3mx_kernel_generic() { return Trn3MxKernelT<OpsTrn3Scalar, 2, 4>::kernel(); }
}  // namespace fp8q::detail
