// Fused cast + transpose. The matrix is cut into bands of at most kBandRows rows and each
// band into chunks of at most kChunkCols columns; a thread walks its bands chunk by chunk:
//   1. row by row, the bulk kernel converts the row's segment into the chunk buffer, in
//      pieces of kPieceCols columns; the input is read once, in order (a band of whole rows is
//      one sequential stream, which the prefetchers follow), and each piece's amax is taken
//      right after, from L1;
//   2. each piece's codes are copied from the buffer to q;
//   3. the chunk is transposed a tile column (64 columns x the band's rows) at a time into the
//      tile buffer, and from there into qt: each row of qt receives the band's 256 codes (four
//      whole cache lines) in one visit to its page. Every other chunk of a thread walks its
//      tile columns from last to first, so that the qt pages the previous chunk touched last,
//      still in the TLB, are the first ones touched again.
// Codes are computed once, by the same kernels as convert(), keyed by the element's index in
// the input, so q and qt agree with convert() for any band, chunk, piece or thread split.
//
// The pass is bound by its arithmetic, like the single scaled cast; the layout is chosen for
// memory: the input is read in whole rows and each row of qt receives 256 bytes per visit
// (where the time goes, and the layouts measured and not kept: docs/performance.md).
//
// Large outputs are written with non-temporal stores (whole 64-byte lines, no read for
// ownership): the fused pass then moves the same bytes to and from memory as a single
// cast with ordinary stores (input + 2 x codes vs input + codes read and written back).
#include "fp8q/numerics/cast_transpose.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#if defined(__linux__)
#include <sys/mman.h>
#endif
#if defined(__SSE2__)
#include <emmintrin.h>
#include <xmmintrin.h>
#endif

#include "fp8q/numerics/convert.hpp"
#include "dispatch.hpp"
#include "isa/max_abs_kernels.hpp"
#include "isa/transpose_kernels.hpp"

namespace fp8q {
namespace {

using detail::kTileColumnRows;
using detail::kTransposeTile;
using detail::load_code;
using detail::TransposeKernels;

// Rows per band: each row of qt receives kBandRows contiguous bytes (whole 64-byte lines) per
// band, in one visit to its page.
constexpr std::size_t kBandRows = kTileColumnRows;
// Columns per chunk: whole rows up to 4096 columns (see above); a chunk's codes (up to 1 MiB:
// L2 and L3) are read back for the transpose with software prefetches ahead of the rows.
constexpr std::size_t kChunkCols = 4096;
// Columns per kernel call: the piece's input (1 KiB of bf16 or fp16, 2 KiB of fp32) is still in
// L1 for the amax, and the copy of its codes to q is a short burst of streaming stores between
// conversions rather than a whole row's; 512 keeps the kernel's per-call setup small against
// its work.
constexpr std::size_t kPieceCols = 512;
// Outputs of at least this many codes (8 MiB for q and qt together, more than this machine's
// L2 per core and a good part of an L3) are written non-temporally: the caller cannot find
// them in cache anyway. Smaller ones stay in cache for the next consumer.
constexpr std::size_t kStreamingMin = std::size_t{4} << 20;

const TransposeKernels& kernels_for(Isa isa) {
  // AVX-512 machines run the AVX2 kernels (a tile row is 64 bytes: one 512-bit register would
  // hold a whole row, but the shuffles that interleave rows work per 128-bit lane either way)
  return *dispatch(
      isa, detail::transpose_kernels_base, detail::transpose_kernels_avx2, kNoKernel, detail::transpose_kernels_neon);
}

// Non-temporal stores are weakly ordered: fence them before the thread reports completion.
void fence_streams() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

// ---------------------------------------------------------------------------------------------
// Bands

// Band b covers rows [start(b), start(b + 1)). When each row of qt starts on the same offset
// within a 64-byte line (rows % 64 == 0), the first band is cut short so that every later band
// starts a line of every qt row: qt + c * rows + start(b) is then 64-byte aligned and the
// tile columns' qt stores are whole lines. The split never changes a code: it only decides
// which element is converted when.
struct Bands {
  std::size_t rows = 0, first = kBandRows;
  std::size_t count() const { return rows <= first ? (rows > 0 ? 1 : 0) : 1 + (rows - first + kBandRows - 1) / kBandRows; }
  std::size_t start(std::size_t b) const { return b == 0 ? 0 : std::min(rows, first + (b - 1) * kBandRows); }
};

Bands make_bands(std::size_t rows, const std::uint8_t* qt) {
  Bands bands;
  bands.rows = rows;
  const std::size_t misalign = reinterpret_cast<std::uintptr_t>(qt) % 64;
  if (rows % 64 == 0 && misalign != 0) bands.first = 64 - misalign;
  return bands;
}

// A chunk: rows [r0, r0 + h) x columns [c0, c0 + w), its codes in `buf` (row stride
// Job::stride).
struct Chunk {
  std::size_t r0 = 0, h = 0, c0 = 0, w = 0;
  std::uint8_t* buf = nullptr;
  std::size_t tiles() const { return (w + kTransposeTile - 1) / kTransposeTile; }
};

// Everything one call shares between its threads.
struct Job {
  const std::byte* in;
  std::size_t rows, cols, ib;
  std::uint8_t* q;
  std::uint8_t* qt;
  const Format* from;
  const Format* to;
  const ConvertOptions* options;
  detail::NarrowFn fn;
  const detail::NarrowParams* params;
  const TransposeKernels* k;
  const detail::MaxAbsKernels* m;
  bool stream;
  // Row stride of a chunk buffer: the chunk width rounded up to 64, plus 64, so that the rows
  // of a tile fall into different L1 sets (a power-of-two stride would put them all in one).
  std::size_t stride;
};

// Chunk c into qt, by tile columns (64 columns x the chunk's rows), each through the tile
// buffer `tb` (64 x kTileColumnRows, column-major); `reverse` walks them from last to first.
void transpose_chunk(const Job& job, const Chunk& c, std::uint8_t* tb, bool reverse) {
  const std::size_t n = c.tiles();
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t t = reverse ? n - 1 - i : i, j0 = t * kTransposeTile, tw = std::min(kTransposeTile, c.w - j0);
    const std::uint8_t* next = i + 1 < n ? c.buf + (reverse ? t - 1 : t + 1) * kTransposeTile : nullptr;
    job.k->tile_column(c.buf + j0, job.stride, c.h, tw, tb, next);
    for (std::size_t j = 0; j < tw; ++j)
      job.k->copy(job.qt + (c.c0 + j0 + j) * job.rows + c.r0, tb + j * kTileColumnRows, c.h, job.stream);
  }
}

// Throws NanError for the first element of rows [r0, r1) (in index order) whose NaN the
// target cannot hold; called once the kernel reported one somewhere in those rows.
void throw_first_nan(const Job& job, std::size_t r0, std::size_t r1) {
  for (std::size_t i = r0 * job.cols; i < r1 * job.cols; ++i)
    if (convert_one(load_code(job.in + i * job.ib, job.ib), *job.from, *job.to, *job.options, i).nan_unrepresentable)
      throw NanError(i, "element " + std::to_string(i) + ": NaN has no encoding in " + std::string(job.to->name) +
                            " (NaN policy: error)");
}

// The chunk buffer and the tile buffer of the calling thread, kept from call to call: a fresh
// megabyte costs a page fault per 4 KiB on first touch. It is allocated in whole 2 MiB units,
// 2 MiB aligned, and (Linux) advised into transparent huge pages: a tile column reads one line
// from each of 256 buffer rows 4160 bytes apart, 256 different 4 KiB pages but one 2 MiB page
// (docs/performance.md has the gain). Where the system gives no huge page the advice changes
// nothing. Freed when the thread exits
// (parallel_chunks' worker threads exit at the end of the call).
struct FreeWorkspace {
  void operator()(std::uint8_t* p) const { std::free(p); }
};
std::uint8_t* workspace(std::size_t bytes) {
  constexpr std::size_t kHugePage = std::size_t{2} << 20;
  thread_local std::unique_ptr<std::uint8_t[], FreeWorkspace> storage;
  thread_local std::size_t size = 0;
  if (size < bytes) {
    storage.reset();
    size = 0;
    const std::size_t total = (bytes + kHugePage - 1) / kHugePage * kHugePage;
    storage.reset(static_cast<std::uint8_t*>(std::aligned_alloc(kHugePage, total)));
    if (!storage) throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    madvise(storage.get(), total, MADV_HUGEPAGE);  // before the first touch; advice only
#endif
    size = total;
  }
  return storage.get();
}

// Bands [b0, b1): returns the amax pattern (fp32 bits for fp32; the 16-bit pattern otherwise).
std::uint32_t run_bands(const Job& job, const Bands& bands, std::size_t b0, std::size_t b1) {
  // the chunk buffer (up to 256 x 4160 bytes: L2 and L3) and the tile buffer (16 KiB, L1)
  const std::size_t buf_bytes = std::min(kBandRows, job.rows) * job.stride;
  constexpr std::size_t kTileBytes = kTransposeTile * kTileColumnRows;
  std::uint8_t* const buf = workspace(buf_bytes + kTileBytes);
  std::uint8_t* const tb = buf + buf_bytes;

  std::uint32_t amax = 0;
  bool reverse = false;
  for (std::size_t b = b0; b < b1; ++b) {
    const std::size_t r0 = bands.start(b), r1 = bands.start(b + 1);
    bool nan = false;
    for (std::size_t c0 = 0; c0 < job.cols; c0 += kChunkCols) {
      const Chunk chunk{r0, r1 - r0, c0, std::min(kChunkCols, job.cols - c0), buf};
      for (std::size_t r = 0; r < chunk.h; ++r) {
        const std::size_t i0 = (r0 + r) * job.cols + c0;
        const std::byte* src = job.in + i0 * job.ib;
        std::uint8_t* row = buf + r * job.stride;
        for (std::size_t p0 = 0; p0 < chunk.w; p0 += kPieceCols) {
          const std::size_t pw = std::min(kPieceCols, chunk.w - p0);
          const std::byte* piece = src + p0 * job.ib;
          if (job.fn != nullptr) {
            nan = job.fn(piece, row + p0, pw, i0 + p0, *job.params) || nan;
          } else {
            for (std::size_t j = p0; j < p0 + pw; ++j) {
              const Converted cv =
                  convert_one(load_code(src + j * job.ib, job.ib), *job.from, *job.to, *job.options, i0 + j);
              row[j] = static_cast<std::uint8_t>(cv.code);
              nan = nan || cv.nan_unrepresentable;
            }
          }
          // the piece's input is still in L1
          amax = std::max(amax, job.ib == 4 ? job.m->bits32(piece, pw) : std::uint32_t{job.m->bits16(piece, pw)});
          job.k->copy(job.q + i0 + p0, row + p0, pw, job.stream);
        }
      }
      transpose_chunk(job, chunk, tb, reverse);
      reverse = !reverse;
    }
    // a NaN the target cannot hold: name the first one of the band in index order (the chunks
    // of a band are not in index order)
    if (nan && job.options->nan == NanPolicy::kError) throw_first_nan(job, r0, r1);
  }
  fence_streams();
  return amax;
}

}  // namespace

float cast_transpose(std::span<const std::byte> in, const Format& from, std::size_t rows, std::size_t cols,
                     std::span<std::uint8_t> q, std::span<std::uint8_t> qt, const Format& to,
                     const ConvertOptions& options, const BulkOptions& bulk) {
  if (!(from == kF32 || from == kBF16 || from == kF16))
    throw std::invalid_argument("cast_transpose takes f32, bf16 or f16, not " + std::string(from.name));
  if (to.bits() > 8) throw std::invalid_argument("target " + std::string(to.name) + " is wider than one byte");
  const std::size_t ib = static_cast<std::size_t>(from.storage_bytes());
  const std::size_t n = detail::matrix_elements(rows, cols, ib, "cast_transpose");
  if (in.size() != n * ib || q.size() != n || qt.size() != n)
    throw std::invalid_argument("cast_transpose: a " + std::to_string(rows) + " x " + std::to_string(cols) +
                                " matrix needs " + std::to_string(n * ib) + " input bytes and " + std::to_string(n) +
                                " codes in each output; got " + std::to_string(in.size()) + ", " +
                                std::to_string(q.size()) + " and " + std::to_string(qt.size()));
  if (bulk.threads < 1) throw std::invalid_argument("threads must be >= 1, got " + std::to_string(bulk.threads));
  const Isa isa = resolve_isa(bulk.isa, "BulkOptions::isa");
  if (n == 0) return 0.0f;
  const detail::NarrowFn fn = detail::narrow_supported(from, to)
                                  ? detail::narrow_kernel(isa, detail::source_of(from), options.rounding)
                                  : nullptr;
  const detail::NarrowParams params = detail::make_narrow_params(from, to, options);
  const Job job{in.data(), rows, cols, ib, q.data(), qt.data(), &from, &to, &options, fn, &params,
                &kernels_for(isa), &detail::max_abs_kernels(isa), n >= kStreamingMin,
                (std::min(cols, kChunkCols) + 63) / 64 * 64 + 64};
  const Bands bands = make_bands(rows, qt.data());

  std::atomic<std::uint32_t> amax{0};
  detail::parallel_pinned(
      bands.count(), bulk.threads,
      [&](std::size_t b0, std::size_t b1) {
        std::uint32_t local = 0;
        try {
          local = run_bands(job, bands, b0, b1);
        } catch (...) {
          fence_streams();  // what was streamed before the error is in place like the rest
          throw;
        }
        detail::merge_max(amax, local);
      },
      ChunkGrain{1, std::max<std::size_t>(1, 16384 / std::max<std::size_t>(1, kBandRows * cols))});
  return detail::amax_value(amax.load(), from);
}

}  // namespace fp8q
