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
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "fp8q/kernels/gemm.hpp"
#include "fp8q/numerics/fp_env.hpp"
#include "fp8q/numerics/isa.hpp"
#include "fp8q/numerics/parallel.hpp"
#include "fold.hpp"
#include "isa/seq.hpp"
#include "isa/seq_bf16.hpp"
#include "model_paths.hpp"
#include "operands.hpp"
#include "reference_rows.hpp"
#include "seq_micro.hpp"

namespace fp8q {
namespace {

using detail::kMr;
using detail::kNr;
using detail::kPairMr;
using detail::kPairNr;

// Cache blocking: a kKc x kNr B panel (16 KiB) stays in L1 while the kMc x kKc A block
// (96 KiB) streams from L2; the kKc x kNc B block (1 MiB) sits in L2/L3. A wide kNc means A
// is decoded and packed fewer times (once per column block).
// The bf16 pair kernel's 64-column panels (32 KiB for kKc), the AVX-512 FMA kernel's (64 KiB,
// streamed from L2 at 256 bytes per 24 FMAs) and their 6-row tiles fit the same blocks;
// threads split rows in kMr panels for all.
constexpr std::size_t kKc = 256, kMc = 16 * kMr, kNc = 64 * kNr;
static_assert(kPairMr == kMr && kNc % kPairNr == 0 && kNc % detail::kWideNr == 0 && kKc % 2 == 0);
static_assert(detail::kScaleBlock % detail::kWideNr == 0);
static_assert(detail::kScaleBlock % kNr == 0 && detail::kScaleBlock % kPairNr == 0 && kNc % detail::kScaleBlock == 0);

// Operand packing for each kind of micro-kernel: a B panel of nr columns n0.. (+0 past n_end)
// and an A panel of mr rows m0.. (+0 past m_end), K steps kc0 .. kc0 + kc - 1, in the order the
// kernel reads them (seq.hpp, seq_bf16.hpp).
template <std::size_t Nr>  // kNr or kWideNr columns
struct Fp32Panels {
  using Word = float;
  static constexpr std::size_t mr = kMr, nr = Nr;
  detail::SeqKernel kernel;
  static std::size_t depth(std::size_t kc) { return kc; }
  static void pack_b(Word* bp, const std::array<float, 256>& tb, const GemmArgs& g, std::size_t kc0, std::size_t kc,
                     std::size_t n0, std::size_t n_end) {
    const std::size_t width = std::min(nr, n_end - n0);  // columns past n_end are 0
    for (std::size_t k = 0; k < kc; ++k) {
      const std::uint8_t* row = g.b.codes.data() + (kc0 + k) * g.n + n0;
      for (std::size_t j = 0; j < width; ++j) bp[k * nr + j] = tb[row[j]];
      std::fill(bp + k * nr + width, bp + (k + 1) * nr, 0.0f);
    }
  }
  // row by row: each row's codes are read in address order (A is M x K row-major)
  static void pack_a(Word* ap, const std::array<float, 256>& ta, const GemmArgs& g, std::size_t kc0, std::size_t kc,
                     std::size_t m0, std::size_t m_end) {
    for (std::size_t i = 0; i < mr; ++i) {
      const std::uint8_t* row = m0 + i < m_end ? g.a.codes.data() + (m0 + i) * g.k + kc0 : nullptr;
      for (std::size_t k = 0; k < kc; ++k) ap[k * mr + i] = row != nullptr ? ta[row[k]] : 0.0f;
    }
  }
  void run(std::size_t kc, const Word* ap, const Word* bp, const float* init, std::size_t ldi, float* out,
           std::size_t ldo, bool add = false) const {
    kernel(kc, ap, bp, init, ldi, out, ldo, add);
  }
};

// Pair q holds K steps kc0 + 2q (high half, added first) and kc0 + 2q + 1; an odd chunk's last
// pair has the padding (kPadA, kPadB), whose product -0 changes no sum.
struct Bf16PairPanels {
  using Word = std::uint32_t;
  static constexpr std::size_t mr = kPairMr, nr = kPairNr;
  detail::PairKernel kernel;
  static std::size_t depth(std::size_t kc) { return (kc + 1) / 2; }
  static void pack_b(Word* bp, const std::array<float, 256>& tb, const GemmArgs& g, std::size_t kc0, std::size_t kc,
                     std::size_t n0, std::size_t n_end) {
    const std::size_t width = std::min(nr, n_end - n0);  // columns past n_end are 0
    for (std::size_t q = 0; 2 * q < kc; ++q) {
      const std::uint8_t* first = g.b.codes.data() + (kc0 + 2 * q) * g.n + n0;
      const std::uint8_t* second = 2 * q + 1 < kc ? first + g.n : nullptr;
      Word* out = bp + q * nr;
      if (second != nullptr)
        for (std::size_t j = 0; j < width; ++j) out[j] = detail::bf16_pair(tb[first[j]], tb[second[j]]);
      else
        for (std::size_t j = 0; j < width; ++j) out[j] = detail::bf16_pair(tb[first[j]], detail::kPadB);
      std::fill(out + width, out + nr, 0u);
    }
  }
  static void pack_a(Word* ap, const std::array<float, 256>& ta, const GemmArgs& g, std::size_t kc0, std::size_t kc,
                     std::size_t m0, std::size_t m_end) {
    for (std::size_t i = 0; i < mr; ++i) {  // row by row, as Fp32Panels
      const std::uint8_t* row = m0 + i < m_end ? g.a.codes.data() + (m0 + i) * g.k + kc0 : nullptr;
      for (std::size_t q = 0; 2 * q < kc; ++q)
        ap[q * mr + i] =
            row != nullptr ? detail::bf16_pair(ta[row[2 * q]], 2 * q + 1 < kc ? ta[row[2 * q + 1]] : detail::kPadA) : 0u;
    }
  }
  void run(std::size_t kc, const Word* ap, const Word* bp, const float* init, std::size_t ldi, float* out,
           std::size_t ldo, bool add = false) const {
    kernel(depth(kc), ap, bp, init, ldi, out, ldo, add);
  }
};

// Under block scaling each 128-K block is summed alone; a systolic tile of >= 128 holds a whole
// block, whose sum is then fp32_sequential's (the tile's +0 start never gives -0).
bool vectorised(const GemmArgs& g, const GemmOptions& o) {
  if (detail::mx_scaled(g) || detail::nvfp4_scaled(g)) return false;
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

// fp32_sequential on plain scaling: one sum over all of K, kept in the result itself.
bool one_sum(const GemmArgs& g, const GemmOptions& o) {
  return !detail::block_scaled(g) && o.model.kind == AccumKind::kFp32Sequential;
}

// Whether fast_rows parks partial sums in a rows x N buffer: a systolic tile longer than one K chunk.
bool parks(const GemmArgs& g, const GemmOptions& o) { return !one_sum(g, o) && segment_length(g, o) > kKc; }

// Rows [m0, m1) of the fp32 result into out[(m - m0) * N + n]; P: Fp32Panels<nr> or Bf16PairPanels.
// fp32_sequential on plain scaling sums in out itself; a segment that fits one K chunk (systolic
// T <= kKc, 128-K blocks) is summed in a register tile and folded into out at once; only a longer
// systolic tile parks its partial sums in a rows x N buffer between chunks.
template <class P>
void fast_rows(const GemmArgs& g, const GemmOptions& o, const P& kernel, std::size_t m0, std::size_t m1, float* out) {
  constexpr std::size_t kMr = P::mr, kNr = P::nr;  // this kernel's tile
  ScopedDefaultFpEnv env;
  const auto ta = detail::decode_table(g.a.format), tb = detail::decode_table(g.b.format);
  const std::size_t rows = m1 - m0, N = g.n, K = g.k, seg = segment_length(g, o);
  const bool single = one_sum(g, o);
  const bool seeded = single && detail::c_accumulates(g);
  const bool parked = parks(g, o);
  std::vector<float> partial(parked ? rows * N : 0);
  std::vector<typename P::Word> ap(kMc * P::depth(kKc)), bp(kNc * P::depth(kKc));
  // out starts at C0 (C as the accumulator input, else +0): systolic tiles and block-scaled
  // partials are folded into it; fp32_sequential's one sum starts at C0 itself (acc = C0 + p_0
  // + ... in k order) when seeded, else at +0.
  detail::start_rows(g, m0, rows, out);
  alignas(64) float tile_in[kMr * kNr], tile[kMr * kNr];

  for (std::size_t nc0 = 0; nc0 < N; nc0 += kNc) {
    const std::size_t ncl = std::min(kNc, N - nc0), npanels = (ncl + kNr - 1) / kNr;
    for (std::size_t s0 = 0; s0 < K; s0 += seg) {
      const std::size_t s1 = std::min(K, s0 + seg), j = s0 / seg;
      // the segment's tile sum p folded into the result (the reference's operations)
      // (a tile lies in one 128-column scale block of B: kScaleBlock % kNr == 0, kNc % kScaleBlock == 0)
      auto fold = [&](const float* p, std::size_t ldp, std::size_t r0, std::size_t c0, std::size_t mr,
                      std::size_t nr) {
        for (std::size_t i = 0; i < mr; ++i) {
          float* d = &out[(r0 + i) * N + c0];
          const float* t = p + i * ldp;
          if (detail::block_scaled(g)) {
            const float s = detail::block_scale_a(g, m0 + r0 + i, j) * detail::block_scale_b(g, j, c0);
            for (std::size_t n = 0; n < nr; ++n) d[n] = d[n] + t[n] * s;
          } else {
            for (std::size_t n = 0; n < nr; ++n) d[n] = d[n] + t[n];  // systolic: psum = fp32(psum + t) from C0
          }
        }
      };
      for (std::size_t kc0 = s0; kc0 < s1; kc0 += kKc) {
        const std::size_t kc = std::min(kKc, s1 - kc0), d = P::depth(kc);
        const bool first = kc0 == s0, last = kc0 + kc == s1;
        // B block: panel p holds columns nc0 + p*kNr .. +kNr, k-major, zero padded
        for (std::size_t p = 0; p < npanels; ++p) P::pack_b(&bp[p * d * kNr], tb, g, kc0, kc, nc0 + p * kNr, nc0 + ncl);
        for (std::size_t mc0 = m0; mc0 < m1; mc0 += kMc) {
          const std::size_t mcl = std::min(kMc, m1 - mc0), mpanels = (mcl + kMr - 1) / kMr;
          for (std::size_t p = 0; p < mpanels; ++p) P::pack_a(&ap[p * d * kMr], ta, g, kc0, kc, mc0 + p * kMr, mc0 + mcl);
          for (std::size_t jp = 0; jp < npanels; ++jp)
            for (std::size_t ip = 0; ip < mpanels; ++ip) {
              const std::size_t r0 = mc0 - m0 + ip * kMr, c0 = nc0 + jp * kNr;
              const std::size_t mr = std::min(kMr, rows - r0), nr = std::min(kNr, N - c0);
              // the tile's sum from `from` (null: +0) into dst; an edge tile goes through
              // zero-padded copies
              auto compute = [&](const float* from, float* dst, std::size_t ldd) {
                if (mr == kMr && nr == kNr) return kernel.run(kc, &ap[ip * d * kMr], &bp[jp * d * kNr], from, N, dst, ldd);
                if (from != nullptr) {
                  std::fill(tile_in, tile_in + kMr * kNr, 0.0f);
                  for (std::size_t i = 0; i < mr; ++i) std::copy_n(from + i * N, nr, &tile_in[i * kNr]);
                }
                kernel.run(kc, &ap[ip * d * kMr], &bp[jp * d * kNr], from == nullptr ? nullptr : tile_in, kNr, tile,
                           kNr);
                if (dst != tile)
                  for (std::size_t i = 0; i < mr; ++i) std::copy_n(&tile[i * kNr], nr, dst + i * ldd);
              };
              float* o_tile = &out[r0 * N + c0];
              if (single) {
                compute(!first || seeded ? o_tile : nullptr, o_tile, N);
              } else if (!parked && !detail::block_scaled(g) && mr == kMr && nr == kNr) {
                // the segment is this one chunk: the kernel folds its sum into out itself
                kernel.run(kc, &ap[ip * d * kMr], &bp[jp * d * kNr], nullptr, N, o_tile, N, true);
              } else if (!parked) {
                compute(nullptr, tile, kNr);
                fold(tile, kNr, r0, c0, mr, nr);
              } else {
                float* p_tile = &partial[r0 * N + c0];
                compute(first ? nullptr : p_tile, p_tile, N);
                if (last) fold(p_tile, N, r0, c0, mr, nr);
              }
            }
        }
      }
    }
  }
  detail::epilogue_rows(g, m0, rows, out);
}

// exact_block, fused and trainium3_mx have their own fast paths (fast_exact_block.cpp,
// fast_fused.cpp, fast_trainium3_mx.cpp).
detail::ModelPath model_path(const GemmArgs& g, const GemmOptions& o) {
  for (auto path : {detail::exact_block_path, detail::fused_path, detail::trainium3_mx_path})
    if (const detail::ModelPath p = path(g, o); p.rows != nullptr) return p;
  return {};
}

void fast_rows(const GemmArgs& g, const GemmOptions& o, const detail::SeqMicro& micro, std::size_t m0, std::size_t m1,
               float* out) {
  if (micro.pairs != nullptr) fast_rows(g, o, Bf16PairPanels{micro.pairs}, m0, m1, out);
  else if (micro.wide != nullptr) fast_rows(g, o, Fp32Panels<detail::kWideNr>{micro.wide}, m0, m1, out);
  else fast_rows(g, o, Fp32Panels<kNr>{micro.fp32}, m0, m1, out);
}

// A thread hands its rows to a path in slabs of at most kSlabRows, so that the paths' working
// buffers (partial sums, carries) and a bf16 result's fp32 rows take O(kSlabRows x N) memory, not
// O(M x N); rows are independent, so the slabs do not change a bit. The fast path with an fp32
// result and no parked sums keeps no such buffer: it takes all of a thread's rows at once, so
// that each B block is packed once.
constexpr std::size_t kSlabRows = 8 * kMc;

// The options' micro-kernel: the one forced by name, else this CPU's choice at the options' ISA.
detail::SeqMicro chosen_micro(const GemmOptions& o) {
  const Isa isa = resolve_isa(o.isa, "GemmOptions::isa");
  return o.micro_kernel ? detail::seq_micro_named(*o.micro_kernel) : detail::seq_micro(isa);
}

// The fp32 result into out32, or its bf16 rounding into out16 (the other is null). micro: the
// fast path's kernel (seq_micro() of the options' ISA when null; unused off that path).
void run(const GemmArgs& g, const GemmOptions& o, float* out32, std::uint16_t* out16,
         const detail::SeqMicro* micro = nullptr) {
  const detail::ModelPath other = model_path(g, o);
  const bool fast = vectorised(g, o);
  const detail::SeqMicro kernel = !fast ? detail::SeqMicro{} : micro != nullptr ? *micro : chosen_micro(o);
  // Work is split by panels of kMr rows; a thread gets at least ~4 M multiply-adds (a thread
  // start costs tens of microseconds).
  const std::size_t panels = (g.m + kMr - 1) / kMr;
  const std::size_t per_panel = std::max<std::size_t>(1, kMr * g.n * std::max<std::size_t>(g.k, 1));
  const std::size_t min_panels = std::max<std::size_t>(1, (std::size_t{1} << 22) / per_panel);
  parallel_chunks(
      panels, o.threads,
      [&](std::size_t pb, std::size_t pe) {
        const std::size_t m0 = pb * kMr, m1 = std::min(g.m, pe * kMr);
        std::vector<float> rows32(out16 != nullptr ? std::min(kSlabRows, m1 - std::min(m0, m1)) * g.n : 0);
        const std::size_t slab = fast && out16 == nullptr && !parks(g, o) ? std::max<std::size_t>(1, m1 - m0) : kSlabRows;
        for (std::size_t s0 = m0; s0 < m1; s0 += slab) {
          const std::size_t s1 = std::min(m1, s0 + slab);
          float* out = out16 != nullptr ? rows32.data() : out32 + s0 * g.n;
          if (fast) fast_rows(g, o, kernel, s0, s1, out);
          else if (other.rows != nullptr) other.rows(g, o, s0, s1, out);
          else detail::reference_rows(g, o, s0, s1, out);
          if (out16 != nullptr)
            for (std::size_t i = 0; i < (s1 - s0) * g.n; ++i) out16[s0 * g.n + i] = detail::to_bf16(out[i]);
        }
      },
      ChunkGrain{.align = 1, .min_per_thread = min_panels});
}

}  // namespace

namespace detail {

namespace {
SeqMicro generic_micro() { return {.fp32 = seq_kernel_generic(), .name = "generic"}; }
SeqMicro avx2_micro() { return {.fp32 = seq_kernel_avx2(), .name = "avx2"}; }
SeqMicro avx512_micro() { return {.wide = seq_kernel_avx512(), .name = "avx512"}; }
SeqMicro avx512bf16_micro() { return {.pairs = seq_kernel_avx512bf16(), .name = "avx512bf16"}; }
}  // namespace

SeqMicro seq_micro(Isa isa) {
  auto avx512 = [] {
    if (cpu_vendor() == CpuVendor::kAmd)
      if (SeqMicro m = avx512bf16_micro()) return m;
    return avx512_micro();
  };
  return dispatch(isa, generic_micro, avx2_micro, avx512, [] { return SeqMicro{}; });
}

SeqMicro seq_micro_named(std::string_view name) {
  for (auto make : {avx512bf16_micro, avx512_micro, avx2_micro, generic_micro})
    if (SeqMicro m = make(); m.name == name) {
      if (m) return m;
      throw std::invalid_argument("GemmOptions::micro_kernel: '" + std::string(name) + "' does not run on this CPU");
    }
  throw std::invalid_argument("GemmOptions::micro_kernel: '" + std::string(name) +
                              "' is not one of avx512bf16 avx512 avx2 generic");
}

void gemm_with(const GemmArgs& g, const GemmOptions& o, const SeqMicro& micro, std::span<float> out) {
  check_gemm(g, o, std::as_bytes(out), out.size());
  if (model_path(g, o).rows != nullptr || !vectorised(g, o))
    throw std::invalid_argument("gemm_with: model " + model_name(o.model) +
                                " with these scalings does not take the fp32_sequential/systolic fast path");
  if ((micro.fp32 != nullptr) + (micro.wide != nullptr) + (micro.pairs != nullptr) != 1)
    throw std::invalid_argument("gemm_with: micro must set exactly one of fp32, wide and pairs");
  run(g, o, out.data(), nullptr, &micro);
}

}  // namespace detail

std::string_view gemm_path(const GemmArgs& g, const GemmOptions& o) {
  if (const detail::ModelPath p = model_path(g, o); p.rows != nullptr) return p.isa;
  if (!vectorised(g, o)) return "reference";
  return chosen_micro(o).name;
}

void gemm(const GemmArgs& g, const GemmOptions& o, std::span<float> out) {
  detail::check_gemm(g, o, std::as_bytes(out), out.size());
  run(g, o, out.data(), nullptr);
}

void gemm(const GemmArgs& g, const GemmOptions& o, std::span<std::uint16_t> out_bf16) {
  detail::check_gemm(g, o, std::as_bytes(out_bf16), out_bf16.size());
  run(g, o, nullptr, out_bf16.data());
}

}  // namespace fp8q
