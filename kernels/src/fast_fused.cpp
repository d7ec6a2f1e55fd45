// The fast fused:n:f:rtz|rne[:promoteP] GEMM (NVIDIA tensor cores; Hopper FP8 is fused:32:13:rtz),
// and fused:n:alignA:resultR with A <= 26 (product groups of 1; :groupG runs the reference):
// operands decoded to fp32 with their model exponents, each step of n products computed by the
// micro-kernel in integers (isa/fused.hpp), C carried from step to step in fp32.
//
// Structure of one output's K, as the reference walks it: segments (all of K, or 128-K blocks
// under block scaling), each from +0 and folded into out, which starts at the accumulator input
// C0 (gemm.hpp); inside a segment, promotion periods of P products (or one period), each
// restarting C from +0 and added into an fp32 accumulator (starting at C0 without block
// scaling) when P is given; inside a period, steps of n products from the period's start (the
// last may be shorter). Without block scaling or promotion the one period's C starts at C0:
// the kernel takes C0 as the first step's carried C when it is +/-0 or 2^-100 <= |C0| < 2^126
// (fused.hpp's range: E >= -100, no overflow); other C0 run the reference (fused_path). The
// kernel sees -0 as +0; a step's sum is -0 only when C and every product are -0, so the driver
// restores -0 where C0 = -0 and every product of the output is -0.
//
// Special values: the kernel sees NaN and Inf operands as zeros. A fused step with a NaN or
// infinite product is NaN or infinite whatever its finite terms, that C carries the special
// value to the end of the segment, and a promoted fp32 sum keeps it; so a segment's result is
// the IEEE sum of its special products alone (NaN if any is NaN or both infinities occur,
// otherwise that infinity) whenever it has one. The driver computes that sum from per-row and
// per-column lists of special codes and replaces the segment's result with it (plus C0 when
// the segment's accumulator starts at it: a finite C0 changes nothing, a special one is
// possible only with promotion).
//
// Equal to the reference bit for bit for every thread count: every output is computed by one
// thread in the reference's order, host fp32 operations run under the IEEE default
// environment, and the kernel's arithmetic is exact (fused.hpp).
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <vector>

#include "aligned_buffer.hpp"
#include "code_info.hpp"
#include "fold.hpp"
#include "fp8q/numerics/fp_env.hpp"
#include "fp8q/numerics/isa.hpp"
#include "isa/fused.hpp"
#include "model_paths.hpp"
#include "operands.hpp"

namespace fp8q::detail {
namespace {

constexpr std::size_t kMr = kFuMr, kNr = kFuNr;
// About kKc products per chunk (whole steps): a B panel of kKc x 16 (16 KiB + 4 KiB of
// exponents) stays in L1, a kMc x kKc A block (20 KiB + 5 KiB) in L2, a kKc x kNc B block
// (1.25 MiB) in L2/L3.
constexpr std::size_t kKc = 256, kMc = 16 * kMr, kNc = 64 * kNr;

PickedKernel<FuKernel> pick_kernel(const GemmOptions& o) {
  return pick_kernel<FuKernel>(o, fused_kernel_generic, fused_kernel_avx2, fused_kernel_avx512);
}

// K indices of special (NaN, Inf) codes, per row of A and per column of B, in increasing order.
struct Specials {
  std::vector<std::vector<std::uint32_t>> rows, cols;  // rows[m - m0], cols[n]
  bool any = false;
};

Specials find_specials(const GemmArgs& g, const std::array<CodeInfo, 256>& ia, const std::array<CodeInfo, 256>& ib,
                       std::size_t m0, std::size_t m1) {
  Specials s;
  s.rows.resize(m1 - m0), s.cols.resize(g.n);
  for (std::size_t m = m0; m < m1; ++m)
    for (std::size_t k = 0; k < g.k; ++k)
      if (ia[g.a.codes[m * g.k + k]].special) s.rows[m - m0].push_back(static_cast<std::uint32_t>(k)), s.any = true;
  for (std::size_t k = 0; k < g.k; ++k)
    for (std::size_t n = 0; n < g.n; ++n)
      if (ib[g.b.codes[k * g.n + n]].special) s.cols[n].push_back(static_cast<std::uint32_t>(k)), s.any = true;
  return s;
}

// The K indices of `list` in [k0, k1).
std::pair<const std::uint32_t*, const std::uint32_t*> in_range(const std::vector<std::uint32_t>& list, std::size_t k0,
                                                               std::size_t k1) {
  const auto b = std::lower_bound(list.begin(), list.end(), k0), e = std::lower_bound(b, list.end(), k1);
  return {list.data() + (b - list.begin()), list.data() + (e - list.begin())};
}

// Where C0 = -0 and the kernel's result is +0, the result is -0 when every product of the
// output is -0 (a zero times a finite value of the other sign): each step then sums -0 terms.
void restore_negative_zero(const GemmArgs& g, std::size_t m0, std::size_t rows, std::size_t n0, std::size_t n1,
                           const std::array<CodeInfo, 256>& ia, const std::array<CodeInfo, 256>& ib, const float* c0,
                           std::vector<float>& partial) {
  auto negative = [](float x) { return std::signbit(x); };
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t n = n0; n < n1; ++n) {
      float& d = partial[r * g.n + n];
      const float c = c0[r * g.n + n];
      if (!(c == 0.0f && negative(c) && d == 0.0f && !negative(d) && g.k > 0)) continue;
      bool all = true;
      for (std::size_t k = 0; k < g.k && all; ++k) {
        const CodeInfo& x = ia[g.a.codes[(m0 + r) * g.k + k]];
        const CodeInfo& y = ib[g.b.codes[k * g.n + n]];
        all = !x.special && !y.special && (!x.nonzero || !y.nonzero) && negative(x.value) != negative(y.value);
      }
      if (all) d = -0.0f;
    }
}

}  // namespace

void fused_rows_with(FuKernel kernel, const GemmArgs& g, const GemmOptions& o, std::size_t m0, std::size_t m1,
                     float* out) {
  ScopedDefaultFpEnv env;
  const auto ia = code_info(g.a.format), ib = code_info(g.b.format);
  std::array<std::int8_t, 256> ea{}, eb{};
  for (std::size_t c = 0; c < 256; ++c) {
    ea[c] = ia[c].nonzero ? static_cast<std::int8_t>(ia[c].model_exp) : kFuZeroExp;
    eb[c] = ib[c].nonzero ? static_cast<std::int8_t>(ib[c].model_exp) : kFuZeroExp;
  }
  auto value = [](const CodeInfo& c) { return c.special ? 0.0f : c.value; };  // specials: see above
  const Specials specials = find_specials(g, ia, ib, m0, m1);

  const std::size_t N = g.n, K = g.k, rows = m1 - m0, step = static_cast<std::size_t>(o.model.block);
  const std::size_t seg = block_scaled(g) ? kScaleBlock : std::max<std::size_t>(K, 1);
  const std::size_t steps_max = std::max<std::size_t>(1, kKc / step), kc_max = steps_max * step;
  const std::size_t slots_max = steps_max * (step + step % 2);  // each step padded to an even length
  const FuTile base{.align_bits = o.model.align_bits,
                    .result_bits = o.model.result_bits,
                    .nearest_even = o.model.rounding == Rounding::kNearestEven};

  std::vector<float> carry(rows * N), partial(rows * N);
  AlignedBuffer<float> ap(kMc * slots_max), bp(kNc * slots_max);
  AlignedBuffer<std::uint16_t> am(kMc * slots_max / 2);
  AlignedBuffer<std::int8_t> bm(kNc * slots_max);
  std::vector<std::uint32_t> len(steps_max);
  std::vector<std::size_t> first_k(steps_max), first_slot(steps_max), real_len(steps_max);
  start_rows(g, m0, rows, out);
  // without block scaling the one segment's accumulator (promoted: partial; else: carry) starts
  // at C0, which out holds until the segment is folded into it
  const bool seeded = c_accumulates(g) && !block_scaled(g);
  alignas(32) float tile[kMr * kNr];

  for (std::size_t nc0 = 0; nc0 < N; nc0 += kNc) {
    const std::size_t ncl = std::min(kNc, N - nc0), npanels = (ncl + kNr - 1) / kNr;
    auto fill_cols = [&](std::vector<float>& v, bool from_c0) {
      for (std::size_t r = 0; r < rows; ++r)
        if (from_c0) std::copy_n(&out[r * N + nc0], ncl, &v[r * N + nc0]);
        else std::fill_n(&v[r * N + nc0], ncl, 0.0f);
    };
    for (std::size_t s0 = 0; s0 < K; s0 += seg) {
      const std::size_t s1 = std::min(K, s0 + seg);
      const std::size_t period = o.model.promote > 0 ? static_cast<std::size_t>(o.model.promote) : s1 - s0;
      fill_cols(partial, seeded && o.model.promote > 0);
      for (std::size_t p0 = s0; p0 < s1; p0 += period) {
        const std::size_t p1 = std::min(s1, p0 + period);
        fill_cols(carry, seeded && o.model.promote == 0);  // C = C0 or +0 at the start of a period
        for (std::size_t kc0 = p0; kc0 < p1; kc0 += kc_max) {
          const std::size_t kc = std::min(kc_max, p1 - kc0), nsteps = (kc + step - 1) / step;
          std::size_t slots = 0;
          for (std::size_t t = 0; t < nsteps; ++t) {
            const std::size_t l = std::min(step, kc - t * step);
            first_k[t] = kc0 + t * step, first_slot[t] = slots, real_len[t] = l;
            len[t] = static_cast<std::uint32_t>(l + l % 2);
            slots += len[t];
          }
          // B block: panel p holds columns nc0 + p*kNr .. +kNr, slot-major, zero padded
          for (std::size_t p = 0; p < npanels; ++p)
            for (std::size_t t = 0; t < nsteps; ++t)
              for (std::size_t q = 0; q < len[t]; ++q) {
                const std::size_t k = first_k[t] + q, at = (p * slots + first_slot[t] + q) * kNr;
                const bool in_k = q < real_len[t];  // else a padding slot
                for (std::size_t j = 0; j < kNr; ++j) {
                  const std::size_t n = nc0 + p * kNr + j;
                  const std::uint8_t code = in_k && n < nc0 + ncl ? g.b.codes[k * N + n] : 0;
                  const bool real = in_k && n < nc0 + ncl;
                  bp[at + j] = real ? value(ib[code]) : 0.0f;
                  bm[at + j] = real ? eb[code] : kFuZeroExp;
                }
              }
          for (std::size_t mc0 = m0; mc0 < m1; mc0 += kMc) {
            const std::size_t mcl = std::min(kMc, m1 - mc0), mpanels = (mcl + kMr - 1) / kMr;
            for (std::size_t p = 0; p < mpanels; ++p)
              for (std::size_t t = 0; t < nsteps; ++t)
                for (std::size_t q = 0; q < len[t]; ++q) {
                  const std::size_t k = first_k[t] + q, slot = p * slots + first_slot[t] + q;
                  const bool in_k = q < real_len[t];
                  for (std::size_t i = 0; i < kMr; ++i) {
                    const std::size_t m = mc0 + p * kMr + i;
                    const bool real = in_k && m < mc0 + mcl;
                    const std::uint8_t code = real ? g.a.codes[m * K + k] : 0;
                    ap[slot * kMr + i] = real ? value(ia[code]) : 0.0f;
                    // slots pair up (k, k + 1) inside a step: first_slot is even
                    auto& pair = am[(slot / 2) * kMr + i];
                    const auto e = static_cast<std::uint8_t>(real ? ea[code] : kFuZeroExp);
                    pair = slot % 2 == 0 ? e : static_cast<std::uint16_t>((pair & 0xFF) | (e << 8));
                  }
                }
            for (std::size_t jp = 0; jp < npanels; ++jp)
              for (std::size_t ip = 0; ip < mpanels; ++ip) {
                const std::size_t r0 = mc0 - m0 + ip * kMr, c0 = nc0 + jp * kNr;
                const std::size_t mr = std::min(kMr, rows - r0), nr = std::min(kNr, N - c0);
                FuTile t = base;
                t.nsteps = nsteps, t.len = len.data();
                t.ap = &ap[ip * slots * kMr], t.am = &am[ip * slots / 2 * kMr];
                t.bp = &bp[jp * slots * kNr], t.bm = &bm[jp * slots * kNr];
                float* dst = &carry[r0 * N + c0];
                if (mr == kMr && nr == kNr) {  // a full tile works in place
                  t.c = dst, t.ld = N;
                  kernel(t);
                  continue;
                }
                std::fill(tile, tile + kMr * kNr, 0.0f);  // an edge tile goes through a padded copy
                for (std::size_t i = 0; i < mr; ++i) std::copy_n(dst + i * N, nr, &tile[i * kNr]);
                t.c = tile, t.ld = kNr;
                kernel(t);
                for (std::size_t i = 0; i < mr; ++i) std::copy_n(&tile[i * kNr], nr, dst + i * N);
              }
          }
        }
        // the period is complete: C alone (no promotion), or added into the fp32 accumulator
        for (std::size_t r = 0; r < rows; ++r)
          for (std::size_t n = nc0; n < nc0 + ncl; ++n) {
            float& d = partial[r * N + n];
            d = o.model.promote > 0 ? d + carry[r * N + n] : carry[r * N + n];
          }
      }
      if (specials.any)  // a segment with a special product is the IEEE sum of those products
        for (std::size_t r = 0; r < rows; ++r) {
          const std::size_t m = m0 + r;
          const auto [ra, re] = in_range(specials.rows[r], s0, s1);
          for (std::size_t n = nc0; n < nc0 + ncl; ++n) {
            const auto [ca, ce] = in_range(specials.cols[n], s0, s1);
            if (ra == re && ca == ce) continue;
            float sp = seeded ? out[r * N + n] : 0.0f;
            for (const std::uint32_t* k = ra; k != re; ++k) sp = sp + ia[g.a.codes[m * K + *k]].value * ib[g.b.codes[*k * N + n]].value;
            for (const std::uint32_t* k = ca; k != ce; ++k) sp = sp + ia[g.a.codes[m * K + *k]].value * ib[g.b.codes[*k * N + n]].value;
            partial[r * N + n] = sp;
          }
        }
      if (seeded && o.model.promote == 0) restore_negative_zero(g, m0, rows, nc0, nc0 + ncl, ia, ib, out, partial);
      fold_segment(g, m0, rows, nc0, nc0 + ncl, s0 / seg, partial.data(), out);
    }
  }
  epilogue_rows(g, m0, rows, out);
}

namespace {
void rows_impl(const GemmArgs& g, const GemmOptions& o, std::size_t m0, std::size_t m1, float* out) {
  fused_rows_with(pick_kernel(o).kernel, g, o, m0, m1, out);
}
}  // namespace

// An accumulator input the kernel takes as the first step's C (see the top of this file).
bool kernel_takes_c0(const GemmArgs& g, const GemmOptions& o) {
  if (!c_accumulates(g) || block_scaled(g) || o.model.promote > 0) return true;
  return std::all_of(g.c.begin(), g.c.end(), [](float c) {
    const std::uint32_t field = (std::bit_cast<std::uint32_t>(c) >> 23) & 0xFF;  // 27: 2^-100, 252: 2^125
    return c == 0.0f || (field >= 27 && field <= 252);
  });
}

ModelPath fused_path(const GemmArgs& g, const GemmOptions& o) {
  if (o.model.kind != AccumKind::kFused || mx_scaled(g)) return {};
  if (!kernel_takes_c0(g, o) || o.model.group != 1 || o.model.align_bits > kFuMaxAlign) return {};
  // a step's integer sum: (n + 1) terms below 2^(A + 2) each must fit an int32
  const auto n = static_cast<std::uint64_t>(o.model.block);
  if ((n + 1) << (o.model.align_bits + 2) > (std::uint64_t{1} << 31)) return {};
  return {.rows = &rows_impl, .isa = pick_kernel(o).name};
}

}  // namespace fp8q::detail
