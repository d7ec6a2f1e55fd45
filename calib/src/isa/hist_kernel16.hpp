// Internal: the histogram kernels at 16 lanes of 32 bits, written once over an `Ops` type: the
// AVX-512 one (hist_avx512.cpp: one zmm), the AVX2 one (hist_avx2.cpp: two ymm) and a
// lane-by-lane emulation (tests/calib/hist_ops_lanes16.hpp) that runs these same paths on any
// machine. Included only inside an anonymous namespace, after
// the headers it includes, so that no inline function compiled with one ISA's flags reaches
// another translation unit.
//
// Everything is integer arithmetic on |x| patterns, so each kernel equals hist_generic.cpp bit
// for bit:
//   scan:  max, min of a - 1 (0 wraps: zeros never win), and a zero count, per lane; two chains,
//          so that consecutive vectors do not wait for each other;
//   count: bin = max((a >> shift) - base, 0) + (lane % 4) * bins, then scalar increments (no
//          scatter), spread over kTables tables so that equal neighbouring bins do not serialize;
//   tally: slot q = a >> 16, narrowed to 16 bits (exact: q <= 0x7FFF) into a buffer of one run,
//          then tallied four slots per 64-bit load; every tally prefetches its input a few KiB
//          ahead (the stream of increments leaves the hardware prefetcher behind); the `_zeros`
//          variants store only the lanes with q != 0, in order, so a zero costs no store (half
//          zeros, as after a ReLU, halve them).
// Run lengths and the forms measured: docs/performance.md.
//
// Ops: V (16 x uint32), M (a lane mask), and
//   load_abs_f32(p), load_abs_bf16(p)  16 |x| patterns (bf16: zero-extended, sign cleared)
//   set1, add, sub, srl(v, n <= 31), max_u, min_u (unsigned), max_s (signed)
//   eq(a, b), gt_u(a, b), lt_u(a, b)  -> M;  both(m1, m2) -> M;  bits(m): bit l for lane l
//   inc_where(acc, m)   acc + 1 in the lanes of m
//   load(p), store(p, v)  16 uint32 from or to p (64-byte aligned)
//   store_u16(p, v)     each lane's value (below 2^16) to p (16 uint16, unaligned)
//   store_nonzero_u16(p, v)  the nonzero lanes' values (below 2^16) to p (room for 16 uint16);
//                            returns how many
// Both stores may order the values as their instructions do: a tally takes them in any order.
//   prefetch(p)
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "isa/hist_kernels.hpp"

template <class Ops>
struct HistKernel16 {
  using V = typename Ops::V;
  using M = typename Ops::M;
  using ScanResult = fp8q::calib::detail::ScanResult;
  static constexpr std::size_t kLanes = 16;

  static std::uint32_t abs_one_f32(const float* in, std::size_t i) {
    std::uint32_t u;
    std::memcpy(&u, in + i, 4);
    return u & 0x7FFFFFFFu;
  }

  // Scan statistics of 16 |x| lanes, kept in vectors across a call.
  struct Stats {
    V max = Ops::set1(0), zeros = Ops::set1(0), low = Ops::set1(0xFFFFFFFFu);
    void add(V a) {
      max = Ops::max_u(max, a);
      zeros = Ops::inc_where(zeros, Ops::eq(a, Ops::set1(0)));
      low = Ops::min_u(low, Ops::sub(a, Ops::set1(1)));
    }
    void merge(const Stats& o) {
      max = Ops::max_u(max, o.max);
      zeros = Ops::add(zeros, o.zeros);
      low = Ops::min_u(low, o.low);
    }
    // Horizontal reduction, then the scalar elements i .. n - 1.
    ScanResult finish(const float* in, std::size_t i, std::size_t n) const {
      alignas(64) std::uint32_t m[16], z[16], l[16];
      Ops::store(m, max);
      Ops::store(z, zeros);
      Ops::store(l, low);
      ScanResult r;
      std::uint32_t lo = 0xFFFFFFFFu;
      for (int k = 0; k < 16; ++k) {
        r.max_bits = m[k] > r.max_bits ? m[k] : r.max_bits;
        r.zeros += z[k];
        lo = l[k] < lo ? l[k] : lo;
      }
      for (; i < n; ++i) {
        const std::uint32_t a = abs_one_f32(in, i);
        r.max_bits = a > r.max_bits ? a : r.max_bits;
        r.zeros += a == 0;
        lo = a - 1 < lo ? a - 1 : lo;
      }
      r.min_nonzero_bits = lo + 1 == 0 ? 0xFFFFFFFFu : lo + 1;
      return r;
    }
  };

  static ScanResult scan_f32(const float* in, std::size_t n) {
    Stats s0, s1;  // two chains, so that consecutive vectors do not wait for each other
    std::size_t i = 0;
    for (; i + 32 <= n; i += 32) {
      s0.add(Ops::load_abs_f32(in + i));
      s1.add(Ops::load_abs_f32(in + i + 16));
    }
    if (i + 16 <= n) {
      s0.add(Ops::load_abs_f32(in + i));
      i += 16;
    }
    s0.merge(s1);
    return s0.finish(in, i, n);
  }

  static void count_f32(const float* in, std::size_t n, int shift, int base, std::uint32_t* tables,
                        std::size_t bins) {
    using fp8q::calib::detail::kTables;
    static_assert(kTables == 4, "the lane offsets below spread 16 lanes over 4 tables");
    const V vbase = Ops::set1(static_cast<std::uint32_t>(base)), zero = Ops::set1(0);
    // lane l increments table l % 4 (element i + l has (i + l) % 4 == l % 4 since i % 16 == 0)
    alignas(64) std::uint32_t off[16];
    for (int l = 0; l < 16; ++l) off[l] = static_cast<std::uint32_t>(l % kTables) * static_cast<std::uint32_t>(bins);
    const V offset = Ops::load(off);
    alignas(64) std::uint32_t idx[16];
    std::size_t i = 0;
    for (; i + 16 <= n; i += 16) {
      const V k = Ops::max_s(Ops::sub(Ops::srl(Ops::load_abs_f32(in + i), shift), vbase), zero);
      Ops::store(idx, Ops::add(k, offset));
      for (int l = 0; l < 16; ++l) tables[idx[l]] += 1;
    }
    for (; i < n; ++i) {
      const int p = static_cast<int>(abs_one_f32(in, i) >> shift) - base;
      tables[(i % kTables) * bins + static_cast<std::size_t>(p > 0 ? p : 0)] += 1;
    }
  }

  // ---- pattern tallies ---------------------------------------------------------------------------
  // Four 16-bit slot numbers from one 64-bit word, each incremented.
  static void bump4(std::uint64_t w, std::uint32_t* table) {
    table[w & 0xFFFF] += 1;
    table[(w >> 16) & 0xFFFF] += 1;
    table[(w >> 32) & 0xFFFF] += 1;
    table[w >> 48] += 1;
  }

  // fp32, plain: per run of kPlainRun elements, the statistics and the slots in vectors, then the
  // run's slots tallied with one prefetch of the input kPlainPrefetch bytes ahead per 16 slots.
  static constexpr std::size_t kPlainRun = 256;
  static constexpr std::size_t kPlainPrefetch = 4096;
  static ScanResult tally_f32(const float* in, std::size_t n, std::uint32_t* table) {
    Stats st;
    alignas(64) std::uint16_t buf[kPlainRun];
    const std::size_t m = n / kPlainRun * kPlainRun;
    for (std::size_t run = 0; run < m; run += kPlainRun) {
      for (std::size_t i = 0; i < kPlainRun; i += 16) {
        const V a = Ops::load_abs_f32(in + run + i);
        st.add(a);
        Ops::store_u16(buf + i, Ops::srl(a, 16));
      }
      const char* pf = reinterpret_cast<const char*>(in + run) + kPlainPrefetch;
      for (std::size_t i = 0; i < kPlainRun; i += 16, pf += 64) {
        Ops::prefetch(pf);
        for (std::size_t k = 0; k < 16; k += 4) {
          std::uint64_t w;
          std::memcpy(&w, buf + i + k, 8);
          bump4(w, table);
        }
      }
    }
    const std::size_t m16 = n / 16 * 16;
    for (std::size_t i = m; i < m16; i += 16) st.add(Ops::load_abs_f32(in + i));
    for (std::size_t j = m; j < n; ++j) table[abs_one_f32(in, j) >> 16] += 1;
    return st.finish(in, m16, n);
  }

  // bf16, plain: four patterns per 64-bit load, sign masked, the input prefetched kPlainPrefetch
  // bytes ahead (one line per 32 patterns); nothing else to compute.
  static void tally_bf16(const std::uint16_t* in, std::size_t n, std::uint32_t* table) {
    constexpr std::uint64_t kAbs = 0x7FFF'7FFF'7FFF'7FFFull;
    std::size_t i = 0;
    for (; i + 32 <= n; i += 32) {
      Ops::prefetch(reinterpret_cast<const char*>(in + i) + kPlainPrefetch);
      for (std::size_t k = 0; k < 32; k += 4) {
        std::uint64_t w;
        std::memcpy(&w, in + i + k, 8);
        bump4(w & kAbs, table);
      }
    }
    for (; i < n; ++i) table[in[i] & 0x7FFFu] += 1;
  }

  // ---- zeros counted, not tallied (the `_zeros` variants) ------------------------------------------
  // The slots q != 0 of 16 elements compressed to the front and narrowed into a buffer of one
  // run, then tallied from there; the q == 0 samples are counted as the run's elements not kept.
  static constexpr std::size_t kPackRun = 512;
  static_assert(kPackRun % 16 == 0, "whole steps of 16 elements");

  // For elements i in [0, n) (n a multiple of 16): slots(i, out) packs the nonzero slots of
  // elements i .. i + 15 to out and returns how many; they are tallied. Returns how many were zero.
  template <class Slots>
  static std::size_t tally_packed(std::size_t n, std::uint32_t* table, Slots slots) {
    alignas(64) std::uint16_t buf[kPackRun + 16];  // + 16: room for the last step's full store
    std::size_t zeros = 0;
    for (std::size_t run = 0; run < n; run += kPackRun) {
      const std::size_t end = run + (n - run < kPackRun ? n - run : kPackRun);
      std::size_t k = 0;
      for (std::size_t i = run; i < end; i += 16) k += slots(i, buf + k);
      std::size_t j = 0;
      for (; j + 4 <= k; j += 4) {
        std::uint64_t w;
        std::memcpy(&w, buf + j, 8);
        bump4(w, table);
      }
      for (; j < k; ++j) table[buf[j]] += 1;
      zeros += (end - run) - k;
    }
    return zeros;
  }

  static ScanResult tally_f32_zeros(const float* in, std::size_t n, std::uint32_t* table) {
    Stats st;
    const std::size_t m = n / 16 * 16;
    const std::size_t zeros = tally_packed(m, table, [&](std::size_t i, std::uint16_t* out) {
      Ops::prefetch(reinterpret_cast<const char*>(in + i) + kPlainPrefetch);  // one line per step
      const V a = Ops::load_abs_f32(in + i);
      st.add(a);
      return Ops::store_nonzero_u16(out, Ops::srl(a, 16));
    });
    table[0] += static_cast<std::uint32_t>(zeros);
    for (std::size_t j = m; j < n; ++j) table[abs_one_f32(in, j) >> 16] += 1;
    return st.finish(in, m, n);
  }

  // bf16: the slot is the pattern without its sign.
  static void tally_bf16_zeros(const std::uint16_t* in, std::size_t n, std::uint32_t* table) {
    const std::size_t m = n / 16 * 16;
    const std::size_t zeros = tally_packed(m, table, [&](std::size_t i, std::uint16_t* out) {
      if (i % 32 == 0) Ops::prefetch(reinterpret_cast<const char*>(in + i) + kPlainPrefetch);  // one line per 32
      return Ops::store_nonzero_u16(out, Ops::load_abs_bf16(in + i));
    });
    table[0] += static_cast<std::uint32_t>(zeros);
    for (std::size_t j = m; j < n; ++j) table[in[j] & 0x7FFFu] += 1;
  }

  // Tail candidates: above < a < +Inf, 16 unsigned compares per step; the rare lanes that pass
  // are copied out in order.
  static std::size_t select_f32(const float* in, std::size_t n, std::uint32_t above, std::uint32_t* out) {
    const V lo = Ops::set1(above), inf = Ops::set1(0x7F800000u);
    std::size_t k = 0, i = 0;
    for (; i + 16 <= n; i += 16) {
      const V a = Ops::load_abs_f32(in + i);
      auto pass = Ops::bits(Ops::both(Ops::gt_u(a, lo), Ops::lt_u(a, inf)));
      while (pass) {
        out[k++] = abs_one_f32(in, i + static_cast<std::size_t>(std::countr_zero(pass)));
        pass &= pass - 1;
      }
    }
    for (; i < n; ++i) {
      const std::uint32_t a = abs_one_f32(in, i);
      if (a > above && a < 0x7F800000u) out[k++] = a;
    }
    return k;
  }

  static const fp8q::calib::detail::HistKernels& table() {
    static const fp8q::calib::detail::HistKernels k{scan_f32,   count_f32,        tally_f32, tally_f32_zeros,
                                                    tally_bf16, tally_bf16_zeros, select_f32};
    return k;
  }
};
