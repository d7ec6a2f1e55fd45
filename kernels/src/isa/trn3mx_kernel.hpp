// Internal: the trainium3_mx micro-kernel (isa/trn3mx.hpp) written once over the fp64-lane
// operations of an ISA, Ops:
//   kLanes          fp64 lanes per vector D; P holds kLanes fp32 (PSUM lanes), M a lane mask
//   zero, set1, load (unaligned), add, sub, mul      IEEE fp64, one rounding each
//   fma(x, y, s)    x * y + s; used only where the result is exact, so fused or not is the same
//   finite(r)       r's exponent field not all ones
//   nonzero(e)      e != 0, true where unordered
//   even(r)         r's last pattern bit is 0
//   differ(e, r)    (e > 0) != (r > 0), ordered compares
//   m_and(a, b), m_andnot(a, b) = ~a & b, m_or(a, b), any(m)
//   inexact(x, t, s)  x - t != s or x - s != t (ordered): for x = fp64(t + s), whether the sum
//                   was rounded (the difference with the larger of t, s is exact: Fast2Sum)
//   midpoint(x)     x's pattern & 0x1FFFFFFF == 0x10000000 (an fp32 tie)
//   below_normal(x) 0 < |x| < 2^-126, compared on the pattern
//   step(r, up, down)  r's pattern + 1 in the lanes of up, - 1 in those of down
//   round_f32(x)    fp64(fp32(x)), nearest-even
//   p_load, p_store, p_add(psum, t) = fp32(psum + fp32(t))
// and, where the ISA rounds each instruction its own way (optional):
//   add_odd(t, s)   t + s rounded to odd at 53 bits; then fp32 of it is fp32(t + s), one rounding
//                   (53 >= 24 + 2), whatever t + s is, with no test and no branch
//   round_f32_bounded(x)  round_f32(x) for finite x below 2^127 with no bit below 2^-149
// Each lane runs the same operations in the same order, so every lane width gives its bits.
// Included inside an anonymous namespace by each ISA's translation unit and by the test.
#pragma once

#include <cstddef>

#include "isa/trn3mx.hpp"

// kR rows x kV vectors of outputs per register tile: kR * kV independent rounding chains hide
// one chain's latency, and each B load serves kR rows.
template <class O, int kR, int kV>
struct Trn3MxKernelT {
  using D = typename O::D;
  using M = typename O::M;
  using Sums = fp8q::detail::Trn3Sums;
  static constexpr std::size_t kSlots = fp8q::detail::kTrn3Slots, kCols = kV * O::kLanes;

  // fp32 of the exact t + s per lane (t holds fp32 values): a two-sum r + e, r rounded to odd at
  // 53 bits (one ulp toward e where e != 0 and r's last bit is even), then to fp32.
  static D add_once(D t, D s) {
    const D r = O::add(t, s), bv = O::sub(r, t);
    const D e = O::add(O::sub(t, O::sub(r, bv)), O::sub(s, bv));
    const M adjust = O::m_and(O::finite(r), O::m_and(O::nonzero(e), O::even(r)));
    const M differ = O::differ(e, r);  // toward e: up in magnitude where e and r agree in sign
    return O::round_f32(O::step(r, O::m_andnot(differ, adjust), O::m_and(differ, adjust)));
  }

  // fp32 of an exact x; under kExactBounded by the ISA's own form where it has one
  template <Sums kSums>
  static D round_exact(D x) {
    if constexpr (kSums == Sums::kExactBounded && requires(D a) { O::round_f32_bounded(a); })
      return O::round_f32_bounded(x);
    else
      return O::round_f32(x);
  }

  template <Sums kSums>
  static void tile_rows(const double* a, const double* b, std::size_t parts, float* psum, std::size_t ldp) {
    D t[kR][kV];
    for (int r = 0; r < kR; ++r)
      for (int v = 0; v < kV; ++v) t[r][v] = O::zero();
    for (std::size_t p = 0; p < parts; ++p) {
      D s[kR][kV];
      for (int c = 0; c < 4; ++c) {
        const std::size_t i = 4 * p + static_cast<std::size_t>(c);
        D y[kV];
        for (int v = 0; v < kV; ++v) y[v] = O::load(b + i * kCols + O::kLanes * v);
        for (int r = 0; r < kR; ++r) {
          const D x = O::set1(a[r * kSlots + i]);
          for (int v = 0; v < kV; ++v) s[r][v] = c == 0 ? O::mul(x, y[v]) : O::fma(x, y[v], s[r][v]);
        }
      }
      if constexpr (kSums == Sums::kExact || kSums == Sums::kExactBounded) {  // x = t + s_p is exact
        for (int r = 0; r < kR; ++r)
          for (int v = 0; v < kV; ++v) t[r][v] = round_exact<kSums>(O::add(t[r][v], s[r][v]));
        continue;
      }
      if constexpr (requires(D a) { O::add_odd(a, a); }) {
        for (int r = 0; r < kR; ++r)
          for (int v = 0; v < kV; ++v) t[r][v] = O::round_f32(O::add_odd(t[r][v], s[r][v]));
        continue;
      }
      // suspect: x = fp64(t + s) is inexact and on an fp32 rounding boundary (a tie; with tiny
      // sums, anything below fp32's normal range)
      D x[kR][kV];
      M suspect{};
      for (int r = 0; r < kR; ++r)
        for (int v = 0; v < kV; ++v) {
          x[r][v] = O::add(t[r][v], s[r][v]);
          M edge = O::midpoint(x[r][v]);
          if constexpr (kSums == Sums::kCheckedTiny) edge = O::m_or(edge, O::below_normal(x[r][v]));
          const M lane = O::m_and(edge, O::inexact(x[r][v], t[r][v], s[r][v]));
          suspect = r + v == 0 ? lane : O::m_or(suspect, lane);
        }
      if (O::any(suspect)) {
        for (int r = 0; r < kR; ++r)
          for (int v = 0; v < kV; ++v) t[r][v] = add_once(t[r][v], s[r][v]);
      } else {
        for (int r = 0; r < kR; ++r)
          for (int v = 0; v < kV; ++v) t[r][v] = O::round_f32(x[r][v]);
      }
    }
    for (int r = 0; r < kR; ++r)
      for (int v = 0; v < kV; ++v) {
        float* q = psum + static_cast<std::size_t>(r) * ldp + O::kLanes * v;
        O::p_store(q, O::p_add(O::p_load(q), t[r][v]));  // PSUM: fp32(psum + t)
      }
  }

  static void run(const fp8q::detail::Trn3MxTile& w) {
    for (std::size_t r = 0; r < w.rows; r += kR) {
      const double* a = w.a + r * kSlots;
      float* psum = w.psum + r * w.ldp;
      switch (w.sums) {
        case Sums::kChecked: tile_rows<Sums::kChecked>(a, w.b, w.parts, psum, w.ldp); break;
        case Sums::kCheckedTiny: tile_rows<Sums::kCheckedTiny>(a, w.b, w.parts, psum, w.ldp); break;
        case Sums::kExact: tile_rows<Sums::kExact>(a, w.b, w.parts, psum, w.ldp); break;
        case Sums::kExactBounded: tile_rows<Sums::kExactBounded>(a, w.b, w.parts, psum, w.ldp); break;
      }
    }
  }

  static fp8q::detail::Trn3MxKernel kernel() { return {&run, static_cast<std::size_t>(kR), kCols}; }
};
