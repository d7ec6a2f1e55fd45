// Internal: the fused micro-kernel with one 16-lane vector per tile row, written once over an
// `Ops` type: fused_avx512.cpp instantiates it with AVX-512 intrinsics, a test with a
// lane-by-lane emulation of them (tests/kernels/ops_lanes16_models.hpp), so that this text runs
// on machines without AVX-512 (docs/numerics.md, "Fast paths"). The arithmetic is fused.hpp's,
// every float operation exact there. Included only inside an anonymous namespace, after fused.hpp.
//
// Ops: B (64 int8 lanes, four 16-byte lanes), I (16 int32), F (16 fp32), L (8 int64), D (8 fp64);
//   bytes: load_i8, load_i8_low32(src, p) (bytes 0..32 from p, the rest from src), set1_i8,
//     set1_u32, shuffle_i8 (vpshufb: within each 16-byte lane), adds_i8 (saturating), max_i8,
//     swap256 / swap128 (exchange the 256-bit halves / the 16-byte lanes of each half),
//     widen_i8 (bytes 0..16 sign-extended to I);
//   int32: set1_i32, add_i32, sub_i32 (wrapping), max_i32 (signed), and_i32, srli_i32, slli_i32,
//     testn_i32(a, b) = lanes where a & b == 0, blend_i32(m, no, yes), bits(F), as_f(I);
//   fp32: load_f, set1_f, mul_f, store_f, cvtt (toward zero; NaN and out of range: INT32_MIN);
//   int64 / fp64: i32_to_pd_lo / _hi (int32 lanes 0..8 / 8..16, exact), bits_d(D), as_d(L),
//     set1_i64, add_i64, and_i64, andnot_i64(m, x) = ~m & x, srl_i64(x, n); pd_to_ps(lo, hi): the
//     16 fp32 roundings (nearest-even) of lo's and hi's lanes, in that order.
#pragma once

#include <cstddef>
#include <cstdint>

#include "isa/fused.hpp"

template <class Ops>
struct FuKernelT {
  using B = typename Ops::B;
  using I = typename Ops::I;
  using F = typename Ops::F;
  using L = typename Ops::L;
  using D = typename Ops::D;
  static constexpr std::size_t kMr = fp8q::detail::kFuMr, kNr = fp8q::detail::kFuNr;
  static_assert(Ops::kLanes == kNr, "one vector per tile row");

  // E_prod[i][j] = max over the step's K slots of e_a[k][i] + e_b[k][j] (saturated), four slots
  // per vector: 16-byte lane q holds slot k + q. n is even; two remaining slots fill the upper
  // lanes with -128 on both sides (-128 + -128 saturates to -128, below every real term).
  static void step_exponents(std::size_t n, const std::uint16_t* am, const std::int8_t* bm, I e[kMr]) {
    alignas(64) static constexpr std::int8_t kPick[64] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                                          1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                                                          2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
                                                          3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3};
    const B pick = Ops::load_i8(kPick), floor = Ops::set1_i8(-128);
    B m[kMr];
    for (std::size_t i = 0; i < kMr; ++i) m[i] = floor;
    for (std::size_t k = 0; k < n; k += 4, am += 2 * kMr, bm += 4 * kNr) {
      const bool full = k + 4 <= n;
      const B b = full ? Ops::load_i8(bm) : Ops::load_i8_low32(floor, bm);
      for (std::size_t i = 0; i < kMr; ++i) {
        // bytes e[k][i], e[k + 1][i], e[k + 2][i], e[k + 3][i]; vpshufb spreads byte q over lane q
        const std::uint32_t w = am[i] | std::uint32_t{full ? am[kMr + i] : std::uint16_t{0x8080}} << 16;
        m[i] = Ops::max_i8(m[i], Ops::adds_i8(Ops::shuffle_i8(Ops::set1_u32(w), pick), b));
      }
    }
    for (std::size_t i = 0; i < kMr; ++i) {
      const B h = Ops::max_i8(m[i], Ops::swap256(m[i]));
      e[i] = Ops::widen_i8(Ops::max_i8(h, Ops::swap128(h)));
    }
  }

  // 2^x for int32 lanes x in [-126, 127], from the bits.
  static F pow2(I x) { return Ops::as_f(Ops::slli_i32(Ops::add_i32(x, Ops::set1_i32(127)), 23)); }

  // The integers of 8 fp64 lanes rounded to R + 1 significant bits on their encodings (the
  // magnitude; the sign bit is untouched): drop = 52 - R low bits, nearest-even or toward zero.
  static D round_bits(D x, L low_mask, L half_minus_one, int drop, bool nearest_even) {
    L u = Ops::bits_d(x);
    if (nearest_even) {
      const L odd = Ops::and_i64(Ops::srl_i64(u, drop), Ops::set1_i64(1));
      u = Ops::add_i64(u, Ops::add_i64(half_minus_one, odd));
    }
    return Ops::as_d(Ops::andnot_i64(low_mask, u));
  }

  static void run(const fp8q::detail::FuTile& t) {
    using fp8q::detail::kFuMinE, fp8q::detail::kFuZeroExp;
    const float* ap = t.ap;
    const std::uint16_t* am = t.am;
    const float* bp = t.bp;
    const std::int8_t* bm = t.bm;
    const int f = t.align_bits, r = t.result_bits, drop = 52 - r;
    const L low_mask = Ops::set1_i64((std::int64_t{1} << drop) - 1);
    const L half_minus_one = Ops::set1_i64((std::int64_t{1} << (drop - 1)) - 1);
    const I abs_mask = Ops::set1_i32(0x7FFFFFFF), fv = Ops::set1_i32(f);
    for (std::size_t step = 0; step < t.nsteps; ++step) {
      const std::size_t n = t.len[step];
      I e8[kMr], acc[kMr];
      F scale[kMr], unscale[kMr];  // 2^(f - E), 2^(E - f)
      step_exponents(n, am, bm, e8);
      for (std::size_t i = 0; i < kMr; ++i) {
        const F c = Ops::load_f(t.c + i * t.ld);
        const I cu = Ops::bits(c);
        // e_C = max(biased exponent - 127, -126), or kFuZeroExp when C == 0
        const I biased = Ops::and_i32(Ops::srli_i32(cu, 23), Ops::set1_i32(0xFF));
        I ec = Ops::max_i32(Ops::sub_i32(biased, Ops::set1_i32(127)), Ops::set1_i32(-126));
        ec = Ops::blend_i32(Ops::testn_i32(cu, abs_mask), ec, Ops::set1_i32(kFuZeroExp));
        const I e = Ops::max_i32(Ops::max_i32(e8[i], ec), Ops::set1_i32(kFuMinE));
        scale[i] = pow2(Ops::sub_i32(fv, e));
        unscale[i] = pow2(Ops::sub_i32(e, fv));
        acc[i] = Ops::cvtt(Ops::mul_f(c, scale[i]));  // trunc(C * 2^(f - E))
      }
      for (std::size_t k = 0; k < n; ++k, ap += kMr, bp += kNr) {
        const F b = Ops::load_f(bp);
        // trunc(a * b * 2^(f - E)): both products exact
        for (std::size_t i = 0; i < kMr; ++i)
          acc[i] = Ops::add_i32(acc[i], Ops::cvtt(Ops::mul_f(Ops::mul_f(Ops::set1_f(ap[i]), b), scale[i])));
      }
      for (std::size_t i = 0; i < kMr; ++i) {
        const D lo = round_bits(Ops::i32_to_pd_lo(acc[i]), low_mask, half_minus_one, drop, t.nearest_even);
        const D hi = round_bits(Ops::i32_to_pd_hi(acc[i]), low_mask, half_minus_one, drop, t.nearest_even);
        Ops::store_f(t.c + i * t.ld, Ops::mul_f(Ops::pd_to_ps(lo, hi), unscale[i]));  // <= 24 bits: exact
      }
      am += n / 2 * kMr;
      bm += n * kNr;
    }
  }
};
