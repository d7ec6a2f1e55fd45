// Internal: the trainium3_mx:1x32 column kernel (isa/trn3mx.hpp) written once over the fp64-lane
// operations of an ISA, Ops:
//   kLanes          fp64 lanes per vector D; P holds kLanes fp32 (PSUM lanes), M a lane mask
//   zero, set1, load (unaligned), add, sub, mul      IEEE fp64, one rounding each (no FMA)
//   finite(r)       r's exponent field not all ones
//   nonzero(e)      e != 0, true where unordered (vcmppd _CMP_NEQ_UQ)
//   even(r)         r's last pattern bit is 0
//   differ(e, r)    (e > 0) != (r > 0), ordered compares
//   m_and(a, b), m_andnot(a, b) = ~a & b
//   step(r, up, down)  r's pattern + 1 in the lanes of up, - 1 in those of down
//   round_f32(x)    fp64(fp32(x)), nearest-even
//   p_load, p_store, p_add(psum, t) = fp32(psum + fp32(t))
// Each lane runs the scalar loop's operations in its order, so every lane width gives its bits.
// Included inside an anonymous namespace by each ISA's translation unit and by the test.
#pragma once

#include <algorithm>
#include <cstddef>

#include "fp8q/numerics/accumulation.hpp"
#include "isa/trn3mx.hpp"

template <class O, int kV>
struct Trn3MxKernelT {
  using D = typename O::D;
  static constexpr std::size_t kInst = fp8q::kTrn3MxInstructionK, kParts = kInst / 4, kGroup = fp8q::kMxGroup;
  static constexpr std::size_t kCols = kV * O::kLanes;  // columns per pass
  static_assert(fp8q::detail::kTrn3Lanes % kCols == 0);

  // fp32 of the exact t + s per lane (t holds fp32 values): a two-sum r + e, r rounded to odd at
  // 53 bits (one ulp toward e where e != 0 and r's last bit is even), then to fp32.
  static D add_once(D t, D s) {
    const D r = O::add(t, s), bv = O::sub(r, t);
    const D e = O::add(O::sub(t, O::sub(r, bv)), O::sub(s, bv));
    const auto adjust = O::m_and(O::finite(r), O::m_and(O::nonzero(e), O::even(r)));
    const auto differ = O::differ(e, r);  // toward e: up in magnitude where e and r agree in sign
    return O::round_f32(O::step(r, O::m_andnot(differ, adjust), O::m_and(differ, adjust)));
  }

  // kCols columns: kV independent rounding chains, so one chain's add_once latency is hidden by
  // the others'.
  static void pass(const double* a, const double* sa, const double* b, const double* sb, std::size_t ldb, std::size_t K,
                   float* psum_io) {
    typename O::P psum[kV];
    for (int v = 0; v < kV; ++v) psum[v] = O::p_load(psum_io + O::kLanes * v);
    for (std::size_t k0 = 0; k0 < K; k0 += kInst) {
      D t[kV];
      for (int v = 0; v < kV; ++v) t[v] = O::zero();
      for (std::size_t p = 0; p < kParts && k0 + 4 * p < K; ++p) {
        const std::size_t k = k0 + 4 * p, q = k / kGroup, len = std::min<std::size_t>(4, K - k);
        D s[kV];
        for (int v = 0; v < kV; ++v) s[v] = O::zero();
        for (std::size_t c = 0; c < len; ++c) {
          const D x = O::set1(a[k + c]);
          for (int v = 0; v < kV; ++v) s[v] = O::add(s[v], O::mul(x, O::load(b + (k + c) * ldb + O::kLanes * v)));
        }
        const D scale = O::set1(sa[q]);
        for (int v = 0; v < kV; ++v)
          t[v] = add_once(t[v], O::mul(O::mul(s[v], scale), O::load(sb + q * ldb + O::kLanes * v)));
      }
      for (int v = 0; v < kV; ++v) psum[v] = O::p_add(psum[v], t[v]);  // PSUM: fp32(psum + t)
    }
    for (int v = 0; v < kV; ++v) O::p_store(psum_io + O::kLanes * v, psum[v]);
  }

  // The Trn3MxColumns signature: kTrn3Lanes columns in passes of kCols.
  static void columns(const double* a, const double* sa, const double* b, const double* sb, std::size_t ldb,
                      std::size_t K, float* psum_io) {
    for (std::size_t j = 0; j < fp8q::detail::kTrn3Lanes; j += kCols) pass(a, sa, b + j, sb + j, ldb, K, psum_io + j);
  }
};
