// Internal: the operations NarrowKernel needs, written once over xsimd for any architecture A
// whose batches hold 4 or 8 32-bit lanes. A vector is 8 lanes (two batches where a register
// holds 4), so that a group of four vectors is one 32-element MX block. What xsimd 8.1 lacks
// (narrowing stores and saturating packs, vpmaddwd, interleaved bf16 loads, 32 x 32 -> 64-bit
// products, shifts by a count held in a register, fp16 widening, prefetch, reductions) comes
// from SimdExtras<A>, one small header per architecture (simd_extras_avx2.hpp,
// simd_extras_neon.hpp). Where it has packs (kPacks) the 32-byte stores are its own.
// Masks are vectors with all bits of a lane set (true) or clear (false).
#pragma once

#include <xsimd/xsimd.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "isa/narrow.hpp"

template <class A>
struct SimdExtras;  // specialised per architecture

template <class A>
struct OpsXsimd {
  using I = xsimd::batch<std::int32_t, A>;
  using Fb = xsimd::batch<float, A>;
  using X = SimdExtras<A>;
  static constexpr std::size_t kLanes = 8;
  using Count = typename X::Count;  // a shift count
  static Count count(int n) { return X::count(n); }
  static constexpr std::size_t kParts = kLanes / I::size;
  static_assert(kParts * I::size == kLanes, "a batch holds 4 or 8 32-bit lanes");

  struct V {
    I p[kParts];
  };
  struct F {
    Fb p[kParts];
  };

  // ---- lane-wise maps over the parts
  template <class Op>
  static V map(V a, Op op) {
    V r;
    for (std::size_t i = 0; i < kParts; ++i) r.p[i] = op(a.p[i]);
    return r;
  }
  template <class Op>
  static V map2(V a, V b, Op op) {
    V r;
    for (std::size_t i = 0; i < kParts; ++i) r.p[i] = op(a.p[i], b.p[i]);
    return r;
  }
  template <class Op>
  static F mapf2(F a, F b, Op op) {
    F r;
    for (std::size_t i = 0; i < kParts; ++i) r.p[i] = op(a.p[i], b.p[i]);
    return r;
  }
  static I mask_of(xsimd::batch_bool<std::int32_t, A> b) { return X::mask_of(b); }

  static void prefetch(const void* p) { X::prefetch(p); }

  static V set1(std::int32_t x) {
    V r;
    for (auto& q : r.p) q = I(x);
    return r;
  }
  static F set1f(float x) {
    F r;
    for (auto& q : r.p) q = Fb(x);
    return r;
  }
  static V iota() {
    alignas(32) std::int32_t lanes[kLanes] = {0, 1, 2, 3, 4, 5, 6, 7};
    V r;
    for (std::size_t i = 0; i < kParts; ++i) r.p[i] = I::load_aligned(lanes + i * I::size);
    return r;
  }
  static V add(V a, V b) { return map2(a, b, [](I x, I y) { return x + y; }); }
  static V sub(V a, V b) { return map2(a, b, [](I x, I y) { return x - y; }); }
  static V band(V a, V b) { return map2(a, b, [](I x, I y) { return x & y; }); }
  static V bor(V a, V b) { return map2(a, b, [](I x, I y) { return x | y; }); }
  static V bxor(V a, V b) { return map2(a, b, [](I x, I y) { return x ^ y; }); }
  // ~mask & b (not xsimd 8.1's bitwise_andnot, whose operand order differs between NEON and SSE)
  static V andnot(V mask, V b) { return map2(mask, b, [](I m, I y) { return ~m & y; }); }
  static V sll(V a, int n) { return map(a, [n](I x) { return X::sll(x, n); }); }
  static V srl(V a, int n) { return map(a, [n](I x) { return X::srl(x, n); }); }
  static V sllv(V a, V n) { return map2(a, n, [](I x, I c) { return X::sllv(x, c); }); }  // counts > 31 give 0
  static V srlv(V a, V n) { return map2(a, n, [](I x, I c) { return X::srlv(x, c); }); }
  static V max(V a, V b) { return map2(a, b, [](I x, I y) { return xsimd::max(x, y); }); }  // signed
  static V min(V a, V b) { return map2(a, b, [](I x, I y) { return xsimd::min(x, y); }); }
  static V gt(V a, V b) { return map2(a, b, [](I x, I y) { return mask_of(x > y); }); }  // signed
  static V eq(V a, V b) { return map2(a, b, [](I x, I y) { return mask_of(x == y); }); }
  static V select(V mask, V yes, V no) {
    V r;
    for (std::size_t i = 0; i < kParts; ++i) r.p[i] = X::select(mask.p[i], yes.p[i], no.p[i]);
    return r;
  }
  static bool any(V mask) {
    I m = mask.p[0];
    for (std::size_t i = 1; i < kParts; ++i) m = m | mask.p[i];
    return X::any(m);
  }
  static std::int32_t hmax(V a) {  // the largest lane (signed)
    I m = a.p[0];
    for (std::size_t i = 1; i < kParts; ++i) m = xsimd::max(m, a.p[i]);
    return X::hmax(m);
  }

  static F mul(F a, F b) { return mapf2(a, b, [](Fb x, Fb y) { return x * y; }); }
  // A NaN dividend is the result, as the reference's rule (SimdExtras::div).
  static F div(F a, F b) { return mapf2(a, b, [](Fb x, Fb y) { return X::div(x, y); }); }
  static F add_f(F a, F b) { return mapf2(a, b, [](Fb x, Fb y) { return x + y; }); }
  static F as_float(V a) {
    F r;
    for (std::size_t i = 0; i < kParts; ++i) r.p[i] = xsimd::bitwise_cast<Fb>(a.p[i]);
    return r;
  }
  static V bits(F a) {
    V r;
    for (std::size_t i = 0; i < kParts; ++i) r.p[i] = xsimd::bitwise_cast<I>(a.p[i]);
    return r;
  }
  static F is_nan(F a) {
    F r;
    for (std::size_t i = 0; i < kParts; ++i) r.p[i] = X::is_nan(a.p[i]);
    return r;
  }
  static F select_f(F mask, F yes, F no) {
    F r;
    for (std::size_t i = 0; i < kParts; ++i)
      r.p[i] = xsimd::bitwise_cast<Fb>(
          X::select(xsimd::bitwise_cast<I>(mask.p[i]), xsimd::bitwise_cast<I>(yes.p[i]), xsimd::bitwise_cast<I>(no.p[i])));
    return r;
  }

  // (hi, lo) = a * b, 32 x 32 -> 64 bits per lane, unsigned.
  static void mulhilo(V a, V b, V& hi, V& lo) {
    for (std::size_t i = 0; i < kParts; ++i) X::mulhilo(a.p[i], b.p[i], hi.p[i], lo.p[i]);
  }

  // Philox on 64-bit lanes (philox_lanes.hpp), where the architecture gives these (x86).
  static V mul_wide(V a, V b)
    requires requires(I x) { X::mul_wide(x, x); }
  {
    V r;
    for (std::size_t i = 0; i < kParts; ++i) r.p[i] = X::mul_wide(a.p[i], b.p[i]);
    return r;
  }
  static V high_down(V a)
    requires requires(I x) { X::high_down(x); }
  {
    V r;
    for (std::size_t i = 0; i < kParts; ++i) r.p[i] = X::high_down(a.p[i]);
    return r;
  }
  static V interleave(V even, V odd)
    requires requires(I x) { X::interleave(x, x); }
  {
    V r;
    for (std::size_t i = 0; i < kParts; ++i) r.p[i] = X::interleave(even.p[i], odd.p[i]);
    return r;
  }

  // The x86 forms (simd_extras_avx2.hpp), on one batch a vector: bf16 widened by interleaving,
  // and codes kept as t = (code << s) + c from vpmaddwd.
  static constexpr bool kInterleavedBf16 = X::kInterleavedBf16;
  static constexpr bool kShiftedCodes = X::kShiftedCodes;
  static void load4_bf16_interleaved(const unsigned char* p, V u[4]) {
    static_assert(kParts == 1);
    I t[4];
    X::load4_bf16_interleaved(p, t);
    for (int j = 0; j < 4; ++j) u[j].p[0] = t[j];
  }
  static void store_bytes4_interleaved(std::uint8_t* out, V a, V b, V c, V d) {
    X::store_bytes4_interleaved(out, a.p[0], b.p[0], c.p[0], d.p[0]);
  }
  static V madd16(V a, V b) { return map2(a, b, [](I x, I y) { return X::madd16(x, y); }); }
  template <bool kNegativeZero, bool kInterleaved = false>
  static void store_bytes4_signed_shifted(std::uint8_t* out, const V t[4], const V u[4], V c16, Count s) {
    const I tt[4] = {t[0].p[0], t[1].p[0], t[2].p[0], t[3].p[0]}, uu[4] = {u[0].p[0], u[1].p[0], u[2].p[0], u[3].p[0]};
    X::template store_bytes4_signed_shifted<kNegativeZero, kInterleaved>(out, tt, uu, c16.p[0], s);
  }

  // Loads kLanes source elements, widened exactly to fp32.
  template <fp8q::detail::Source S>
  static F load(const unsigned char* p) {
    F r;
    for (std::size_t i = 0; i < kParts; ++i) {
      if constexpr (S == fp8q::detail::Source::kF32) {
        r.p[i] = Fb::load_unaligned(reinterpret_cast<const float*>(p) + i * I::size);
      } else if constexpr (S == fp8q::detail::Source::kBF16) {  // bf16 is the top half of fp32
        r.p[i] = xsimd::bitwise_cast<Fb>(X::sll(X::widen_u16(p + 2 * i * I::size), 16));
      } else {  // fp16 -> fp32 is exact
        r.p[i] = X::widen_f16(p + 2 * i * I::size);
      }
    }
    return r;
  }

  // Stores the low byte of each lane of a, b, c, d (in that order): 32 bytes. Lanes hold
  // codes <= 0xFF.
  static void store_bytes4(std::uint8_t* out, V a, V b, V c, V d) {
    if constexpr (X::kPacks) {
      X::store_bytes4(out, a.p[0], b.p[0], c.p[0], d.p[0]);
    } else {
      const V v[4] = {a, b, c, d};
      for (std::size_t j = 0; j < 4; ++j) X::store_low_bytes(out + j * kLanes, v[j].p, kParts);
    }
  }
  // Magnitude codes c[0..3] of an 8-bit target with the fp32 patterns' signs in bit 7 (none
  // on a zero code without -0).
  template <bool kNegativeZero, bool kInterleaved = false>
  static void store_bytes4_signed(std::uint8_t* out, const V c[4], const V u[4]) {
    if constexpr (X::kPacks) {
      const I cc[4] = {c[0].p[0], c[1].p[0], c[2].p[0], c[3].p[0]}, uu[4] = {u[0].p[0], u[1].p[0], u[2].p[0], u[3].p[0]};
      X::template store_bytes4_signed<kNegativeZero, kInterleaved>(out, cc, uu);
    } else {
      static_assert(!kInterleaved, "no interleaved loads here");
      V s[4];
      const V sign_bit = set1(static_cast<std::int32_t>(0x80000000u)), zero = set1(0);
      for (int j = 0; j < 4; ++j) {
        V sign = srl(band(u[j], sign_bit), 24);
        if constexpr (!kNegativeZero) sign = andnot(eq(c[j], zero), sign);
        s[j] = bor(c[j], sign);
      }
      store_bytes4(out, s[0], s[1], s[2], s[3]);
    }
  }
};
