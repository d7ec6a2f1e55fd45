// Fused cast + transpose, by bands of kBandRows whole rows: the band's amax, then the bulk
// kernel converts it straight into q, then its codes (still in cache) are copied transposed
// into qt, 16 x 16 bytes at a time with SSE2 unpacks (the x86-64 baseline: no ISA dispatch
// needed). Codes are computed once, so q and qt agree
// by construction, and they equal convert()'s.
#include "fp8q/numerics/cast_transpose.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "fp8q/numerics/convert.hpp"
#include "dispatch.hpp"

namespace fp8q {
namespace {

using detail::load_code;
// Rows per band: a band's codes (kBandRows x cols bytes) stay in cache between the cast and the
// transpose, and each row of qt receives kBandRows contiguous bytes per band.
constexpr std::size_t kBandRows = 256;

// Largest magnitude of n source elements as fp32 bits; 16-bit formats compare their own
// patterns (magnitude order is pattern order, NaN patterns above Inf) and widen once. With the
// sign bit cleared every pattern is a non-negative signed integer, so SSE2's signed 16-bit max
// (and, for fp32, a signed compare) orders them.
std::uint32_t amax_bits(const std::byte* p, std::size_t n, const Format& from) {
  std::size_t i = 0;
  if (from == kF32) {
    std::uint32_t m = 0;
#if defined(__SSE2__)
    const __m128i mask = _mm_set1_epi32(0x7FFFFFFF);
    __m128i vm = _mm_setzero_si128();
    for (; i + 4 <= n; i += 4) {
      const __m128i v = _mm_and_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 4 * i)), mask);
      const __m128i gt = _mm_cmpgt_epi32(v, vm);
      vm = _mm_or_si128(_mm_and_si128(gt, v), _mm_andnot_si128(gt, vm));
    }
    alignas(16) std::uint32_t lanes[4];
    _mm_store_si128(reinterpret_cast<__m128i*>(lanes), vm);
    for (std::uint32_t l : lanes) m = std::max(m, l);
#endif
    for (; i < n; ++i) {
      std::uint32_t v;
      std::memcpy(&v, p + 4 * i, 4);
      m = std::max(m, v & 0x7FFFFFFFu);
    }
    return m;
  }
  std::uint16_t m = 0;
#if defined(__SSE2__)
  const __m128i mask = _mm_set1_epi16(0x7FFF);
  __m128i vm = _mm_setzero_si128();
  for (; i + 8 <= n; i += 8)
    vm = _mm_max_epi16(vm, _mm_and_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2 * i)), mask));
  alignas(16) std::uint16_t lanes[8];
  _mm_store_si128(reinterpret_cast<__m128i*>(lanes), vm);
  for (std::uint16_t l : lanes) m = std::max(m, l);
#endif
  for (; i < n; ++i) {
    std::uint16_t v;
    std::memcpy(&v, p + 2 * i, 2);
    m = std::max<std::uint16_t>(m, static_cast<std::uint16_t>(v & 0x7FFF));
  }
  if (from == kBF16) return std::uint32_t{m} << 16;
  return bits_of(decode_f32(m, kF16));  // exact, Inf kept
}

#if defined(__SSE2__)
// One 16 x 16 block: dst[c * dst_stride + r] = src[r * src_stride + c], r, c < 16.
inline void transpose16(const std::uint8_t* src, std::size_t src_stride, std::uint8_t* dst, std::size_t dst_stride) {
  __m128i x[16], y[16];
  for (std::size_t i = 0; i < 16; ++i) x[i] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i * src_stride));
  // four rounds of interleaving (8, 16, 32, 64 bits): after round 1 a 16-bit lane j of y[i]
  // holds rows 2i..2i+1 of column j, after round 2 a 32-bit lane rows 4i..4i+3, after round 3
  // a 64-bit lane rows 0-7 or 8-15, and round 4 joins the halves: x[k] is column k
  for (int i = 0; i < 8; ++i) {
    y[i] = _mm_unpacklo_epi8(x[2 * i], x[2 * i + 1]);
    y[i + 8] = _mm_unpackhi_epi8(x[2 * i], x[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i) {
    x[i] = _mm_unpacklo_epi16(y[2 * i], y[2 * i + 1]);
    x[i + 4] = _mm_unpackhi_epi16(y[2 * i], y[2 * i + 1]);
    x[i + 8] = _mm_unpacklo_epi16(y[8 + 2 * i], y[8 + 2 * i + 1]);
    x[i + 12] = _mm_unpackhi_epi16(y[8 + 2 * i], y[8 + 2 * i + 1]);
  }
  for (int g = 0; g < 4; ++g)
    for (int i = 0; i < 2; ++i) {
      y[4 * g + i] = _mm_unpacklo_epi32(x[4 * g + 2 * i], x[4 * g + 2 * i + 1]);
      y[4 * g + i + 2] = _mm_unpackhi_epi32(x[4 * g + 2 * i], x[4 * g + 2 * i + 1]);
    }
  for (int g = 0; g < 8; ++g) {
    x[2 * g] = _mm_unpacklo_epi64(y[2 * g], y[2 * g + 1]);
    x[2 * g + 1] = _mm_unpackhi_epi64(y[2 * g], y[2 * g + 1]);
  }
  for (std::size_t k = 0; k < 16; ++k) _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + k * dst_stride), x[k]);
}
#endif

// dst[c * dst_stride + r] = src[r * src_stride + c] for r < nr, c < nc. Full 64 x 64 tiles go
// through two L1 buffers: the tile's rows gathered (each source line read once), sixteen
// 16 x 16 transposes, then 64 bytes to each of 64 dst rows. Tiles run down the rows first, so
// each dst row receives its nr bytes in a row and its page is visited once per band (bands of
// 256 rows transpose ~1.7x faster than bands of 64 here; non-temporal stores were slower).
// The edges go byte by byte.
void transpose_bytes(const std::uint8_t* src, std::size_t src_stride, std::uint8_t* dst, std::size_t dst_stride,
                     std::size_t nr, std::size_t nc) {
  std::size_t r_done = 0, c_done = 0;
#if defined(__SSE2__)
  constexpr std::size_t kT = 64;
  if (nr >= kT) {
    const std::size_t nr_t = nr / kT * kT, nc_t = nc / kT * kT;
    alignas(64) std::uint8_t rows_in[kT * kT];
    alignas(64) std::uint8_t tile[kT * kT];
    for (std::size_t c0 = 0; c0 < nc_t; c0 += kT)
      for (std::size_t r0 = 0; r0 < nr_t; r0 += kT) {
        // gather the tile's rows first: each source line is read once (rows a power-of-two
        // apart all map to one L1 set, so reading them column block by column block would
        // evict them between uses)
        for (std::size_t i = 0; i < kT; ++i) std::memcpy(rows_in + i * kT, src + (r0 + i) * src_stride + c0, kT);
        for (std::size_t i = 0; i < kT; i += 16)
          for (std::size_t j = 0; j < kT; j += 16) transpose16(rows_in + i * kT + j, kT, tile + j * kT + i, kT);
        for (std::size_t c = 0; c < kT; ++c)
          std::memcpy(dst + (c0 + c) * dst_stride + r0, tile + c * kT, kT);
      }
    r_done = nr_t;
    c_done = nc_t;
  }
#endif
  // the right edge of the tiled rows, then every column of the remaining rows
  for (std::size_t c = c_done; c < nc; ++c)
    for (std::size_t r = 0; r < r_done; ++r) dst[c * dst_stride + r] = src[r * src_stride + c];
  for (std::size_t c = 0; c < nc; ++c)
    for (std::size_t r = r_done; r < nr; ++r) dst[c * dst_stride + r] = src[r * src_stride + c];
}

}  // namespace

float cast_transpose(std::span<const std::byte> in, const Format& from, std::size_t rows, std::size_t cols,
                     std::span<std::uint8_t> q, std::span<std::uint8_t> qt, const Format& to,
                     const ConvertOptions& options, const BulkOptions& bulk) {
  if (!(from == kF32 || from == kBF16 || from == kF16))
    throw std::invalid_argument("cast_transpose takes f32, bf16 or f16, not " + std::string(from.name));
  if (to.bits() > 8) throw std::invalid_argument("target " + std::string(to.name) + " is wider than one byte");
  const std::size_t n = rows * cols, ib = static_cast<std::size_t>(from.storage_bytes());
  if (in.size() != n * ib || q.size() != n || qt.size() != n)
    throw std::invalid_argument("cast_transpose: a " + std::to_string(rows) + " x " + std::to_string(cols) +
                                " matrix needs " + std::to_string(n * ib) + " input bytes and " + std::to_string(n) +
                                " codes in each output; got " + std::to_string(in.size()) + ", " +
                                std::to_string(q.size()) + " and " + std::to_string(qt.size()));
  if (bulk.threads < 1) throw std::invalid_argument("threads must be >= 1, got " + std::to_string(bulk.threads));
  const Isa isa = bulk.isa.value_or(active_isa());
  if (!isa_supported(isa))
    throw std::invalid_argument("instruction set " + std::string(isa_name(isa)) + " is not available here");
  const detail::NarrowFn fn = detail::narrow_supported(from, to)
                                  ? detail::narrow_kernel(isa, detail::source_of(from), options.rounding)
                                  : nullptr;
  const detail::NarrowParams params = detail::make_narrow_params(from, to, options);

  std::atomic<std::uint32_t> amax{0};
  const std::size_t bands = (rows + kBandRows - 1) / kBandRows;
  detail::parallel_pinned(
      bands, bulk.threads,
      [&](std::size_t t0, std::size_t t1) {
        std::uint32_t local = 0;
        for (std::size_t t = t0; t < t1; ++t) {
          // a band of whole rows is contiguous in the input and in q: one sequential stream
          const std::size_t r0 = t * kBandRows, r1 = std::min(rows, r0 + kBandRows);
          const std::size_t i0 = r0 * cols, w = (r1 - r0) * cols;
          const std::byte* src = in.data() + i0 * ib;
          local = std::max(local, amax_bits(src, w, from));
          bool nan = false;
          if (fn != nullptr) {
            nan = fn(src, q.data() + i0, w, i0, params);
          } else {
            for (std::size_t i = 0; i < w; ++i) {
              const Converted c = convert_one(load_code(src + i * ib, ib), from, to, options, i0 + i);
              q[i0 + i] = static_cast<std::uint8_t>(c.code);
              nan = nan || c.nan_unrepresentable;
            }
          }
          if (nan && options.nan == NanPolicy::kError)
            for (std::size_t i = 0; i < w; ++i)
              if (convert_one(load_code(src + i * ib, ib), from, to, options, i0 + i).nan_unrepresentable)
                throw NanError(i0 + i, "element " + std::to_string(i0 + i) + ": NaN has no encoding in " +
                                           std::string(to.name) + " (NaN policy: error)");
          // the band's codes (kBandRows x cols bytes, still in cache) into kBandRows columns of qt
          transpose_bytes(q.data() + i0, cols, qt.data() + r0, rows, r1 - r0, cols);
        }
        std::uint32_t seen = amax.load();
        while (local > seen && !amax.compare_exchange_weak(seen, local)) {
        }
      },
      ChunkGrain{1, std::max<std::size_t>(1, 16384 / std::max<std::size_t>(1, kBandRows * cols))});
  return float_of(amax.load());
}

}  // namespace fp8q
