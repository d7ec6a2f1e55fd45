// Internal: the exact_block micro-kernel, kVectors 8-lane fp64 vectors per tile row and pass
// (AVX-512: 2, the tile's 16 columns at once; AVX2: 1, two passes of 8), written once over an
// `Ops` type: exact_block_avx512.cpp instantiates it with AVX-512 intrinsics,
// exact_block_avx2.cpp with pairs of xsimd AVX2 batches, a test with a lane-by-lane emulation
// of the AVX-512 operations (tests/kernels/ops_lanes16_models.hpp), so that this
// text runs on machines without AVX-512 (docs/numerics.md, "Fast paths"). The sums are those of
// exact_block.hpp, in the order of exact_block_generic.cpp. Included only inside an anonymous
// namespace, after exact_block.hpp.
//
// Ops: D (8 fp64 lanes), Mask (an unsigned integer, one bit per lane), and
//   set1(x), load(p), fmadd(a, b, c) = a * b + c rounded once, mul, add, sub;
//   abs_ge(p, t) = |p| >= t, false when unordered; blend(m, no, yes) = m ? yes : no per lane;
//   nonzero(x) = x != 0, false when unordered; even(x) = the low bit of x's encoding is clear;
//   signs_differ(x, y) = the sign bits differ; step(x, up, down) = x's encoding +1 in up, -1 in down;
//   add_rounded(acc, x): acc[j] = fp32(acc[j] + fp32(x[j])), j < 8, nearest-even.
#pragma once

#include <cstddef>
#include <cstdint>

#include "isa/exact_block.hpp"

template <class Ops, std::size_t kVectors = 1>
struct XbKernelT {
  using D = typename Ops::D;
  using Mask = typename Ops::Mask;
  static constexpr std::size_t kMr = fp8q::detail::kXbMr, kNr = fp8q::detail::kXbNr;
  // One pass covers kCols columns of the tile with kVectors vectors per row (kMr * kVectors
  // accumulators); a tile wider than that takes several passes over the same A panel.
  static constexpr std::size_t kLanes = Ops::kLanes, kCols = kVectors * kLanes;
  static_assert(kNr % kCols == 0, "whole passes per tile");

  // Direct blocks: the fused multiply-add rounds once, and a * b + acc is exact here
  // (exact_block.hpp), so it equals the generic kernel's separate, exact, multiply and add.
  // Sums start at -0: -0 + x = x, and -0 stays only when every product is -0.
  static inline __attribute__((always_inline)) void direct_block(std::size_t n, const double* ap, const double* bp,
                                                                 float* acc, std::size_t ld) {
    D c[kMr][kVectors];
    for (std::size_t i = 0; i < kMr; ++i)
      for (std::size_t v = 0; v < kVectors; ++v) c[i][v] = Ops::set1(-0.0);
    for (std::size_t k = 0; k < n; ++k, ap += kMr, bp += kNr) {
      D b[kVectors];
      for (std::size_t v = 0; v < kVectors; ++v) b[v] = Ops::load(bp + v * kLanes);
      for (std::size_t i = 0; i < kMr; ++i) {
        const D a = Ops::set1(ap[i]);
        for (std::size_t v = 0; v < kVectors; ++v) c[i][v] = Ops::fmadd(a, b[v], c[i][v]);
      }
    }
    for (std::size_t i = 0; i < kMr; ++i)
      for (std::size_t v = 0; v < kVectors; ++v) Ops::add_rounded(acc + i * ld + v * kLanes, c[i][v]);
  }

  // hi + lo rounded once: TwoSum s + err = hi + lo, then s one ulp toward err when err != 0
  // (not NaN) and s is even: the round-to-odd at 53 bits, whose fp32 rounding is the correct one.
  static D round_to_odd_sum(D hi, D lo) {
    const D s = Ops::add(hi, lo);
    const D bb = Ops::sub(s, hi);
    const D err = Ops::add(Ops::sub(hi, Ops::sub(s, bb)), Ops::sub(lo, bb));
    const Mask fix = static_cast<Mask>(Ops::nonzero(err) & Ops::even(s));
    const Mask toward_zero = Ops::signs_differ(s, err);
    return Ops::step(s, static_cast<Mask>(fix & ~toward_zero), static_cast<Mask>(fix & toward_zero));
  }

  // Split blocks: two exact fp64 sums per output, hi of the products with |p| >= thr (ordered:
  // a NaN product goes to lo); -0 is the start and the filler, so an all -0 sum stays -0.
  static __attribute__((noinline)) void split_block(std::size_t n, const double* ap, const double* bp,
                                                    const double* thr, float* acc, std::size_t ld) {
    const D neg_zero = Ops::set1(-0.0);
    for (std::size_t i = 0; i < kMr; ++i)
      for (std::size_t v = 0; v < kVectors; ++v) {
        const D t = Ops::load(thr + i * kNr + v * kLanes);
        D hi = neg_zero, lo = neg_zero;
        for (std::size_t k = 0; k < n; ++k) {
          const D p = Ops::mul(Ops::set1(ap[k * kMr + i]), Ops::load(bp + k * kNr + v * kLanes));
          const Mask big = Ops::abs_ge(p, t);
          hi = Ops::add(hi, Ops::blend(big, neg_zero, p));
          lo = Ops::add(lo, Ops::blend(big, p, neg_zero));
        }
        Ops::add_rounded(acc + i * ld + v * kLanes, round_to_odd_sum(hi, lo));
      }
  }

  static void run(const fp8q::detail::XbTile& t) {
    for (std::size_t col = 0; col < kNr; col += kCols) {
      const double* ap = t.ap;
      const double* bp = t.bp + col;
      for (std::size_t blk = 0; blk < t.nblocks; ++blk) {
        const std::size_t n = t.len[blk];
        if (t.mode[blk] == fp8q::detail::kXbDirect) direct_block(n, ap, bp, t.acc + col, t.ld);
        else split_block(n, ap, bp, t.thr + blk * kMr * kNr + col, t.acc + col, t.ld);
        ap += n * kMr;
        bp += n * kNr;
      }
    }
  }
};
