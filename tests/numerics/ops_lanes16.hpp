// A 16-lane Ops for NarrowKernel (numerics/src/isa/narrow_kernel.hpp) that makes the choices
// of the AVX-512 build (ops_avx512.hpp): 16 lanes, bf16 widened in natural order, codes in
// the plain form up to the store, signs stored by store_bytes4_signed. Each operation is
// written lane by lane in portable C++ with the semantics of the AVX-512 instruction it stands
// for (shift counts above 31 give 0, signed max/min/compare, lane masks all ones or zero, the
// narrowing store truncates to the low byte). With it, the kernel paths that only the AVX-512
// build takes run on any machine; the AVX-512 Ops layer itself is what this cannot test.
// Included by the test inside an anonymous namespace, after the headers narrow_kernel.hpp needs.
#pragma once

#include <cstdint>
#include <cstring>

#include "fp8q/numerics/convert.hpp"
#include "isa/narrow.hpp"

struct OpsLanes16 {
  static constexpr std::size_t kLanes = 16;
  struct V {
    std::int32_t x[16];
  };
  struct F {
    float x[16];
  };
  static constexpr bool kInterleavedBf16 = false;
  static constexpr bool kShiftedCodes = false;
  using Count = int;  // a shift count
  static Count count(int n) { return n; }

  template <class Fn>
  static V map(Fn f) {
    V r;
    for (int i = 0; i < 16; ++i) r.x[i] = f(i);
    return r;
  }
  template <class Fn>
  static F mapf(Fn f) {
    F r;
    for (int i = 0; i < 16; ++i) r.x[i] = f(i);
    return r;
  }
  static std::uint32_t u(std::int32_t v) { return static_cast<std::uint32_t>(v); }
  static std::int32_t s(std::uint32_t v) { return static_cast<std::int32_t>(v); }
  static std::int32_t mask(bool b) { return b ? -1 : 0; }

  static V set1(std::int32_t v) { return map([&](int) { return v; }); }
  static F set1f(float v) { return mapf([&](int) { return v; }); }
  static V iota() { return map([](int i) { return i; }); }
  static V add(V a, V b) { return map([&](int i) { return s(u(a.x[i]) + u(b.x[i])); }); }
  static V sub(V a, V b) { return map([&](int i) { return s(u(a.x[i]) - u(b.x[i])); }); }
  static V band(V a, V b) { return map([&](int i) { return a.x[i] & b.x[i]; }); }
  static V bor(V a, V b) { return map([&](int i) { return a.x[i] | b.x[i]; }); }
  static V bxor(V a, V b) { return map([&](int i) { return a.x[i] ^ b.x[i]; }); }
  static V andnot(V m, V b) { return map([&](int i) { return ~m.x[i] & b.x[i]; }); }
  static V sll(V a, int n) { return map([&](int i) { return n > 31 ? 0 : s(u(a.x[i]) << n); }); }
  static V srl(V a, int n) { return map([&](int i) { return n > 31 ? 0 : s(u(a.x[i]) >> n); }); }
  static V sllv(V a, V n) { return map([&](int i) { return u(n.x[i]) > 31 ? 0 : s(u(a.x[i]) << n.x[i]); }); }
  static V srlv(V a, V n) { return map([&](int i) { return u(n.x[i]) > 31 ? 0 : s(u(a.x[i]) >> n.x[i]); }); }
  static V max(V a, V b) { return map([&](int i) { return a.x[i] > b.x[i] ? a.x[i] : b.x[i]; }); }
  static V min(V a, V b) { return map([&](int i) { return a.x[i] < b.x[i] ? a.x[i] : b.x[i]; }); }
  static V gt(V a, V b) { return map([&](int i) { return mask(a.x[i] > b.x[i]); }); }
  static V eq(V a, V b) { return map([&](int i) { return mask(a.x[i] == b.x[i]); }); }
  static V select(V m, V yes, V no) { return map([&](int i) { return m.x[i] != 0 ? yes.x[i] : no.x[i]; }); }
  static bool any(V m) {
    for (int i = 0; i < 16; ++i)
      if (m.x[i] != 0) return true;
    return false;
  }
  static std::int32_t hmax(V a) {
    std::int32_t r = a.x[0];
    for (int i = 1; i < 16; ++i) r = a.x[i] > r ? a.x[i] : r;
    return r;
  }
  // Host fp32 arithmetic: the kernels run under the IEEE default environment (the test pins
  // it, as the drivers do) and the test is compiled with -ffp-contract=off.
  static F mul(F a, F b) { return mapf([&](int i) { return a.x[i] * b.x[i]; }); }
  static F div(F a, F b) { return mapf([&](int i) { return a.x[i] / b.x[i]; }); }
  static F add_f(F a, F b) { return mapf([&](int i) { return a.x[i] + b.x[i]; }); }
  static F as_float(V a) {
    F r;
    std::memcpy(r.x, a.x, sizeof r.x);
    return r;
  }
  static V bits(F a) {
    V r;
    std::memcpy(r.x, a.x, sizeof r.x);
    return r;
  }
  static F is_nan(F a) { return as_float(map([&](int i) { return mask(a.x[i] != a.x[i]); })); }
  static F select_f(F m, F yes, F no) {
    const V mb = bits(m);
    return mapf([&](int i) { return mb.x[i] != 0 ? yes.x[i] : no.x[i]; });
  }
  static void mulhilo(V a, V b, V& hi, V& lo) {
    for (int i = 0; i < 16; ++i) {
      const std::uint64_t p = std::uint64_t{u(a.x[i])} * u(b.x[i]);
      hi.x[i] = s(static_cast<std::uint32_t>(p >> 32));
      lo.x[i] = s(static_cast<std::uint32_t>(p));
    }
  }

  // vpmuludq (the even lanes' 64-bit products), vpsrlq by 32 and the even / odd blend, on the
  // lanes as the 8 little-endian 64-bit words they form.
  static std::uint64_t word(V a, int w) { return std::uint64_t{u(a.x[2 * w + 1])} << 32 | u(a.x[2 * w]); }
  static V of_words(const std::uint64_t (&w)[8]) {
    return map([&](int i) { return s(static_cast<std::uint32_t>(w[i / 2] >> (i % 2 == 0 ? 0 : 32))); });
  }
  static V mul_wide(V a, V b) {
    std::uint64_t w[8];
    for (int i = 0; i < 8; ++i) w[i] = std::uint64_t{u(a.x[2 * i])} * u(b.x[2 * i]);
    return of_words(w);
  }
  static V high_down(V a) {
    std::uint64_t w[8];
    for (int i = 0; i < 8; ++i) w[i] = word(a, i) >> 32;
    return of_words(w);
  }
  static V interleave(V even, V odd) { return map([&](int i) { return i % 2 == 0 ? even.x[i] : odd.x[i - 1]; }); }

  template <fp8q::detail::Source S>
  static F load(const unsigned char* p) {
    V r;
    for (int i = 0; i < 16; ++i) {
      if constexpr (S == fp8q::detail::Source::kF32) {
        std::memcpy(&r.x[i], p + 4 * i, 4);
      } else {
        std::uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        r.x[i] = S == fp8q::detail::Source::kBF16 ? s(std::uint32_t{h} << 16)
                                                  : s(fp8q::bits_of(fp8q::decode_f32(h, fp8q::kF16)));  // exact
      }
    }
    return as_float(r);
  }
  static void prefetch(const void*) {}

  // vpmovdb: each lane's low byte, 16 per vector.
  static void store_bytes4(std::uint8_t* out, V a, V b, V c, V d) {
    const V v[4] = {a, b, c, d};
    for (int j = 0; j < 4; ++j)
      for (int i = 0; i < 16; ++i) out[16 * j + i] = static_cast<std::uint8_t>(u(v[j].x[i]));
  }
  template <bool kNegativeZero, bool kInterleaved = false>
  static void store_bytes4_signed(std::uint8_t* out, const V c[4], const V uu[4]) {
    static_assert(!kInterleaved, "no interleaved loads here");
    V w[4];
    for (int j = 0; j < 4; ++j)
      for (int i = 0; i < 16; ++i) {
        std::int32_t sign = s((u(uu[j].x[i]) & 0x80000000u) >> 24);
        if (!kNegativeZero && c[j].x[i] == 0) sign = 0;
        w[j].x[i] = c[j].x[i] | sign;
      }
    store_bytes4(out, w[0], w[1], w[2], w[3]);
  }
};
