// quantize() / dequantize(): block amaxes, scales by the rule, then the bulk block-scaled
// conversion of numerics (the same bits as convert_one() with each block's scale).
#include "fp8q/quant/quantized_tensor.hpp"

#include <algorithm>
#include <array>
#include <cfloat>
#include <cstring>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <string>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "fp8q/numerics/arith.hpp"
#include "fp8q/numerics/block_scaled.hpp"
#include "fp8q/numerics/convert.hpp"
#include "fp8q/numerics/fp_env.hpp"
#include "fp8q/numerics/parallel.hpp"
#include "fp8q/quant/amax.hpp"

namespace fp8q {
namespace {

bool is_source(const Format& f) { return f == kF32 || f == kBF16 || f == kF16; }

void check_element(const Format& e) {
  if (e.bits() > 8 || !e.is_signed || !e.has_zero())
    throw std::invalid_argument("element format " + std::string(e.name) +
                                " cannot hold quantized data (a signed format of at most 8 bits with a zero)");
}

// e2m1 packs two codes per byte along the last axis: the last dimension must be even.
template <class Q>
void check_packed_shape(const Q& q, const MatrixShape& m) {
  if (q.packed() && (q.shape.empty() || m.cols % 2 != 0))
    throw std::invalid_argument("e2m1 packs two codes per byte along the last axis, so the last dimension must be "
                                "even; it is " +
                                (q.shape.empty() ? std::string("absent (0-D tensor)") : std::to_string(m.cols)));
}

bool is_nvfp4(const Granularity& g) { return g.kind == GranularityKind::kNvfp4; }

void check_nvfp4_options(const QuantizeOptions& o) {
  const std::string g = granularity_name(o.granularity);
  if (o.granularity == Granularity::nvfp4_column())
    throw std::invalid_argument("quantize: NVFP4 blocks of 16 run along the last axis (granularity nvfp4 or "
                                "nvfp4_16x16, not " + g + "); quantize the transpose");
  if (o.element != FormatId::kE2M1)
    throw std::invalid_argument("quantize: granularity " + g + " scales e2m1 elements, not " +
                                std::string(format_of(o.element).name));
  if (o.apply != ScaleOp::kMultiply)
    throw std::invalid_argument("quantize: granularity " + g + " multiplies by each block's encode scale; "
                                "scale_op divide applies to tensor, row, col and block<R>x<C>");
  if (o.amax.margin != 0 || (bits_of(o.amax.amax_epsilon) & 0x7FFFFFFFu) != 0 || o.amax.power_of_two)
    throw std::invalid_argument("quantize: granularity " + g + " takes no margin, amax_epsilon or power_of_two "
                                "(its scales are NVFP4's)");
}

}  // namespace

void pack_fp4(std::span<const std::uint8_t> codes, std::span<std::uint8_t> packed) {
  if (codes.size() % 2 != 0 || packed.size() != codes.size() / 2)
    throw std::invalid_argument("fp4 packing needs an even number of codes and half as many bytes");
  std::size_t i = 0;
#if defined(__SSE2__)
  // 16-bit lanes w = c0 | c1 << 8 give the byte (w & 0x0F) | ((w >> 4) & 0xF0), then narrowed
  const __m128i lo = _mm_set1_epi16(0x000F), hi = _mm_set1_epi16(0x00F0);
  auto pack8 = [&](const std::uint8_t* p) {
    const __m128i w = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return _mm_or_si128(_mm_and_si128(w, lo), _mm_and_si128(_mm_srli_epi16(w, 4), hi));
  };
  for (; i + 16 <= packed.size(); i += 16)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(packed.data() + i),
                     _mm_packus_epi16(pack8(codes.data() + 2 * i), pack8(codes.data() + 2 * i + 16)));
#endif
  for (; i < packed.size(); ++i)
    packed[i] = static_cast<std::uint8_t>((codes[2 * i] & 0xF) | (codes[2 * i + 1] << 4));
}

void unpack_fp4(std::span<const std::uint8_t> packed, std::span<std::uint8_t> codes) {
  if (codes.size() != packed.size() * 2) throw std::invalid_argument("fp4 unpacking gives two codes per byte");
  for (std::size_t i = 0; i < packed.size(); ++i) {
    codes[2 * i] = packed[i] & 0xF;
    codes[2 * i + 1] = packed[i] >> 4;
  }
}

namespace {

// The layout quantize() gives `shape` (no codes or scales yet), after checking the arguments.
// A producer's FP8 quantizer (quant/producer.hpp) has one form: e4m3fn, scale_inv divided, no
// margin, epsilon or power of two, nearest-even (the options' defaults otherwise); per tensor,
// row or block for compressed-tensors, per tensor, row or 128x128 block for ModelOpt; its NVFP4
// quantizer blocks of 1 x 16, nearest-even and saturating.
void check_producer_options(const QuantizeOptions& o) {
  const GranularityKind k = o.granularity.kind;
  const std::string like = "like " + std::string(producer_name(o.like)) + ": ";
  if (k == GranularityKind::kNvfp4) {  // check_nvfp4_options ran
    if (o.granularity != Granularity::nvfp4())
      throw std::invalid_argument(like + "its NVFP4 weights have blocks of 1 x 16 (granularity nvfp4), not " +
                                  granularity_name(o.granularity));
    if (o.convert.rounding != Rounding::kNearestEven || o.convert.overflow != Overflow::kSaturate)
      throw std::invalid_argument(like + "its NVFP4 quantizer rounds to nearest-even and saturates");
    return;
  }
  const bool ct = o.like == Producer::kCompressedTensors;
  const bool block = ct ? k == GranularityKind::kBlock : o.granularity == Granularity::block(128, 128);
  if (o.element != FormatId::kE4M3FN || (k != GranularityKind::kTensor && o.granularity != Granularity::row() && !block))
    throw std::invalid_argument(like + "its FP8 quantizer writes e4m3fn per tensor, row or " +
                                (ct ? "block" : "128x128 block") + ", not " + std::string(format_of(o.element).name) +
                                " per " + granularity_name(o.granularity) +
                                (ct && k == GranularityKind::kMx ? " (its MX scales are mx_rule compressed-tensors)" : ""));
  if (o.apply != ScaleOp::kDivide || o.amax.margin != 0 || bits_of(o.amax.amax_epsilon) != 0 || o.amax.power_of_two ||
      o.convert.rounding != Rounding::kNearestEven || o.convert.overflow != Overflow::kSaturate)
    throw std::invalid_argument(like + "its quantizer divides by scale_inv with no margin, epsilon or power of two, "
                                "rounding to nearest-even" + (ct ? " and saturating" : " (the overflow option left at its default)"));
}

QuantizedTensor layout_of(std::span<const std::byte> data, const Format& from, std::span<const std::uint64_t> shape,
                          const QuantizeOptions& o) {
  if (!is_source(from))
    throw std::invalid_argument("quantize takes f32, bf16 or f16 input, not " + std::string(from.name));
  check_element(format_of(o.element));
  if (o.convert.scale) throw std::invalid_argument("convert.scale must be unset: quantize chooses the scales");
  if (o.granularity.kind == GranularityKind::kMx && o.granularity != Granularity::mx())
    throw std::invalid_argument("quantize: MX blocks run along the last axis (granularity mx, not " +
                                granularity_name(o.granularity) + "); quantize the transpose");
  if (o.granularity.kind == GranularityKind::kNvfp4) check_nvfp4_options(o);
  if (o.like != Producer::kFp8q) check_producer_options(o);
  if (o.global_scale && o.granularity.kind != GranularityKind::kNvfp4)
    throw std::invalid_argument("quantize: global_scale applies to NVFP4 (granularity nvfp4 or nvfp4_16x16), not " +
                                granularity_name(o.granularity));
  if (o.global_scale && !is_finite_positive(*o.global_scale))
    throw std::invalid_argument("quantize: global_scale is " + float_text(*o.global_scale) +
                                "; it must be finite and positive");
  QuantizedTensor q;
  q.element = o.element;
  q.shape.assign(shape.begin(), shape.end());
  q.granularity = o.granularity;
  const MatrixShape m = matrix_shape(shape);
  q.grid = block_grid(o.granularity, m);
  const std::size_t n = m.rows * m.cols, ib = static_cast<std::size_t>(from.storage_bytes());
  if (data.size() % ib != 0 || data.size() / ib != n)  // not n * ib: that can wrap
    throw std::invalid_argument(std::to_string(data.size()) + " bytes do not hold the " + std::to_string(n) + " " +
                                std::string(from.name) + " elements of the shape");
  check_packed_shape(q, m);
  return q;
}

// NVFP4's block codes and the multipliers that encode each block, equal to nvfp4_block_scale_code
// and nvfp4_block_encode block by block: d = fp32(amax * fp32(S * fp32(1/6))) in host fp32
// arithmetic under the default FP environment (IEEE nearest-even, as mul_f32_rne), Inf as
// FLT_MAX, the codes by one bulk nearest-even saturating conversion, the encode multiplier
// from a table of the 256 codes. A NaN code (a block with a NaN) gets 1: its elements follow
// the NaN policy.
void nvfp4_block_scales(std::span<const float> amaxes, float global, std::span<std::uint8_t> codes,
                        std::span<float> applied, const BulkOptions& bulk) {
  std::vector<float> d(amaxes.size());
  {
    ScopedDefaultFpEnv env;
    const float multiplier = mul_f32_rne(global, divide_rne(1.0f, 6.0f));
    for (std::size_t b = 0; b < d.size(); ++b) d[b] = std::min(amaxes[b] * multiplier, FLT_MAX);
  }
  ConvertOptions saturate;
  saturate.overflow = Overflow::kSaturate;
  convert(std::as_bytes(std::span<const float>(d)), kF32, std::as_writable_bytes(codes), kE4M3FN, saturate, bulk);
  std::array<float, 256> encode{};
  for (std::size_t c = 0; c < 256; ++c) {
    const float e = nvfp4_block_encode(static_cast<std::uint8_t>(c), global);
    encode[c] = is_finite_positive(e) ? e : 1.0f;
  }
  for (std::size_t b = 0; b < codes.size(); ++b) applied[b] = encode[codes[b]];
}

// Whether the block scales are codes in `scales` (MX, NVFP4) rather than fp32 scale_inv.
bool coded_scales(const Granularity& g) { return g.kind == GranularityKind::kMx || is_nvfp4(g); }

std::size_t scale_inv_count(const QuantizedTensor& q) {
  if (coded_scales(q.granularity)) return 0;
  const std::size_t blocks = q.grid.grid_size();
  return blocks == 0 && q.granularity.kind == GranularityKind::kTensor ? 1 : blocks;
}

void check_span(const char* name, std::size_t got, std::size_t want) {
  if (got != want)
    throw std::invalid_argument("quantize_into: " + std::string(name) + " holds " + std::to_string(got) +
                                " entries; the shape and granularity need " + std::to_string(want));
}

// The largest of block amaxes (each >= 0 or NaN, whose patterns sort above): the tensor's.
float largest(std::span<const float> amaxes) {
  return float_of(std::accumulate(amaxes.begin(), amaxes.end(), std::uint32_t{0},
                                  [](std::uint32_t m, float a) { return std::max(m, bits_of(a)); }));
}

// The codes and scales of layout q into out (sizes checked).
void fill(std::span<const std::byte> data, const Format& from, const QuantizedTensor& q, const QuantizeOptions& o,
          const QuantizedOut& out) {
  const Format& elem = format_of(o.element);
  const std::size_t n = q.numel();
  // FP4 codes one per byte before packing: every byte is written, so none is initialized
  const auto unpacked = std::make_unique_for_overwrite<std::uint8_t[]>(q.packed() ? n : 0);
  const std::span<std::uint8_t> codes = q.packed() ? std::span<std::uint8_t>(unpacked.get(), n) : out.codes;
  if (o.like != Producer::kFp8q && is_nvfp4(o.granularity)) {
    quantize_nvfp4_like_producer(o.like, data, from, q.grid, codes, out.scales, out.global_scale[0], o.global_scale,
                                 o.bulk);
  } else if (o.granularity.kind == GranularityKind::kMx) {
    convert_mx(data, from, q.grid.rows, q.grid.cols, kMxBlock, codes, out.scales, elem,
               mx_scale_table(elem, o.mx_rule), o.convert, o.bulk);
  } else if (o.like != Producer::kFp8q) {
    const std::size_t blocks = q.grid.grid_size();
    quantize_like_producer(o.like, data, from, q.grid, o.granularity.kind == GranularityKind::kTensor, codes,
                           out.scale_inv.first(blocks), o.bulk);
    if (blocks == 0) out.scale_inv[0] = 1.0f;  // an empty per-tensor grid
  } else {
    std::vector<float> amaxes(q.grid.grid_size());
    block_amax(data, from, q.grid, amaxes, o.bulk.threads);
    std::vector<float> applied(amaxes.size());  // the number each element is multiplied or divided by
    const float global = is_nvfp4(o.granularity) ? o.global_scale.value_or(nvfp4_global_scale(largest(amaxes))) : 1.0f;
    if (is_nvfp4(o.granularity)) {
      out.global_scale[0] = global;
      nvfp4_block_scales(amaxes, global, out.scales, applied, o.bulk);
    } else {
      for (std::size_t b = 0; b < amaxes.size(); ++b) {
        if (o.apply == ScaleOp::kDivide) {
          applied[b] = out.scale_inv[b] = scale_inv_from_amax(amaxes[b], elem, o.amax);
        } else {
          applied[b] = scale_from_amax(amaxes[b], elem, o.amax);
          out.scale_inv[b] = divide_rne(1.0f, applied[b]);  // finite: scale_from_amax never goes below 2^-127
        }
      }
    }
    ConvertOptions c = o.convert;
    c.scale_op = o.apply;
    convert_block_scaled(data, from, codes, elem, q.grid, applied, c, o.bulk);
    if (amaxes.empty() && out.scale_inv.size() == 1) out.scale_inv[0] = 1.0f;  // an empty per-tensor grid
  }
  if (q.packed()) pack_fp4(codes, out.codes);
}

}  // namespace

QuantizedTensor quantize(std::span<const std::byte> data, const Format& from, std::span<const std::uint64_t> shape,
                         const QuantizeOptions& o) {
  QuantizedTensor q = layout_of(data, from, shape, o);
  q.codes.resize(q.packed() ? q.numel() / 2 : q.numel());
  if (coded_scales(o.granularity)) q.scales.resize(q.grid.grid_size());
  q.scale_inv.resize(scale_inv_count(q));
  fill(data, from, q, o, {q.codes, q.scales, q.scale_inv, {&q.global_scale, is_nvfp4(o.granularity) ? 1u : 0u}});
  if ((o.like == Producer::kModelOpt || o.like == Producer::kModelOptCuda) && is_nvfp4(o.granularity))
    q.global_op = ScaleOp::kMultiply;
  return q;
}

float nvfp4_global_scale_of(std::span<const std::byte> data, const Format& from, std::span<const std::uint64_t> shape,
                            const QuantizeOptions& o) {
  const QuantizedTensor q = layout_of(data, from, shape, o);
  if (!is_nvfp4(o.granularity))
    throw std::invalid_argument("nvfp4_global_scale_of: granularity " + granularity_name(o.granularity) +
                                " has no global scale");
  if (o.global_scale) return *o.global_scale;
  // the tensor's amax, as the largest of its rows' (the same bits as of its NVFP4 blocks')
  const BlockGrid rows = block_grid(Granularity::row(), matrix_shape(shape));
  std::vector<float> amaxes(rows.grid_size());
  block_amax(data, from, rows, amaxes, o.bulk.threads);
  return o.like == Producer::kFp8q ? nvfp4_global_scale(largest(amaxes))
                                   : nvfp4_global_like_producer(o.like, largest(amaxes), from);
}

void quantize_into(std::span<const std::byte> data, const Format& from, std::span<const std::uint64_t> shape,
                   const QuantizeOptions& o, const QuantizedOut& out) {
  const QuantizedTensor q = layout_of(data, from, shape, o);
  check_span("codes", out.codes.size(), q.packed() ? q.numel() / 2 : q.numel());
  check_span("scales", out.scales.size(), coded_scales(o.granularity) ? q.grid.grid_size() : 0);
  check_span("scale_inv", out.scale_inv.size(), scale_inv_count(q));
  check_span("global_scale", out.global_scale.size(), is_nvfp4(o.granularity) ? 1 : 0);
  fill(data, from, q, o, out);
}

void dequantize(const QuantizedTensor& q, std::span<std::byte> out, const Format& to, int threads) {
  dequantize(q.ref(), out, to, threads);
}

void dequantize(const QuantizedRef& q, std::span<std::byte> out, const Format& to, int threads) {
  if (!is_source(to)) throw std::invalid_argument("dequantize writes f32, bf16 or f16, not " + std::string(to.name));
  if (threads < 1) throw std::invalid_argument("threads must be >= 1, got " + std::to_string(threads));
  const Format& elem = format_of(q.element);
  check_element(elem);
  // the grid must be the one quantize() builds for the shape and granularity: its blocks index
  // the scales below (a block of 0 rows or columns would divide by zero)
  const MatrixShape m = matrix_shape(q.shape);
  const BlockGrid want = block_grid(q.granularity, m);
  if (q.grid.rows != want.rows || q.grid.cols != want.cols || q.grid.block_rows != want.block_rows ||
      q.grid.block_cols != want.block_cols)
    throw std::invalid_argument("dequantize: the grid (" + std::to_string(q.grid.rows) + " x " +
                                std::to_string(q.grid.cols) + " in blocks of " + std::to_string(q.grid.block_rows) +
                                " x " + std::to_string(q.grid.block_cols) + ") is not the " +
                                granularity_name(q.granularity) + " grid of the shape (" + std::to_string(want.rows) +
                                " x " + std::to_string(want.cols) + " in blocks of " + std::to_string(want.block_rows) +
                                " x " + std::to_string(want.block_cols) + ")");
  check_packed_shape(q, m);
  const std::size_t n = q.numel(), ob = static_cast<std::size_t>(to.storage_bytes());
  if (out.size() % ob != 0 || out.size() / ob != n)
    throw std::invalid_argument("dequantize: output of " + std::to_string(out.size()) + " bytes for " +
                                std::to_string(n) + " " + std::string(to.name) + " elements");
  const bool mx = q.granularity.kind == GranularityKind::kMx, nvfp4 = is_nvfp4(q.granularity);
  if (nvfp4 && q.element != FormatId::kE2M1)
    throw std::invalid_argument("dequantize: granularity " + granularity_name(q.granularity) +
                                " scales e2m1 elements, not " + std::string(elem.name));
  if (nvfp4 && !is_finite_positive(q.global_scale))
    throw std::invalid_argument("dequantize: global_scale = " + float_text(q.global_scale) +
                                " is not a finite positive scale");
  if (q.codes.size() != (q.packed() ? n / 2 : n))
    throw std::invalid_argument("dequantize: " + std::to_string(q.codes.size()) + " code bytes for " +
                                std::to_string(n) + " elements");
  // one scale per block (and the lone 1 of an empty per-tensor grid)
  const bool coded = coded_scales(q.granularity);
  const std::size_t blocks = q.grid.grid_size(), held = coded ? q.scales.size() : q.scale_inv.size();
  const bool lone = !coded && q.granularity.kind == GranularityKind::kTensor && blocks == 0 && held == 1;
  if (held != blocks && !lone)
    throw std::invalid_argument("dequantize: " + std::to_string(held) +
                                (mx ? " E8M0 scales" : nvfp4 ? " E4M3FN scales" : " scale_inv values") + " for " +
                                std::to_string(blocks) + " blocks");
  // NVFP4 block scales are >= 0 (a NaN code stands for a block with a NaN)
  if (nvfp4)
    for (std::size_t b = 0; b < q.scales.size(); ++b)
      if ((q.scales[b] & 0x80) != 0 && (q.scales[b] & 0x7F) != 0x7F)
        throw std::invalid_argument("dequantize: scales[" + std::to_string(b) + "] = " +
                                    std::to_string(q.scales[b]) + " is a negative E4M3FN scale");
  // what quantize() stores: finite multipliers > 0 (checked on the bits: a caller's DAZ must
  // not decide it)
  for (std::size_t b = 0; b < q.scale_inv.size(); ++b)
    if (!is_finite_positive(q.scale_inv[b]))
      throw std::invalid_argument("dequantize: scale_inv[" + std::to_string(b) + "] = " + float_text(q.scale_inv[b]) +
                                  " is not a finite positive multiplier");
  std::vector<std::uint8_t> unpacked;
  std::span<const std::uint8_t> codes = q.codes;
  if (q.packed()) {
    unpacked.resize(n);
    unpack_fp4(q.codes, unpacked);
    codes = unpacked;
  }
  // a byte with bits above a 6-bit format's code is not a code of it (e2m1's nibbles always are)
  if (elem.bits() < 8)
    for (std::size_t i = 0; i < codes.size(); ++i)
      if (codes[i] >> elem.bits() != 0)
        throw std::invalid_argument("dequantize: element " + std::to_string(i) + ": byte " +
                                    std::to_string(codes[i]) + " is not a " + std::string(elem.name) + " code (" +
                                    std::to_string(elem.bits()) + "-bit codes, high bits must be 0)");
  std::array<float, 256> value{};  // decode is exact (Inf kept)
  for (std::uint32_t c = 0; c < (1u << elem.bits()); ++c) value[c] = decode_f32(c, elem);
  std::array<float, 256> pow2{};  // E8M0 code -> 2^(code - 127); 0xFF is NaN
  for (int c = 0; c < 255; ++c) pow2[static_cast<std::size_t>(c)] = exp2i(c - 127);
  pow2[255] = float_of(0x7FC00000u);
  std::array<float, 256> nvfp4_decode{};  // E4M3FN code -> the block's d
  if (nvfp4)
    for (std::size_t c = 0; c < 256; ++c)
      nvfp4_decode[c] = q.global_op == ScaleOp::kDivide
                            ? nvfp4_block_decode(static_cast<std::uint8_t>(c), q.global_scale)
                            : mul_f32_rne(decode_f32(c, kE4M3FN), q.global_scale);  // NaN codes stay NaN

  const std::size_t cols = q.grid.cols, gc = q.grid.grid_cols();
  parallel_chunks(
      q.grid.rows, threads,
      [&](std::size_t r0, std::size_t r1) {
        ScopedDefaultFpEnv env;  // fp32(v * s) below is the IEEE product, whatever the caller set
        std::vector<float> row(cols);
        for (std::size_t r = r0; r < r1; ++r) {
          const std::size_t base = (r / q.grid.block_rows) * gc;
          const std::uint8_t* in = codes.data() + r * cols;
          for (std::size_t c0 = 0, b = base; c0 < cols; c0 += q.grid.block_cols, ++b) {
            const float s = mx ? pow2[q.scales[b]] : nvfp4 ? nvfp4_decode[q.scales[b]] : q.scale_inv[b];
            const std::size_t c1 = std::min(cols, c0 + q.grid.block_cols);
            for (std::size_t c = c0; c < c1; ++c) row[c] = value[in[c]] * s;
          }
          auto dst = out.subspan(r * cols * ob, cols * ob);
          if (to == kF32) {
            std::memcpy(dst.data(), row.data(), cols * 4);
          } else {
            ConvertOptions ieee;
            ieee.overflow = Overflow::kInfOrNan;
            convert(std::as_bytes(std::span<const float>(row)), kF32, dst, to, ieee);
          }
        }
      },
      ChunkGrain{1, std::max<std::size_t>(1, 16384 / std::max<std::size_t>(cols, 1))});
}

}  // namespace fp8q
