// Lane-by-lane emulations of the AVX-512 operations that the exact_block, fused and trainium3_mx
// kernel templates use (kernels/src/isa/exact_block_kernel.hpp, fused_kernel.hpp,
// trn3mx_kernel.hpp; the real ones are in exact_block_avx512.cpp, fused_avx512.cpp and
// trn3mx_avx512.cpp): a 512-bit register as 8 fp64, 16 fp32 / int32
// or 64 int8 lanes in portable C++, each operation with the semantics of its instruction:
// vfmadd231pd is std::fma; vcvtpd2ps rounds as the host's fp64 -> fp32 conversion under the
// default environment (nearest-even, no FTZ/DAZ; the drivers pin it); vcmppd _CMP_GE_OQ /
// _CMP_NEQ_OQ are false when unordered; vcvttps2dq gives INT32_MIN for NaN and out of range;
// vpshufb indexes within each 16-byte lane and zeroes where the index's top bit is set; shifts
// past the lane width give 0; integer adds wrap, vpaddsb saturates. With them the kernel texts
// of the AVX-512 build run on any machine; the intrinsics layer itself is what this cannot test.
// Included by the test inside an anonymous namespace.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>

template <class T, int N>
struct Lanes {
  T x[N];
};

template <class To, class From>
To recast(const From& a) {  // a register reinterpreted as other lanes (a cast: no instruction)
  static_assert(sizeof(To) == sizeof(From));
  To r;
  std::memcpy(&r, &a, sizeof r);
  return r;
}

template <class V, class Fn>
V lanewise(Fn f) {
  V r;
  for (std::size_t i = 0; i < sizeof r.x / sizeof r.x[0]; ++i) r.x[i] = f(i);
  return r;
}

struct OpsXbLanes16 {
  static constexpr std::size_t kLanes = 8;
  using D = Lanes<double, 8>;
  using U = Lanes<std::uint64_t, 8>;
  using Mask = std::uint8_t;

  template <class Fn>
  static Mask mask_of(Fn f) {
    unsigned m = 0;
    for (unsigned i = 0; i < 8; ++i) m |= f(i) ? 1u << i : 0u;
    return static_cast<Mask>(m);
  }
  static bool bit(Mask m, std::size_t i) { return ((m >> i) & 1) != 0; }

  static D set1(double x) { return lanewise<D>([&](std::size_t) { return x; }); }
  static D load(const double* p) { return lanewise<D>([&](std::size_t i) { return p[i]; }); }
  static D fmadd(D a, D b, D c) { return lanewise<D>([&](std::size_t i) { return std::fma(a.x[i], b.x[i], c.x[i]); }); }
  static D mul(D a, D b) { return lanewise<D>([&](std::size_t i) { return a.x[i] * b.x[i]; }); }
  static D add(D a, D b) { return lanewise<D>([&](std::size_t i) { return a.x[i] + b.x[i]; }); }
  static D sub(D a, D b) { return lanewise<D>([&](std::size_t i) { return a.x[i] - b.x[i]; }); }
  // vandpd with ~sign (vpandq), then vcmppd _CMP_GE_OQ
  static Mask abs_ge(D p, D t) {
    const U u = recast<U>(p);
    const D a = recast<D>(lanewise<U>([&](std::size_t i) { return u.x[i] & 0x7FFFFFFFFFFFFFFFull; }));
    return mask_of([&](unsigned i) { return a.x[i] >= t.x[i]; });
  }
  static D blend(Mask m, D no, D yes) { return lanewise<D>([&](std::size_t i) { return bit(m, i) ? yes.x[i] : no.x[i]; }); }
  static Mask nonzero(D x) { return mask_of([&](unsigned i) { return x.x[i] < 0.0 || x.x[i] > 0.0; }); }
  static Mask even(D x) {
    const U u = recast<U>(x);
    return mask_of([&](unsigned i) { return (u.x[i] & 1) == 0; });
  }
  static Mask signs_differ(D x, D y) {
    const U a = recast<U>(x), b = recast<U>(y);
    return mask_of([&](unsigned i) { return static_cast<std::int64_t>(a.x[i] ^ b.x[i]) < 0; });
  }
  static D step(D x, Mask up, Mask down) {
    const U u = recast<U>(x);
    return recast<D>(lanewise<U>([&](std::size_t i) { return u.x[i] + (bit(up, i) ? 1 : 0) - (bit(down, i) ? 1 : 0); }));
  }
  static void add_rounded(float* acc, D x) {
    for (std::size_t i = 0; i < 8; ++i) acc[i] = acc[i] + static_cast<float>(x.x[i]);
  }
};

struct OpsFuLanes16 {
  static constexpr std::size_t kLanes = 16;
  using B = Lanes<std::int8_t, 64>;
  using I = Lanes<std::int32_t, 16>;
  using F = Lanes<float, 16>;
  using L = Lanes<std::uint64_t, 8>;
  using D = Lanes<double, 8>;
  using U32 = Lanes<std::uint32_t, 16>;

  static std::int8_t sat8(int x) { return static_cast<std::int8_t>(x < -128 ? -128 : x > 127 ? 127 : x); }
  static std::int32_t wrap(std::int64_t x) { return static_cast<std::int32_t>(static_cast<std::uint32_t>(x)); }

  static B load_i8(const std::int8_t* p) { return lanewise<B>([&](std::size_t i) { return p[i]; }); }
  // vmovdqu8 with mask 0xFFFFFFFF: bytes 32..64 are not read
  static B load_i8_low32(B src, const std::int8_t* p) {
    return lanewise<B>([&](std::size_t i) { return i < 32 ? p[i] : src.x[i]; });
  }
  static B set1_i8(std::int8_t x) { return lanewise<B>([&](std::size_t) { return x; }); }
  static B set1_u32(std::uint32_t x) {
    return lanewise<B>([&](std::size_t i) { return static_cast<std::int8_t>(x >> (8 * (i % 4))); });
  }
  static B shuffle_i8(B a, B idx) {
    return lanewise<B>([&](std::size_t i) {
      const auto j = static_cast<std::uint8_t>(idx.x[i]);
      return (j & 0x80) != 0 ? std::int8_t{0} : a.x[(i & ~std::size_t{15}) | (j & 15)];
    });
  }
  static B adds_i8(B a, B b) { return lanewise<B>([&](std::size_t i) { return sat8(a.x[i] + b.x[i]); }); }
  static B max_i8(B a, B b) { return lanewise<B>([&](std::size_t i) { return a.x[i] > b.x[i] ? a.x[i] : b.x[i]; }); }
  // vshufi64x2 a, a, 0x4E: 16-byte lanes (2, 3, 0, 1); 0xB1: (1, 0, 3, 2)
  static B swap256(B a) { return lanewise<B>([&](std::size_t i) { return a.x[i ^ 32]; }); }
  static B swap128(B a) { return lanewise<B>([&](std::size_t i) { return a.x[i ^ 16]; }); }
  static I widen_i8(B a) { return lanewise<I>([&](std::size_t i) { return std::int32_t{a.x[i]}; }); }

  static I set1_i32(int x) { return lanewise<I>([&](std::size_t) { return x; }); }
  static I add_i32(I a, I b) { return lanewise<I>([&](std::size_t i) { return wrap(std::int64_t{a.x[i]} + b.x[i]); }); }
  static I sub_i32(I a, I b) { return lanewise<I>([&](std::size_t i) { return wrap(std::int64_t{a.x[i]} - b.x[i]); }); }
  static I max_i32(I a, I b) { return lanewise<I>([&](std::size_t i) { return a.x[i] > b.x[i] ? a.x[i] : b.x[i]; }); }
  static I and_i32(I a, I b) { return lanewise<I>([&](std::size_t i) { return a.x[i] & b.x[i]; }); }
  static I srli_i32(I a, unsigned n) {
    const U32 u = recast<U32>(a);
    return recast<I>(lanewise<U32>([&](std::size_t i) { return n > 31 ? 0u : u.x[i] >> n; }));
  }
  static I slli_i32(I a, unsigned n) {
    const U32 u = recast<U32>(a);
    return recast<I>(lanewise<U32>([&](std::size_t i) { return n > 31 ? 0u : u.x[i] << n; }));
  }
  static std::uint16_t testn_i32(I a, I b) {
    unsigned m = 0;
    for (unsigned i = 0; i < 16; ++i) m |= (a.x[i] & b.x[i]) == 0 ? 1u << i : 0u;
    return static_cast<std::uint16_t>(m);
  }
  static I blend_i32(std::uint16_t m, I no, I yes) {
    return lanewise<I>([&](std::size_t i) { return ((m >> i) & 1) != 0 ? yes.x[i] : no.x[i]; });
  }
  static I bits(F a) { return recast<I>(a); }
  static F as_f(I a) { return recast<F>(a); }

  static F load_f(const float* p) { return lanewise<F>([&](std::size_t i) { return p[i]; }); }
  static F set1_f(float x) { return lanewise<F>([&](std::size_t) { return x; }); }
  static F mul_f(F a, F b) { return lanewise<F>([&](std::size_t i) { return a.x[i] * b.x[i]; }); }
  static void store_f(float* p, F a) {
    for (std::size_t i = 0; i < 16; ++i) p[i] = a.x[i];
  }
  static I cvtt(F a) {
    return lanewise<I>([&](std::size_t i) {
      const float x = a.x[i];  // in range: |x| < 2^31 (-2^31 itself converts to INT32_MIN as well)
      return x > -2147483648.0f && x < 2147483648.0f ? static_cast<std::int32_t>(x) : INT32_MIN;
    });
  }

  static D i32_to_pd_lo(I a) { return lanewise<D>([&](std::size_t i) { return static_cast<double>(a.x[i]); }); }
  static D i32_to_pd_hi(I a) { return lanewise<D>([&](std::size_t i) { return static_cast<double>(a.x[8 + i]); }); }
  static L bits_d(D a) { return recast<L>(a); }
  static D as_d(L a) { return recast<D>(a); }
  static L set1_i64(std::int64_t x) { return lanewise<L>([&](std::size_t) { return static_cast<std::uint64_t>(x); }); }
  static L add_i64(L a, L b) { return lanewise<L>([&](std::size_t i) { return a.x[i] + b.x[i]; }); }
  static L and_i64(L a, L b) { return lanewise<L>([&](std::size_t i) { return a.x[i] & b.x[i]; }); }
  static L andnot_i64(L m, L x) { return lanewise<L>([&](std::size_t i) { return ~m.x[i] & x.x[i]; }); }
  static L srl_i64(L a, int n) {
    return lanewise<L>([&](std::size_t i) { return n < 0 || n > 63 ? 0 : a.x[i] >> n; });
  }
  static F pd_to_ps(D lo, D hi) {
    return lanewise<F>([&](std::size_t i) { return static_cast<float>(i < 8 ? lo.x[i] : hi.x[i - 8]); });
  }
};

// The AVX-512F operations of the trainium3_mx column kernel (isa/trn3mx_kernel.hpp; the real ones
// in trn3mx_avx512.cpp): vcmppd _CMP_NEQ_UQ is true when unordered, _CMP_GT_OQ false; vpcmpq
// and vptestnmq on the patterns; vcvtpd2ps rounds nearest-even (the driver pins the environment).
struct OpsTrn3Lanes8 {
  static constexpr std::size_t kLanes = 8;
  using D = Lanes<double, 8>;
  using U = Lanes<std::uint64_t, 8>;
  using M = std::uint8_t;
  using P = Lanes<float, 8>;

  template <class Fn>
  static M mask_of(Fn f) {
    unsigned m = 0;
    for (unsigned i = 0; i < 8; ++i) m |= f(i) ? 1u << i : 0u;
    return static_cast<M>(m);
  }
  static bool bit(M m, std::size_t i) { return ((m >> i) & 1) != 0; }

  static D zero() { return set1(0.0); }
  static D set1(double x) { return lanewise<D>([&](std::size_t) { return x; }); }
  static D load(const double* p) { return lanewise<D>([&](std::size_t i) { return p[i]; }); }
  static D add(D a, D b) { return lanewise<D>([&](std::size_t i) { return a.x[i] + b.x[i]; }); }
  static D sub(D a, D b) { return lanewise<D>([&](std::size_t i) { return a.x[i] - b.x[i]; }); }
  static D mul(D a, D b) { return lanewise<D>([&](std::size_t i) { return a.x[i] * b.x[i]; }); }
  static D fma(D x, D y, D s) { return lanewise<D>([&](std::size_t i) { return std::fma(x.x[i], y.x[i], s.x[i]); }); }
  static M m_or(M a, M b) { return static_cast<M>(a | b); }
  static bool any(M m) { return m != 0; }
  static M inexact(D x, D t, D s) {
    return mask_of([&](unsigned i) {
      const double a = x.x[i] - t.x[i], b = x.x[i] - s.x[i];
      return (a < s.x[i] || a > s.x[i]) || (b < t.x[i] || b > t.x[i]);
    });
  }
  static M midpoint(D x) {
    const U u = recast<U>(x);
    return mask_of([&](unsigned i) { return (u.x[i] & 0x1FFFFFFFull) == 0x10000000ull; });
  }
  static M below_normal(D x) {
    const U u = recast<U>(x);
    return mask_of([&](unsigned i) { return (u.x[i] & 0x7FFFFFFFFFFFFFFFull) - 1 < 0x380FFFFFFFFFFFFFull; });
  }
  static M finite(D r) {
    const U u = recast<U>(r);
    return mask_of([&](unsigned i) { return (u.x[i] & 0x7FF0000000000000ull) != 0x7FF0000000000000ull; });
  }
  static M nonzero(D e) { return mask_of([&](unsigned i) { return !(e.x[i] == 0.0); }); }
  static M even(D r) {
    const U u = recast<U>(r);
    return mask_of([&](unsigned i) { return (u.x[i] & 1) == 0; });
  }
  static M differ(D e, D r) { return mask_of([&](unsigned i) { return (e.x[i] > 0.0) != (r.x[i] > 0.0); }); }
  static M m_and(M a, M b) { return static_cast<M>(a & b); }
  static M m_andnot(M a, M b) { return static_cast<M>(~a & b); }
  static D step(D r, M up, M down) {
    const U u = recast<U>(r);
    return recast<D>(lanewise<U>([&](std::size_t i) { return u.x[i] + (bit(up, i) ? 1 : 0) - (bit(down, i) ? 1 : 0); }));
  }
  static D round_f32(D x) { return lanewise<D>([&](std::size_t i) { return double{static_cast<float>(x.x[i])}; }); }
  static P p_load(const float* p) { return lanewise<P>([&](std::size_t i) { return p[i]; }); }
  static void p_store(float* p, P v) {
    for (std::size_t i = 0; i < 8; ++i) p[i] = v.x[i];
  }
  static P p_add(P psum, D t) { return lanewise<P>([&](std::size_t i) { return psum.x[i] + static_cast<float>(t.x[i]); }); }
};

// OpsTrn3Lanes8 with the AVX-512 kernel's add_odd: vaddpd {ru-sae} and {rd-sae}, then the one
// with the odd pattern (vptestmq, vblendmpd). Each directed sum is formed from the nearest one
// and its exact error (two-sum: r + e == t + s): one ulp up or down where e points there.
struct OpsTrn3Lanes8Odd : OpsTrn3Lanes8 {
  static D add_odd(D t, D s) {
    return lanewise<D>([&](std::size_t i) {
      const double a = t.x[i], b = s.x[i], r = a + b, bv = r - a, e = (a - (r - bv)) + (b - bv);
      const bool finite = std::isfinite(r);
      const double up = finite && e > 0 ? std::nextafter(r, INFINITY) : r;
      // an exact zero from operands of both signs is -0 rounded down
      const double down = finite && e < 0 ? std::nextafter(r, -INFINITY)
                          : r == 0 && !(std::signbit(a) && std::signbit(b)) ? -0.0
                                                                                : r;
      return (recast<std::uint64_t>(down) & 1) != 0 ? down : up;
    });
  }
  // vpandq with the exponent field, vfmadd231pd, vfnmadd231pd
  static D round_f32_bounded(D x) {
    return lanewise<D>([&](std::size_t i) {
      const double e = std::bit_cast<double>(std::bit_cast<std::uint64_t>(x.x[i]) & 0x7FF0000000000000ull);
      return std::fma(-e, 0x1.8p29, std::fma(e, 0x1.8p29, x.x[i]));
    });
  }
};
