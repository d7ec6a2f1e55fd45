// The fast exact_block:B GEMM (the OCP MX dot product with B = 32): operands decoded to fp64 and
// multiplied by their MX scales, each block of B products summed exactly in fp64 by the
// micro-kernel (isa/exact_block.hpp says why the sums are exact and when a block needs two of
// them), rounded once to fp32 and added, block after block, into an fp32 accumulator.
//
// Why it equals the reference bit for bit: the block sum the kernel rounds is the exact sum (or
// its round-to-odd at 53 bits, which rounds to the same fp32 value); blocks are added in K order
// with one fp32 rounding each; an accumulator parked in memory is an fp32 value stored and
// reloaded exactly; the choice between the kernel's two sums is made from exponent bounds of
// the tile's operands, which hold for every output of the tile; and every host floating-point
// operation runs under the IEEE default environment. Threads split the rows.
#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "aligned_buffer.hpp"
#include "code_info.hpp"
#include "fold.hpp"
#include "fp8q/numerics/fp_env.hpp"
#include "fp8q/numerics/isa.hpp"
#include "isa/exact_block.hpp"
#include "model_paths.hpp"
#include "operands.hpp"

namespace fp8q::detail {
namespace {

constexpr std::size_t kMr = kXbMr, kNr = kXbNr;
// Cache blocking: about kKc products of K per chunk (whole blocks), so a kKc x kNr B panel
// (32 KiB of fp64) stays in L1 or L2 while a kMc x kKc A block (192 KiB) streams from L2; the B block
// holds up to 2^20 fp64 values (8 MiB, L3), so A is decoded once per 512 columns.
constexpr std::size_t kKc = 256, kMc = 16 * kMr, kBBlockValues = std::size_t{1} << 20;
// The longest block (products summed exactly as one) this path takes: a chunk holds whole
// blocks, so the A chunk grows with B (kMc x 4096 doubles = 3 MiB at most here; the B block
// is kBBlockValues at most either way); longer blocks take the reference.
constexpr std::size_t kMaxFastBlock = 4096;

// Exponent bounds of the finite nonzero operands of one panel in one block.
struct Span {
  static constexpr int kNone = -128;
  int top = kNone;  // largest floor(log2|x|); kNone when there is none
  int low = 127;    // smallest exponent of a lowest set bit
  bool empty() const { return top == kNone; }
};

// Per code of one operand: fp64 value and exponent bounds (zero and special codes: none).
struct Codes {
  std::array<double, 256> value{};
  std::array<std::int8_t, 256> top{}, low{};
  explicit Codes(FormatId f) {
    const auto info = code_info(f);
    for (std::size_t c = 0; c < 256; ++c) {
      value[c] = info[c].value;
      top[c] = static_cast<std::int8_t>(info[c].nonzero ? info[c].top : Span::kNone);
      low[c] = static_cast<std::int8_t>(info[c].nonzero ? info[c].low : 127);
    }
  }
  void add(Span& s, std::uint8_t code) const {
    s.top = std::max<int>(s.top, top[code]);
    s.low = std::min<int>(s.low, low[code]);
  }
};

// The largest exponent range of products and the most significant bits of a product, over
// every pair of codes: the split sum is exact when (top - low) + 2 ceil(log2 B) + w <= 105.
bool split_is_exact(FormatId fa, FormatId fb, std::size_t block) {
  const Codes ca(fa), cb(fb);
  Span a, b;
  for (std::size_t c = 0; c < 256; ++c) ca.add(a, static_cast<std::uint8_t>(c)), cb.add(b, static_cast<std::uint8_t>(c));
  if (a.empty() || b.empty()) return true;
  const int w = significand_bits(fa) + significand_bits(fb);
  return (a.top + b.top - a.low - b.low) + 2 * ceil_log2(block) + w <= 105;
}

// NVFP4: an element times its E4M3FN scale (4 significant bits) has its highest bit at most 1 and
// its lowest at most 3 places beyond the element's own: 4 more bits of span per operand. The
// path takes NVFP4 only where every block is then direct (no split: its threshold assumes
// power-of-two scales).
constexpr int kNvfp4ScaleSpan = 8;
bool nvfp4_always_direct(FormatId fa, FormatId fb, std::size_t block) {
  const Codes ca(fa), cb(fb);
  Span a, b;
  for (std::size_t c = 0; c < 256; ++c) ca.add(a, static_cast<std::uint8_t>(c)), cb.add(b, static_cast<std::uint8_t>(c));
  return a.empty() || b.empty() || (a.top + b.top + 2 + ceil_log2(block)) - (a.low + b.low) + kNvfp4ScaleSpan <= 53;
}

// The products summed apart before folding in: a 128-K segment under block scaling, else all
// of K (blocks restart at each segment).
std::size_t segment_length(const GemmArgs& g) { return block_scaled(g) ? kScaleBlock : std::max<std::size_t>(g.k, 1); }

PickedKernel<XbKernel> pick_kernel(const GemmOptions& o) {
  return pick_kernel<XbKernel>(o, exact_block_kernel_generic, exact_block_kernel_avx2, exact_block_kernel_avx512);
}

void rows_impl(const GemmArgs& g, const GemmOptions& o, std::size_t m0, std::size_t m1, float* out) {
  exact_block_rows_with(pick_kernel(o).kernel, g, o, m0, m1, out);
}

}  // namespace

void exact_block_rows_with(XbKernel kernel, const GemmArgs& g, const GemmOptions& o, std::size_t m0, std::size_t m1,
                           float* out) {
  ScopedDefaultFpEnv env;
  const Codes ca(g.a.format), cb(g.b.format);
  std::array<double, 256> e8m0{};  // MX scale factors
  for (std::size_t c = 0; c < 256; ++c) e8m0[c] = e8m0_value(static_cast<std::uint8_t>(c));
  const bool nv = nvfp4_scaled(g), mx_a = is_mx(g.a) || nv, mx_b = is_mx(g.b) || nv;  // a factor per block
  const std::size_t kg = (g.k + kMxGroup - 1) / kMxGroup;
  std::array<double, 256> e4m3{};  // NVFP4 block scales (decode_table gives NaN codes NaN)
  if (nv) {
    const auto t = decode_table(FormatId::kE4M3FN);
    std::copy(t.begin(), t.end(), e4m3.begin());
  }
  auto scale_a = [&](std::size_t m, std::size_t k) -> double {
    if (nv) return e4m3[g.a.scale_codes[nvfp4_scale_index(g.a, g.k, m, k)]];
    return mx_a ? e8m0[g.a.scale_codes[m * kg + k / kMxGroup]] : 1.0;
  };
  auto scale_b = [&](std::size_t k, std::size_t n) -> double {
    if (nv) return e4m3[g.b.scale_codes[nvfp4_scale_index(g.b, g.n, k, n)]];
    return mx_b ? e8m0[g.b.scale_codes[(k / kMxGroup) * g.n + n]] : 1.0;
  };

  const std::size_t N = g.n, K = g.k, rows = m1 - m0;
  const std::size_t seg = segment_length(g);
  // Blocks restart at each segment, so a block longer than the segment is the segment: the
  // buffers are sized by that length, not by B (a model may name any B >= 1).
  const std::size_t B = std::min(static_cast<std::size_t>(o.model.block), seg);
  const std::size_t kc_max = std::max<std::size_t>(1, kKc / B) * B;  // whole blocks per chunk
  const std::size_t blocks_max = kc_max / B;
  const std::size_t nc_max = std::max(kNr, kBBlockValues / kc_max / kNr * kNr);

  // Under block scaling each 128-K segment is summed apart (from +0) and folded into out, which
  // starts at C0; otherwise the one segment accumulates straight into out from C0 (gemm.hpp).
  std::vector<float> partial(block_scaled(g) ? rows * N : 0);
  float* const accum = block_scaled(g) ? partial.data() : out;
  // When no two codes of these formats can span more than 53 bits in a block, every block is
  // direct and the per-tile test is skipped.
  Span all_a, all_b;
  for (std::size_t c = 0; c < 256; ++c) ca.add(all_a, static_cast<std::uint8_t>(c)), cb.add(all_b, static_cast<std::uint8_t>(c));
  const bool always_direct = all_a.empty() || all_b.empty() ||
                             (all_a.top + all_b.top + 2 + ceil_log2(B)) - (all_a.low + all_b.low) +
                                     (nv ? kNvfp4ScaleSpan : 0) <= 53;
  AlignedBuffer<double> ap(kMc * kc_max), bp(nc_max * kc_max), thr(blocks_max * kMr * kNr);
  std::vector<Span> span_a((kMc / kMr) * blocks_max), span_b((nc_max / kNr) * blocks_max);
  std::vector<std::uint32_t> len(blocks_max);
  std::vector<int> len_log2(blocks_max);
  std::vector<std::uint8_t> mode(blocks_max, kXbDirect);
  start_rows(g, m0, rows, out);
  alignas(32) float tile[kMr * kNr];

  for (std::size_t nc0 = 0; nc0 < N; nc0 += nc_max) {
    const std::size_t ncl = std::min(nc_max, N - nc0), npanels = (ncl + kNr - 1) / kNr;
    for (std::size_t s0 = 0; s0 < K; s0 += seg) {
      const std::size_t s1 = std::min(K, s0 + seg);
      for (std::size_t kc0 = s0; kc0 < s1; kc0 += kc_max) {
        const std::size_t kc = std::min(kc_max, s1 - kc0), nblocks = (kc + B - 1) / B;
        for (std::size_t b = 0; b < nblocks; ++b) {
          len[b] = static_cast<std::uint32_t>(std::min(B, kc - b * B));
          len_log2[b] = ceil_log2(len[b]);
        }
        if (kc0 == s0 && block_scaled(g))  // a block-scaled segment's accumulator starts at +0
          for (std::size_t r = 0; r < rows; ++r) std::fill_n(&accum[r * N + nc0], ncl, 0.0f);
        // B block: panel p holds columns nc0 + p*kNr .. +kNr, k-major, zero padded, scaled
        for (std::size_t p = 0; p < npanels; ++p) {
          const std::size_t n0 = nc0 + p * kNr, nn = std::min(kNr, nc0 + ncl - n0);
          for (std::size_t b = 0; b < nblocks; ++b) {
            Span sp;
            for (std::size_t k = b * B; k < b * B + len[b]; ++k) {
              const std::uint8_t* row = &g.b.codes[(kc0 + k) * N + n0];
              double* dst = &bp[(p * kc + k) * kNr];
              for (std::size_t j = 0; j < nn; ++j) {
                dst[j] = cb.value[row[j]] * scale_b(kc0 + k, n0 + j);
                cb.add(sp, row[j]);
              }
              std::fill(dst + nn, dst + kNr, 0.0);
            }
            span_b[p * blocks_max + b] = sp;
          }
        }
        for (std::size_t mc0 = m0; mc0 < m1; mc0 += kMc) {
          const std::size_t mcl = std::min(kMc, m1 - mc0), mpanels = (mcl + kMr - 1) / kMr;
          for (std::size_t p = 0; p < mpanels; ++p) {
            const std::size_t mp0 = mc0 + p * kMr, mm = std::min(kMr, mc0 + mcl - mp0);
            for (std::size_t b = 0; b < nblocks; ++b) {
              Span sp;
              for (std::size_t i = 0; i < kMr; ++i) {
                double* dst = &ap[(p * kc + b * B) * kMr + i];
                if (i >= mm) {  // padding rows
                  for (std::size_t k = 0; k < len[b]; ++k) dst[k * kMr] = 0.0;
                  continue;
                }
                const std::uint8_t* row = &g.a.codes[(mp0 + i) * K + kc0 + b * B];
                const double f = scale_a(mp0 + i, kc0 + b * B);  // one scale per block (B | 32, NVFP4: B | 16)
                for (std::size_t k = 0; k < len[b]; ++k) {
                  dst[k * kMr] = mx_a ? ca.value[row[k]] * f : ca.value[row[k]];
                  ca.add(sp, row[k]);
                }
              }
              span_a[p * blocks_max + b] = sp;
            }
          }
          for (std::size_t jp = 0; jp < npanels; ++jp)
            for (std::size_t ip = 0; ip < mpanels; ++ip) {
              const std::size_t r0 = mc0 - m0 + ip * kMr, c0 = nc0 + jp * kNr;
              const std::size_t mr = std::min(kMr, rows - r0), nr = std::min(kNr, N - c0);
              // per block: a direct fp64 sum when the tile's exponent range allows it
              for (std::size_t b = 0; b < nblocks && !always_direct; ++b) {
                const Span& sa = span_a[ip * blocks_max + b];
                const Span& sb = span_b[jp * blocks_max + b];
                const bool direct = sa.empty() || sb.empty() ||
                                    (sa.top + sb.top + 2 + len_log2[b]) - (sa.low + sb.low) <= 53;
                mode[b] = direct ? kXbDirect : kXbSplit;
                if (direct) continue;
                const double t = std::ldexp(1.0, sa.low + sb.low + 53 - len_log2[b]);
                const std::size_t kb = kc0 + b * B;  // the block's first K (its MX group)
                for (std::size_t i = 0; i < kMr; ++i)
                  for (std::size_t j = 0; j < kNr; ++j) {
                    const double fa = i < mr ? scale_a(m0 + r0 + i, kb) : 1.0;
                    const double fb = j < nr ? scale_b(kb, c0 + j) : 1.0;
                    thr[(b * kMr + i) * kNr + j] = t * fa * fb;
                  }
              }
              XbTile t{.nblocks = nblocks, .len = len.data(), .mode = mode.data(), .thr = thr.data(),
                       .ap = &ap[ip * kc * kMr], .bp = &bp[jp * kc * kNr], .acc = nullptr, .ld = N};
              // the tile's accumulators go through a contiguous (zero-padded) copy: rows of out
              // lie N floats apart, often a multiple of 4 KiB, which aliases in L1 block after block
              float* dst = &accum[r0 * N + c0];
              if (mr < kMr || nr < kNr) std::fill(tile, tile + kMr * kNr, 0.0f);
              for (std::size_t i = 0; i < mr; ++i) std::copy_n(dst + i * N, nr, &tile[i * kNr]);
              t.acc = tile, t.ld = kNr;
              if (ip + 1 < mpanels)  // the next tile's accumulator rows, while this one runs
                for (std::size_t i = 0; i < kMr && r0 + kMr + i < rows; ++i) __builtin_prefetch(dst + (kMr + i) * N, 1);
              kernel(t);
              for (std::size_t i = 0; i < mr; ++i) std::copy_n(&tile[i * kNr], nr, dst + i * N);
            }
        }
      }
      if (block_scaled(g)) fold_segment(g, m0, rows, nc0, nc0 + ncl, s0 / seg, partial.data(), out);
    }
  }
  epilogue_rows(g, m0, rows, out);
}

ModelPath exact_block_path(const GemmArgs& g, const GemmOptions& o) {
  if (o.model.kind != AccumKind::kExactBlock) return {};
  const auto block = static_cast<std::size_t>(o.model.block);
  if (mx_scaled(g) && (o.mx_dequantize_to_bf16 || kMxGroup % block != 0)) return {};
  if (nvfp4_scaled(g) && (kNvfp4BlockSize % block != 0 || !nvfp4_always_direct(g.a.format, g.b.format, block)))
    return {};
  if (!split_is_exact(g.a.format, g.b.format, block)) return {};
  // a chunk holds whole blocks: past kMaxFastBlock products its buffers would grow with B
  if (std::min(block, segment_length(g)) > kMaxFastBlock) return {};
  return {.rows = &rows_impl, .isa = pick_kernel(o).name};
}

}  // namespace fp8q::detail
