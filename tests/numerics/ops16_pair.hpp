// A 32-lane Ops16 for the bf16 kernel (numerics/src/isa/narrow_bf16_kernel.hpp) that makes the
// choices of the AVX-512 build's plain conversion (ops16_avx512.hpp): 32 lanes, groups of 64
// elements, comparisons giving a mask type, the 64 codes of a group stored in element order.
// Each operation is Ops16Avx2's on both 16-lane halves, so the group logic of the AVX-512
// text (chunk ranges, the normal and general forms, the tail) runs on any AVX2 machine; the
// AVX-512 instructions themselves are what this cannot test.
// Included by the test inside an anonymous namespace, after ops16_avx2.hpp.
#pragma once

#include <cstdint>

struct Ops16Pair {
  using H = Ops16Avx2;
  struct V {
    H::V lo, hi;
  };
  struct M {
    H::M lo, hi;
  };
  static constexpr std::size_t kLanes = 32;
  using Count = H::Count;

  template <class Fn>
  static V map(V a, V b, Fn f) { return {f(a.lo, b.lo), f(a.hi, b.hi)}; }
  static V both(H::V a) { return {a, a}; }

  static void prefetch(const void* p) { H::prefetch(p); }
  static V load(const unsigned char* p) { return {H::load(p), H::load(p + 32)}; }
  static V set1(std::int16_t x) { return both(H::set1(x)); }
  static V set1_8(std::uint8_t x) { return both(H::set1_8(x)); }
  static V set_bytes(const std::uint8_t (&t)[16]) { return both(H::set_bytes(t)); }
  static V add(V a, V b) { return map(a, b, H::add); }
  static V sub(V a, V b) { return map(a, b, H::sub); }
  static V subs_u(V a, V b) { return map(a, b, H::subs_u); }
  static V min_u(V a, V b) { return map(a, b, H::min_u); }
  static V max_u(V a, V b) { return map(a, b, H::max_u); }
  static V band(V a, V b) { return map(a, b, H::band); }
  static V bor(V a, V b) { return map(a, b, [](H::V x, H::V y) { return H::bor(x, y); }); }
  template <int N> static V srl(V a) { return {H::srl<N>(a.lo), H::srl<N>(a.hi)}; }
  static Count count(int n) { return H::count(n); }
  static V srl(V a, Count n) { return {H::srl(a.lo, n), H::srl(a.hi, n)}; }
  static V sll(V a, int n) { return {H::sll(a.lo, n), H::sll(a.hi, n)}; }
  static V mul_low_byte(V a, V b) { return map(a, b, H::mul_low_byte); }
  static V lookup(V table, V idx) { return map(table, idx, H::lookup); }
  static M gt(V a, V b) { return {H::gt(a.lo, b.lo), H::gt(a.hi, b.hi)}; }
  static V select(M m, V yes, V no) { return {H::select(m.lo, yes.lo, no.lo), H::select(m.hi, yes.hi, no.hi)}; }
  static M none() { return {H::none(), H::none()}; }
  static M bor(M a, M b) { return {H::bor(a.lo, b.lo), H::bor(a.hi, b.hi)}; }
  static bool any(M m) { return H::any(H::bor(m.lo, m.hi)); }
  static bool any(V v) { return H::any(H::bor(v.lo, v.hi)); }

  // 64 bytes: c0's 32 codes, then c1's, each with its source's sign (Ops16Avx512's order).
  template <bool kSign7, bool kNegativeZero>
  static void store_signed(std::uint8_t* out, V c0, V c1, V x0, V x1, int sign_shift, V sign_bit) {
    H::store_signed<kSign7, kNegativeZero>(out, c0.lo, c0.hi, x0.lo, x0.hi, sign_shift, sign_bit.lo);
    H::store_signed<kSign7, kNegativeZero>(out + 32, c1.lo, c1.hi, x1.lo, x1.hi, sign_shift, sign_bit.lo);
  }
};
