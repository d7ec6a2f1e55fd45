// The fast GEMM: decoded, packed operands and a register-blocked micro-kernel for the models
// whose additions are plain fp32 ones (fp32_sequential, systolic); exact_block, fused and
// trainium3_mx run their own paths (model_paths.hpp), other models the reference.
//
// Why it equals the reference bit for bit: each output's additions happen in k order in one
// lane of one accumulator (the micro-kernel), an accumulator parked in memory between K
// chunks is an fp32 value stored and reloaded exactly, the products of decoded FP8/fp6/fp4
// values are exact in fp32, and every host fp32 operation runs under the IEEE default
// environment (ScopedDefaultFpEnv), where it is the correctly rounded result the reference
// computes in integers. Threads split the rows; no output depends on the split.
#include <algorithm>
#include <array>
#include <vector>

#include "fp8q/kernels/gemm.hpp"
#include "fp8q/numerics/fp_env.hpp"
#include "fp8q/numerics/isa.hpp"
#include "fp8q/numerics/parallel.hpp"
#include "fold.hpp"
#include "isa/seq.hpp"
#include "model_paths.hpp"
#include "operands.hpp"
#include "reference_rows.hpp"

namespace fp8q {
namespace {

using detail::kMr;
using detail::kNr;

// Cache blocking: a kKc x kNr B panel (16 KiB) stays in L1 while the kMc x kKc A block
// (96 KiB) streams from L2; the kKc x kNc B block (1 MiB) sits in L2/L3. A wide kNc means A
// is decoded and packed fewer times (once per column block).
constexpr std::size_t kKc = 256, kMc = 16 * kMr, kNc = 64 * kNr;

detail::SeqKernel pick_kernel() {
  const Isa isa = active_isa();
  if (isa != Isa::kGeneric)
    if (detail::SeqKernel k = detail::seq_kernel_avx2()) return k;  // AVX-512 CPUs run the AVX2 kernel
  return detail::seq_kernel_generic();
}

// Under block scaling each 128-K block is summed alone; a systolic tile of >= 128 holds a whole
// block, whose sum is then fp32_sequential's (the tile's +0 start never gives -0).
bool vectorised(const GemmArgs& g, const GemmOptions& o) {
  if (detail::mx_scaled(g)) return false;
  if (o.model.kind == AccumKind::kFp32Sequential) return true;
  return o.model.kind == AccumKind::kSystolic &&
         (!detail::block_scaled(g) || static_cast<std::size_t>(o.model.block) >= detail::kScaleBlock);
}

// Where partial sums restart from +0: the whole of K (fp32_sequential), K tiles of T
// (systolic), 128-K blocks (block scaling).
std::size_t segment_length(const GemmArgs& g, const GemmOptions& o) {
  if (detail::block_scaled(g)) return detail::kScaleBlock;
  if (o.model.kind == AccumKind::kSystolic) return static_cast<std::size_t>(o.model.block);
  return std::max<std::size_t>(g.k, 1);
}

// Rows [m0, m1) of the fp32 result into out[(m - m0) * N + n].
void fast_rows(const GemmArgs& g, const GemmOptions& o, detail::SeqKernel kernel, std::size_t m0, std::size_t m1,
               float* out) {
  ScopedDefaultFpEnv env;
  const auto ta = detail::decode_table(g.a.format), tb = detail::decode_table(g.b.format);
  const std::size_t rows = m1 - m0, N = g.n, K = g.k, seg = segment_length(g, o);
  std::vector<float> partial(rows * N), ap(kMc * kKc), bp(kNc * kKc);
  // out starts at C0 (C as the accumulator input, else +0): systolic tiles and block-scaled
  // partials are folded into it; fp32_sequential on plain scaling has one segment, which the
  // kernel starts at C0 itself (acc = C0 + p_0 + ... in k order) and which is copied to out.
  detail::start_rows(g, m0, rows, out);
  const bool one_sum = !detail::block_scaled(g) && o.model.kind == AccumKind::kFp32Sequential;
  const bool seeded = one_sum && detail::c_accumulates(g);
  alignas(32) float tile_in[kMr * kNr], tile[kMr * kNr];

  for (std::size_t nc0 = 0; nc0 < N; nc0 += kNc) {
    const std::size_t ncl = std::min(kNc, N - nc0), npanels = (ncl + kNr - 1) / kNr;
    for (std::size_t s0 = 0; s0 < K; s0 += seg) {
      const std::size_t s1 = std::min(K, s0 + seg);
      for (std::size_t kc0 = s0; kc0 < s1; kc0 += kKc) {
        const std::size_t kc = std::min(kKc, s1 - kc0);
        const bool first = kc0 == s0;
        // B block: panel p holds columns nc0 + p*kNr .. +kNr, k-major, zero padded
        for (std::size_t p = 0; p < npanels; ++p)
          for (std::size_t k = 0; k < kc; ++k)
            for (std::size_t j = 0; j < kNr; ++j) {
              const std::size_t n = nc0 + p * kNr + j;
              bp[(p * kc + k) * kNr + j] = n < nc0 + ncl ? tb[g.b.codes[(kc0 + k) * N + n]] : 0.0f;
            }
        for (std::size_t mc0 = m0; mc0 < m1; mc0 += kMc) {
          const std::size_t mcl = std::min(kMc, m1 - mc0), mpanels = (mcl + kMr - 1) / kMr;
          for (std::size_t p = 0; p < mpanels; ++p)
            for (std::size_t k = 0; k < kc; ++k)
              for (std::size_t i = 0; i < kMr; ++i) {
                const std::size_t m = mc0 + p * kMr + i;
                ap[(p * kc + k) * kMr + i] = m < mc0 + mcl ? ta[g.a.codes[m * K + kc0 + k]] : 0.0f;
              }
          for (std::size_t jp = 0; jp < npanels; ++jp)
            for (std::size_t ip = 0; ip < mpanels; ++ip) {
              const std::size_t r0 = mc0 - m0 + ip * kMr, c0 = nc0 + jp * kNr;
              const std::size_t mr = std::min(kMr, rows - r0), nr = std::min(kNr, N - c0);
              float* dst = &partial[r0 * N + c0];
              // the sum continues from the parked partial, or starts at C0 (seeded) or +0
              const float* from = !first ? dst : seeded ? &out[r0 * N + c0] : nullptr;
              if (mr == kMr && nr == kNr) {  // a full tile works in place
                kernel(kc, &ap[ip * kc * kMr], &bp[jp * kc * kNr], from, N, dst, N);
                continue;
              }
              if (from != nullptr) {  // an edge tile goes through a zero-padded copy
                std::fill(tile_in, tile_in + kMr * kNr, 0.0f);
                for (std::size_t i = 0; i < mr; ++i) std::copy_n(from + i * N, nr, &tile_in[i * kNr]);
              }
              kernel(kc, &ap[ip * kc * kMr], &bp[jp * kc * kNr], from == nullptr ? nullptr : tile_in, kNr, tile, kNr);
              for (std::size_t i = 0; i < mr; ++i) std::copy_n(&tile[i * kNr], nr, dst + i * N);
            }
        }
      }
      // the segment is complete: fold it into the result (same operations as the reference)
      const std::size_t j = s0 / seg;
      for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t n = nc0; n < nc0 + ncl; ++n) {
          const float p = partial[r * N + n];
          float& d = out[r * N + n];
          if (detail::block_scaled(g)) {
            const float s = detail::block_scale_a(g, m0 + r, j) * detail::block_scale_b(g, j, n);
            d = d + p * s;
          } else {
            d = one_sum ? p : d + p;  // systolic: psum = fp32(psum + t) from psum = C0
          }
        }
    }
  }
  // epilogue: plain scales, C, bias, canonical NaN
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t n = 0; n < N; ++n) {
      const std::size_t m = m0 + r;
      float d = out[r * N + n];
      if (!detail::block_scaled(g)) d = d * (detail::plain_scale_a(g, m) * detail::plain_scale_b(g, n));
      if (detail::c_in_epilogue(g)) d = d + g.c[m * N + n];
      if (!g.bias.empty()) d = d + g.bias[n];
      out[r * N + n] = detail::canonical(d);
    }
}

// exact_block, fused and trainium3_mx have their own fast paths (fast_exact_block.cpp,
// fast_fused.cpp, fast_trainium3_mx.cpp).
detail::ModelPath model_path(const GemmArgs& g, const GemmOptions& o) {
  for (auto path : {detail::exact_block_path, detail::fused_path, detail::trainium3_mx_path})
    if (const detail::ModelPath p = path(g, o); p.rows != nullptr) return p;
  return {};
}

void run(const GemmArgs& g, const GemmOptions& o, float* out) {
  const detail::ModelPath other = model_path(g, o);
  const bool fast = vectorised(g, o);
  const detail::SeqKernel kernel = fast ? pick_kernel() : nullptr;
  // Work is split by panels of kMr rows; a thread gets at least ~4 M multiply-adds (a thread
  // start costs tens of microseconds).
  const std::size_t panels = (g.m + kMr - 1) / kMr;
  const std::size_t per_panel = std::max<std::size_t>(1, kMr * g.n * std::max<std::size_t>(g.k, 1));
  const std::size_t min_panels = std::max<std::size_t>(1, (std::size_t{1} << 22) / per_panel);
  parallel_chunks(
      panels, o.threads,
      [&](std::size_t pb, std::size_t pe) {
        const std::size_t m0 = pb * kMr, m1 = std::min(g.m, pe * kMr);
        if (m0 >= m1) return;
        if (fast) fast_rows(g, o, kernel, m0, m1, out + m0 * g.n);
        else if (other.rows != nullptr) other.rows(g, o, m0, m1, out + m0 * g.n);
        else detail::reference_rows(g, o, m0, m1, out + m0 * g.n);
      },
      ChunkGrain{.align = 1, .min_per_thread = min_panels});
}

}  // namespace

std::string_view gemm_path(const GemmArgs& g, const GemmOptions& o) {
  if (const detail::ModelPath p = model_path(g, o); p.rows != nullptr) return p.isa;
  if (!vectorised(g, o)) return "reference";
  return pick_kernel() == detail::seq_kernel_generic() ? "generic" : "avx2";
}

void gemm(const GemmArgs& g, const GemmOptions& o, std::span<float> out) {
  detail::check_gemm(g, o, std::as_bytes(out), out.size());
  run(g, o, out.data());
}

void gemm(const GemmArgs& g, const GemmOptions& o, std::span<std::uint16_t> out_bf16) {
  detail::check_gemm(g, o, std::as_bytes(out_bf16), out_bf16.size());
  std::vector<float> f(out_bf16.size());
  run(g, o, f.data());
  for (std::size_t i = 0; i < f.size(); ++i) out_bf16[i] = detail::to_bf16(f[i]);
}

}  // namespace fp8q
