// Internal: Philox4x32-10 (numerics/philox.hpp) in the lanes of an ISA's Ops, for the
// stochastic rounding of the narrowing kernels: one counter per lane. Included only by the
// ISA translation units, inside an anonymous namespace (see narrow_kernel.hpp).
#pragma once

#include <cstdint>

#include "fp8q/numerics/philox.hpp"

template <class Ops>
struct PhiloxLanes {
  using V = typename Ops::V;

  // The key schedule of one seed, broadcast: (k0 + r W0, k1 + r W1) for rounds r = 0 .. 9.
  struct Keys {
    V key0[10], key1[10];
    void set(std::uint64_t seed) {
      auto k0 = static_cast<std::uint32_t>(seed), k1 = static_cast<std::uint32_t>(seed >> 32);
      for (int r = 0; r < 10; ++r, k0 += fp8q::kPhiloxW0, k1 += fp8q::kPhiloxW1) {
        key0[r] = Ops::set1(static_cast<std::int32_t>(k0));
        key1[r] = Ops::set1(static_cast<std::int32_t>(k1));
      }
    }
  };

  // First word of Philox4x32-10 for counters n .. n + kLanes - 1.
  static V word0(std::uint64_t n, const Keys& k) {
    if constexpr (requires(V a) { Ops::mul_wide(a, a); }) {
      V c0, c1;
      counters(n, c0, c1);
      return Ops::interleave(word0_wide(c0, c1, k), word0_wide(Ops::high_down(c0), Ops::high_down(c1), k));
    } else {
      return word0_narrow(n, k);
    }
  }

 private:
  // The lanes' counters: low words n + lane, high words n >> 32 plus the carry.
  static void counters(std::uint64_t n, V& c0, V& c1) {
    const V sign = Ops::set1(static_cast<std::int32_t>(0x80000000u));
    const V lo_base = Ops::set1(static_cast<std::int32_t>(static_cast<std::uint32_t>(n)));
    c0 = Ops::add(lo_base, Ops::iota());
    // carry into the high word where the low word wrapped: c0 <u lo_base
    const V wrapped = Ops::gt(Ops::bxor(lo_base, sign), Ops::bxor(c0, sign));
    c1 = Ops::sub(Ops::set1(static_cast<std::int32_t>(n >> 32)), wrapped);  // mask is -1
  }

  // word0 on 64-bit lanes, each holding one counter's words in its low half: a product's low
  // word is the product itself (the next multiply reads only the low half, so the high half
  // may hold anything) and its high word one shift. The even 32-bit lanes of the result count.
  static V word0_wide(V c0, V c1, const Keys& k) {
    const V m0 = Ops::set1(static_cast<std::int32_t>(fp8q::kPhiloxM0));
    const V m1 = Ops::set1(static_cast<std::int32_t>(fp8q::kPhiloxM1));
    V p0 = Ops::mul_wide(m0, c0);  // round 0 on (c0, c1, 0, 0): M1 * c2 = 0
    c0 = Ops::bxor(c1, k.key0[0]);
    c1 = Ops::set1(0);
    V c2 = Ops::bxor(Ops::high_down(p0), k.key1[0]), c3 = p0;
    for (int round = 1; round < 9; ++round) {
      p0 = Ops::mul_wide(m0, c0);
      const V p1 = Ops::mul_wide(m1, c2);
      c0 = Ops::bxor(Ops::bxor(Ops::high_down(p1), c1), k.key0[round]);
      c1 = p1;
      c2 = Ops::bxor(Ops::bxor(Ops::high_down(p0), c3), k.key1[round]);
      c3 = p0;
    }
    return Ops::bxor(Ops::bxor(Ops::high_down(Ops::mul_wide(m1, c2)), c1), k.key0[9]);  // round 9, word 0
  }

  // word0 with a 32 x 32 -> 64 multiply of every lane (Ops::mulhilo).
  static V word0_narrow(std::uint64_t n, const Keys& k) {
    const V zero = Ops::set1(0);
    V c0, c1;
    counters(n, c0, c1);
    const V m0 = Ops::set1(static_cast<std::int32_t>(fp8q::kPhiloxM0));
    const V m1 = Ops::set1(static_cast<std::int32_t>(fp8q::kPhiloxM1));
    // round 0 on (c0, c1, 0, 0): M1 * c2 = 0, so only M0 * c0 is formed
    V hi0, lo0, hi1, lo1;
    Ops::mulhilo(m0, c0, hi0, lo0);
    c0 = Ops::bxor(c1, k.key0[0]);
    c1 = zero;
    V c2 = Ops::bxor(hi0, k.key1[0]), c3 = lo0;
    for (int round = 1; round < 9; ++round) {
      Ops::mulhilo(m0, c0, hi0, lo0);
      Ops::mulhilo(m1, c2, hi1, lo1);
      c0 = Ops::bxor(Ops::bxor(hi1, c1), k.key0[round]);
      c1 = lo1;
      c2 = Ops::bxor(Ops::bxor(hi0, c3), k.key1[round]);
      c3 = lo0;
    }
    // round 9: word 0 alone, hi(M1 * c2) ^ c1 ^ key0
    Ops::mulhilo(m1, c2, hi1, lo1);
    return Ops::bxor(Ops::bxor(hi1, c1), k.key0[9]);
  }
};
