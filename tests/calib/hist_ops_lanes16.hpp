// A 16-lane Ops for HistKernel16 (calib/src/isa/hist_kernel16.hpp) that stands for the AVX-512
// one (hist_avx512.cpp): each operation is written lane by lane in portable C++ with the
// semantics of the instruction it emulates (vpandd, vpmovzxwd, vpmovdw truncating to the low
// 16 bits, unsigned vpmaxud / vpminud / vpcmpud, signed vpmaxsd, vpsrld with the count taken
// whole, vpcompressd zeroing the lanes above the kept ones, masks as one bit per lane). With it,
// the 16-lane kernel text runs on any machine; the AVX-512 Ops itself is what this cannot test.
// Included by the test inside an anonymous namespace, after <cstdint> and <cstring>.
#pragma once

#include <cstdint>
#include <cstring>

struct OpsHistLanes16 {
  struct V {
    std::uint32_t x[16];
  };
  using M = std::uint16_t;

  template <class Fn>
  static V map(Fn f) {
    V r;
    for (int i = 0; i < 16; ++i) r.x[i] = f(i);
    return r;
  }
  template <class Fn>
  static M mask_of(Fn f) {
    unsigned m = 0;
    for (int i = 0; i < 16; ++i) m |= (f(i) ? 1u : 0u) << i;
    return static_cast<M>(m);
  }

  static V load_abs_f32(const float* p) {
    V r;
    std::memcpy(r.x, p, sizeof r.x);
    return map([&](int i) { return r.x[i] & 0x7FFFFFFFu; });
  }
  static V load_abs_bf16(const std::uint16_t* p) {
    return map([&](int i) {
      std::uint16_t h;
      std::memcpy(&h, p + i, 2);
      return std::uint32_t{h} & 0x7FFFu;
    });
  }
  static V load(const std::uint32_t* p) {
    V r;
    std::memcpy(r.x, p, sizeof r.x);
    return r;
  }
  static void store(std::uint32_t* p, V v) { std::memcpy(p, v.x, sizeof v.x); }
  static void store_u16(std::uint16_t* p, V v) {
    for (int i = 0; i < 16; ++i) {
      const auto h = static_cast<std::uint16_t>(v.x[i]);
      std::memcpy(p + i, &h, 2);
    }
  }
  static V set1(std::uint32_t v) { return map([&](int) { return v; }); }
  static V add(V a, V b) { return map([&](int i) { return a.x[i] + b.x[i]; }); }
  static V sub(V a, V b) { return map([&](int i) { return a.x[i] - b.x[i]; }); }
  static V srl(V a, int n) {
    return map([&](int i) { return static_cast<unsigned>(n) > 31 ? 0u : a.x[i] >> n; });
  }
  static V max_u(V a, V b) { return map([&](int i) { return a.x[i] > b.x[i] ? a.x[i] : b.x[i]; }); }
  static V min_u(V a, V b) { return map([&](int i) { return a.x[i] < b.x[i] ? a.x[i] : b.x[i]; }); }
  static V max_s(V a, V b) {
    return map([&](int i) {
      return static_cast<std::int32_t>(a.x[i]) > static_cast<std::int32_t>(b.x[i]) ? a.x[i] : b.x[i];
    });
  }
  static M eq(V a, V b) { return mask_of([&](int i) { return a.x[i] == b.x[i]; }); }
  static M gt_u(V a, V b) { return mask_of([&](int i) { return a.x[i] > b.x[i]; }); }
  static M lt_u(V a, V b) { return mask_of([&](int i) { return a.x[i] < b.x[i]; }); }
  static V inc_where(V acc, M m) { return map([&](int i) { return (m >> i & 1) ? acc.x[i] + 1 : acc.x[i]; }); }
  static M both(M a, M b) { return static_cast<M>(a & b); }
  static unsigned bits(M m) { return m; }
  // vpcompressd of the nonzero lanes (the lanes above them zeroed), then vpmovdw: 16 stores
  static std::size_t store_nonzero_u16(std::uint16_t* p, V v) {
    V r{};
    std::size_t k = 0;
    for (int i = 0; i < 16; ++i)
      if (v.x[i] != 0) r.x[k++] = v.x[i];
    store_u16(p, r);
    return k;
  }
  static void prefetch(const void*) {}
};
