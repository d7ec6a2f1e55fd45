// Internal: the MX (block-scaled) narrowing drivers over the kernels of narrow_nearest.hpp,
// narrow_modes.hpp and narrow_bf16_kernel.hpp. Included only by the ISA translation units,
// inside an anonymous namespace (see narrow_kernel.hpp).
//
// Per 32-element block: amax = the largest |x| as bits (NaN patterns sort above Inf), the
// block's E8M0 code from the rule table, then the block's elements multiplied by the exact
// power of two 2^(127 - code) and converted like any scaled input. A block whose code is 0xFF
// (NaN or Inf inside) is overwritten with the NaN fill afterwards. Two passes per stretch of
// kStretch elements (in L1 between them): first every block's code, then the conversion; so
// the scalar table lookups of one block do not sit on the critical path of its conversion,
// and the blocks' lookups overlap one another.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "isa/narrow.hpp"
#include "isa/narrow_common.hpp"
#include "isa/narrow_flavor.hpp"
#include "isa/narrow_modes.hpp"
#include "isa/narrow_nearest.hpp"

// Ops16: the ISA's 16-bit-lane operations for the bf16 kernel, or void where it has none.
template <class Ops, class Ops16>
struct NarrowMx {
  using V = typename Ops::V;
  using Consts = NarrowConsts<Ops>;
  using Bf16 = NarrowBf16For<Ops16>;

  // bf16 under nearest-even takes the 16-bit kernel where the fp32 kernel's group of four
  // vectors is one 32-element block.
  template <fp8q::detail::Source S, fp8q::Rounding R>
  static constexpr bool kBf16Fast = !std::is_void_v<Ops16> && S == fp8q::detail::Source::kBF16 &&
                                    R == fp8q::Rounding::kNearestEven && Ops::kInterleavedBf16 &&
                                    4 * Ops::kLanes == 32;

  template <fp8q::detail::Source S, fp8q::Rounding R>
  static std::size_t run(const void* in, std::uint8_t* out, std::uint8_t* scales, std::size_t n, std::uint64_t index0,
                         const fp8q::detail::NarrowParams& p, const fp8q::detail::MxParams& m) {
    if constexpr (kBf16Fast<S, R>) {
      if (Bf16::takes(p))
        return narrow_flavor(p, [&](auto flavor) { return run_bf16<decltype(flavor)>(in, out, scales, n, p, m); });
    }
    return run_any<S, R>(in, out, scales, n, index0, p, m);
  }

  // The block's scale code (pass 1 of the general driver).
  template <fp8q::detail::Source S>
  static std::uint8_t block_code(const unsigned char* block, const Consts& k, const fp8q::detail::MxParams& m) {
    constexpr std::size_t L = Ops::kLanes, kBytes = S == fp8q::detail::Source::kF32 ? 4 : 2;
    V a = Ops::band(Ops::bits(Ops::template load<S>(block)), k.c7fffffff);
    for (std::size_t j = 1; j < 32 / L; ++j)
      a = Ops::max(a, Ops::band(Ops::bits(Ops::template load<S>(block + j * L * kBytes)), k.c7fffffff));
    return table_code(static_cast<std::uint32_t>(Ops::hmax(a)), m);
  }

  static std::uint8_t table_code(std::uint32_t amax, const fp8q::detail::MxParams& m) {
    // Pow2ScaleTable::code(), spelled out here: an inline function of a shared header
    // compiled with this ISA's flags could be picked by the linker for the other paths
    const std::uint32_t e = amax >> 23;
    if (e == 255) return 0xFF;
    if (e == 0) return 0x00;
    return static_cast<std::uint8_t>(m.table->base[e] + ((amax & 0x7FFFFFu) >= m.table->threshold[e] ? 1 : 0));
  }

  // MX on bf16 under nearest-even. Pass 1 takes eight blocks' amaxes (and smallest nonzero
  // |x|) at a time, and their scale codes in one vector where the rule is affine in the
  // exponent (MxParams::affine_*), else from the rule's table, branch-free
  // (MxParams::bf16_base/bf16_step). Pass 2 converts a block whose 2^(127 - code) the 16-bit
  // kernel takes (code >= 127 - max_offset) there: by its normal form when no nonzero |x| of
  // the block falls below the target's smallest normal (the usual case: that is 2^-14 of the
  // amax for e4m3fn), else by the general form; any other finite scale by the fp32 kernel;
  // a NaN-scale block is filled with the NaN element.
  template <class Fl>
  static std::size_t run_bf16(const void* in, std::uint8_t* out, std::uint8_t* scales, std::size_t n,
                              const fp8q::detail::NarrowParams& p, const fp8q::detail::MxParams& m) {
    static_assert(Ops::kInterleavedBf16 && 4 * Ops::kLanes == 32, "one fp32-kernel group is one block");
    static_assert(Bf16::kGroup == 32, "one 16-bit group is one block");
    const Consts k(p, false);
    const typename Bf16::Consts k16(p);
    const unsigned lo = static_cast<unsigned>(127 - Bf16::max_offset(p));  // codes lo .. 254: 16-bit kernel
    const auto h7f = Ops16::h_set1(0x7F), alo = Ops16::h_set1(m.affine_lo), ahi = Ops16::h_set1(m.affine_hi);
    const auto ac = Ops16::h_set1(m.affine_c), astep1 = Ops16::h_set1(static_cast<std::int16_t>(m.affine_step - 1));
    const auto heb0 = Ops16::h_set1(static_cast<std::int16_t>(k16.e_min - 127));
    const auto hlo = Ops16::h_set1(static_cast<std::int16_t>(lo));
    const std::int16_t kb_offset = Bf16::normal_bias_offset(p);
    const auto hkb = Ops16::h_set1(kb_offset);
    const auto* src = static_cast<const unsigned char*>(in);
    V nan_seen = k.zero;
    auto nan16 = Ops16::none();  // NaN only reaches blocks that are overwritten
    const std::size_t whole = n / 32 * 32;
    constexpr std::size_t kStretch = 2048;
    for (std::size_t s0 = 0; s0 < whole; s0 += kStretch) {
      const std::size_t s1 = s0 + kStretch < whole ? s0 + kStretch : whole;
      // pass 1, per block: its code; eb = Eb - d for d = 127 - code, where the 16-bit kernel
      // takes it (code in lo .. 254); kb = normal_bias(eb); lowest = its smallest nonzero
      // |x| pattern - 1 (0 where not computed: the general form then). `odd`: some block of
      // the stretch the 16-bit kernel does not take.
      std::int16_t eb[kStretch / 32], kb[kStretch / 32];
      std::uint16_t lowest[kStretch / 32];
      bool odd = false;
      const int eb0 = k16.e_min - 127;
      auto keep = [&](std::size_t i, unsigned code) {
        scales[i / 32] = static_cast<std::uint8_t>(code);
        const std::size_t b = (i - s0) / 32;
        eb[b] = static_cast<std::int16_t>(eb0 + static_cast<int>(code));
        kb[b] = static_cast<std::int16_t>(eb[b] * 128 - kb_offset);
        odd |= code - lo > 254 - lo;
      };
      std::size_t i = s0;
      for (; i + 256 <= s1; i += 256) {
        typename Ops16::H low;
        const auto amax = Ops16::block_range8(src + 2 * i, low);
        Ops16::h_store(reinterpret_cast<std::int16_t*>(lowest + (i - s0) / 32), low);
        const auto e = Ops16::h_srl7(amax), f = Ops16::h_and(amax, h7f);
        if (!Ops16::h_any(Ops16::h_or(Ops16::h_gt(e, ahi), Ops16::h_gt(alo, e)))) {  // all affine
          const auto code = Ops16::h_sub(Ops16::h_add(e, ac), Ops16::h_gt(f, astep1));  // mask -1: + 1
          const auto ebh = Ops16::h_add(code, heb0);
          Ops16::h_store_bytes(scales + i / 32, code);
          Ops16::h_store(eb + (i - s0) / 32, ebh);
          Ops16::h_store(kb + (i - s0) / 32, Ops16::h_sub(Ops16::h_sll7(ebh), hkb));
          odd |= Ops16::h_any(Ops16::h_gt(hlo, code));  // codes here are <= 254
          continue;
        }
        std::uint16_t a[8];
        Ops16::h_store(reinterpret_cast<std::int16_t*>(a), amax);
        for (std::size_t b = 0; b < 8; ++b) {
          const unsigned eb_exp = a[b] >> 7, eb_frac = a[b] & 0x7Fu;
          keep(i + 32 * b, m.bf16_base[eb_exp] + (eb_frac >= m.bf16_step[eb_exp] ? 1u : 0u));
        }
      }
      for (; i < s1; i += 32) {
        keep(i, block_code<fp8q::detail::Source::kBF16>(src + 2 * i, k, m));
        lowest[(i - s0) / 32] = 0;
      }
      // pass 2; each block also prefetches the line the next stretch's pass 1 reads (past
      // the row's end too: rows usually follow one another, and a prefetch never faults),
      // so that its loads overlap this pass's arithmetic instead of stalling pass 1
      for (i = s0; i < s1; i += 32) {
        Ops16::prefetch(reinterpret_cast<const void*>(reinterpret_cast<std::uintptr_t>(src) + 2 * (i + kStretch)));
        const unsigned code = scales[i / 32];
        const std::size_t b = (i - s0) / 32;
        if (!odd || code - lo <= 254 - lo) {
          // normal form unless some nonzero |x| lies below Eb (lowest + 1 < Eb << 7)
          if (static_cast<unsigned>(lowest[b]) + 1 >= static_cast<unsigned>(eb[b]) << 7) {
            Bf16::template group_normal<Fl>(src + 2 * i, out + i, Ops16::broadcast(&kb[b]), k16);
          } else {
            const auto ebv = Ops16::broadcast(&eb[b]);
            Bf16::template group<Fl>(src + 2 * i, out + i, ebv, Bf16::eb_idx_vec(k16, ebv), k16, nan16);
          }
        } else if (code != 0xFF) {
          V u[4];
          Ops::load4_bf16_interleaved(src + 2 * i, u);
          const auto f = Ops::set1f(m.multiplier[code]);
          for (std::size_t j = 0; j < 4; ++j) u[j] = Ops::bits(Ops::mul(Ops::as_float(u[j]), f));
          NarrowNearest<Ops>::template convert4<Fl, true>(u, out + i, k, nan_seen);
        } else {
          std::memset(out + i, m.nan_fill, 32);
        }
      }
    }
    return whole;
  }

  // Any source and rounding, through the fp32 kernels: nearest-even in the target's flavor
  // (NarrowNearest::convert4, as the plain conversion), the other modes through narrow_mode.
  template <fp8q::detail::Source S, fp8q::Rounding R>
  static std::size_t run_any(const void* in, std::uint8_t* out, std::uint8_t* scales, std::size_t n,
                             std::uint64_t index0, const fp8q::detail::NarrowParams& p,
                             const fp8q::detail::MxParams& m) {
    if constexpr (R == fp8q::Rounding::kNearestEven) {
      return narrow_flavor(p, [&](auto flavor) {
        return run_stretches<S, R, decltype(flavor)>(in, out, scales, n, index0, p, m);
      });
    } else {
      return run_stretches<S, R, void>(in, out, scales, n, index0, p, m);
    }
  }

  // run_any's loop; Fl: the flavor under nearest-even, void for the other modes.
  template <fp8q::detail::Source S, fp8q::Rounding R, class Fl>
  static std::size_t run_stretches(const void* in, std::uint8_t* out, std::uint8_t* scales, std::size_t n,
                                   std::uint64_t index0, const fp8q::detail::NarrowParams& p,
                                   const fp8q::detail::MxParams& m) {
    const Consts k(p, R == fp8q::Rounding::kStochastic);
    constexpr std::size_t L = Ops::kLanes, kGroup = 4 * L, kPerBlock = 32 / L, kStretch = 2048;
    static_assert(kGroup % 32 == 0 && 32 % L == 0 && kStretch % kGroup == 0);
    constexpr std::size_t kBytes = S == fp8q::detail::Source::kF32 ? 4 : 2;
    // the interleaved bf16 load permutes within 32 elements only, so each block stays whole
    constexpr bool kInter = kNarrowInterleaved<Ops, S, R> && kGroup == 32;
    const auto* src = static_cast<const unsigned char*>(in);
    V nan_seen = k.zero;  // NaN only reaches blocks that are overwritten
    const std::uint64_t base = p.options->offset + index0;
    const std::size_t whole = n / kGroup * kGroup;
    for (std::size_t s0 = 0; s0 < whole; s0 += kStretch) {
      const std::size_t s1 = s0 + kStretch < whole ? s0 + kStretch : whole;
      for (std::size_t i = s0; i < s1; i += 32) scales[i / 32] = block_code<S>(src + i * kBytes, k, m);  // pass 1
      for (std::size_t i = s0; i < s1; i += kGroup) {  // pass 2: the elements
        const unsigned char* block = src + i * kBytes;
        // the next stretch's lines, which pass 1 reads next (as run_bf16)
        for (std::size_t b = 0; b < kGroup * kBytes; b += 64)
          Ops::prefetch(reinterpret_cast<const void*>(reinterpret_cast<std::uintptr_t>(block) + kStretch * kBytes + b));
        V u[4];
        if constexpr (kInter) {
          Ops::load4_bf16_interleaved(block, u);
        } else {
          for (std::size_t j = 0; j < 4; ++j) u[j] = Ops::bits(Ops::template load<S>(block + j * L * kBytes));
        }
        if constexpr (!std::is_void_v<Fl>) {
          V x[4];
          for (std::size_t j = 0; j < 4; ++j)  // 0xFF: overwritten
            x[j] = Ops::bits(Ops::mul(Ops::as_float(u[j]), Ops::set1f(m.multiplier[scales[i / 32 + j / kPerBlock]])));
          NarrowNearest<Ops>::template convert4<Fl, kInter>(x, out + i, k, nan_seen);
        } else {
          V c[4];
          for (std::size_t j = 0; j < 4; ++j) {
            const auto f = Ops::set1f(m.multiplier[scales[i / 32 + j / kPerBlock]]);  // 0xFF: overwritten
            V x = Ops::bits(Ops::mul(Ops::as_float(u[j]), f));
            if constexpr (R == fp8q::Rounding::kUp || R == fp8q::Rounding::kDown || R == fp8q::Rounding::kOdd) {
              // a product flushed to +/-0 from a nonzero x stays nonzero: +/-2^-149 (the exact
              // value rounds away from 0 in these modes; in the others it gives 0 either way)
              const V lost = Ops::andnot(Ops::eq(Ops::band(u[j], k.c7fffffff), k.zero),
                                         Ops::eq(Ops::band(x, k.c7fffffff), k.zero));
              x = Ops::select(lost, Ops::bor(Ops::band(u[j], k.c80000000), k.one), x);
            }
            c[j] = narrow_mode<R>(x, base + i + j * L, k, p, nan_seen);
          }
          if constexpr (kInter) {
            Ops::store_bytes4_interleaved(out + i, c[0], c[1], c[2], c[3]);
          } else {
            Ops::store_bytes4(out + i, c[0], c[1], c[2], c[3]);
          }
        }
      }
      for (std::size_t i = s0; i < s1; i += 32)
        if (scales[i / 32] == 0xFF) std::memset(out + i, m.nan_fill, 32);
    }
    return whole;
  }
};
