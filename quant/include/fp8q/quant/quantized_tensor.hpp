// fp8q/quant/quantized_tensor.hpp: a tensor as element codes plus the scales of its blocks.
//
// Formulas (docs/numerics.md section 5, docs/tensors.md): per block, amax = the largest |x|
// (NaN if any element is NaN); then
//   multiply: scale = scale_from_amax(amax), q = convert(fp32(x * scale)), scale_inv = fp32(1 / scale)
//   divide:   scale_inv = scale_inv_from_amax(amax), q = convert(fp32(x / scale_inv))
//   MX:       e8m0 = mx_scale_code(amax, rule), q = convert(x * 2^-e) (0xFF: NaN or 0 elements)
//   NVFP4:    S = nvfp4_global_scale(tensor amax), e4m3fn code = nvfp4_block_scale_code(amax, S),
//             q = convert(fp32(x * nvfp4_block_encode(code, S))), d = nvfp4_block_decode(code, S)
//             (ModelOpt's preset, quant/producer.hpp: a multiplier S2, d = fp32(decode(code) * S2))
// and dequantization is fp32(decode(q) * scale_inv), fp32(decode(q) * 2^e) or fp32(decode(q) * d),
// one rounding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "fp8q/numerics/bulk.hpp"
#include "fp8q/numerics/format.hpp"
#include "fp8q/numerics/policy.hpp"
#include "fp8q/quant/granularity.hpp"
#include "fp8q/quant/producer.hpp"
#include "fp8q/quant/scale_rules.hpp"

namespace fp8q {

// A quantized tensor whose codes and scales live in the caller's storage (fields as in
// QuantizedTensor below): what dequantize() reads, without a copy.
struct QuantizedRef {
  FormatId element = FormatId::kE4M3FN;
  std::span<const std::uint64_t> shape;
  Granularity granularity;
  BlockGrid grid;
  std::span<const std::uint8_t> codes;
  std::span<const float> scale_inv;
  std::span<const std::uint8_t> scales;
  float global_scale = 1.0f;  // NVFP4's S
  // How S enters a block's multiplier d: kDivide, d = fp32(decode(code) / S) (Transformer
  // Engine, compressed-tensors); kMultiply, d = fp32(decode(code) * S) (ModelOpt's weight_scale_2)
  ScaleOp global_op = ScaleOp::kDivide;

  bool packed() const { return element == FormatId::kE2M1; }
  std::size_t numel() const { return grid.rows * grid.cols; }
};

struct QuantizedTensor {
  FormatId element = FormatId::kE4M3FN;
  std::vector<std::uint64_t> shape;  // of the original tensor
  Granularity granularity;
  BlockGrid grid;                    // the matrix view and its blocks
  // One code per element, row-major; e2m1 packs two per byte along the last axis
  // (float4_e2m1fn_x2: element 2i in bits 0-3, 2i+1 in bits 4-7).
  std::vector<std::uint8_t> codes;
  std::vector<float> scale_inv;      // not MX: one per block, row-major over the grid ([1] for kTensor)
  std::vector<std::uint8_t> scales;  // MX: E8M0 codes, [R, ceil(C / 32)]; NVFP4: E4M3FN codes, one per block
  float global_scale = 1.0f;         // NVFP4: the tensor's encode scale S (compressed-tensors' global_scale)
  ScaleOp global_op = ScaleOp::kDivide;  // as QuantizedRef's: kMultiply for like ModelOpt

  bool packed() const { return element == FormatId::kE2M1; }
  std::size_t numel() const { return grid.rows * grid.cols; }
  QuantizedRef ref() const {
    return {element, shape, granularity, grid, codes, scale_inv, scales, global_scale, global_op};
  }
};

struct QuantizeOptions {
  FormatId element = FormatId::kE4M3FN;
  Granularity granularity;
  ScaleOp apply = ScaleOp::kMultiply;   // not MX
  AmaxScaleOptions amax;                // not MX or NVFP4: margin, epsilon, power of two
  MxScaleRule mx_rule = MxScaleRule::kFloor;
  ConvertOptions convert;               // rounding, overflow, NaN policy, seed, offset (scale: unset)
  BulkOptions bulk;                     // threads, ISA
  Producer like = Producer::kFp8q;      // a producer's preset (quant/producer.hpp): e4m3fn, tensor,
                                        // row or block granularity, ScaleOp::kDivide, the default
                                        // amax and conversion options; or ModelOpt's NVFP4 (e2m1,
                                        // nvfp4, its scale_op kMultiply), whose global scale is
                                        // a multiplier (global_op kMultiply)
  std::optional<float> global_scale;    // NVFP4 only: the global scale to use in place of the
                                        // tensor's own, finite and positive; the layers a server
                                        // fuses share one (nvfp4_global_scale_of)
};

// `data` holds the tensor's elements in `from` (fp32, bf16 or fp16), row-major. Throws
// std::invalid_argument (sizes, options, an odd last dimension for e2m1) or NanError.
// NVFP4 (nvfp4, nvfp4_16x16) takes the e2m1 element, ScaleOp::kMultiply and the default
// AmaxScaleOptions; any rounding.
QuantizedTensor quantize(std::span<const std::byte> data, const Format& from, std::span<const std::uint64_t> shape,
                         const QuantizeOptions& options);

// The NVFP4 global scale quantize() gives the tensor (options.global_scale where set), with
// its argument checks. The layers a server fuses into one GEMM (q, k, v; gate, up) need one
// global scale: the smallest of theirs (the largest where it is a multiplier, like ModelOpt),
// which is the one of their concatenation and leaves no block scale out of range.
float nvfp4_global_scale_of(std::span<const std::byte> data, const Format& from, std::span<const std::uint64_t> shape,
                            const QuantizeOptions& options);

// Where quantize_into writes: the codes (one byte an element; packed e2m1 half as many) and the
// block scales, E8M0 (MX) or E4M3FN (NVFP4) `scales` and `scale_inv` otherwise, each the grid's
// size (scale_inv: [1] for an empty per-tensor grid; the other span empty), and NVFP4's global
// scale (one float; empty otherwise; a multiplier under like ModelOpt).
struct QuantizedOut {
  std::span<std::uint8_t> codes;
  std::span<std::uint8_t> scales;
  std::span<float> scale_inv;
  std::span<float> global_scale = {};
};

// quantize() into storage the caller owns, with the same bits and the same errors, plus
// std::invalid_argument naming the span whose size is not the one above; nothing is written then.
void quantize_into(std::span<const std::byte> data, const Format& from, std::span<const std::uint64_t> shape,
                   const QuantizeOptions& options, const QuantizedOut& out);

// Writes the tensor back as fp32, bf16 or fp16 (`to`): each value is fp32(decode(q) * s) for its
// block's multiplier s, then rounded to `to` nearest-even (overflow to Inf). Throws
// std::invalid_argument when the grid is not the one of the shape and granularity, the codes
// or scales do not fit it, or a byte is not a code of a 6-bit element format (naming it).
void dequantize(const QuantizedRef& q, std::span<std::byte> out, const Format& to, int threads = 1);
void dequantize(const QuantizedTensor& q, std::span<std::byte> out, const Format& to, int threads = 1);

// fp4 packing along the last axis: two codes per byte, the even element in the low nibble.
void pack_fp4(std::span<const std::uint8_t> codes, std::span<std::uint8_t> packed);
void unpack_fp4(std::span<const std::uint8_t> packed, std::span<std::uint8_t> codes);

}  // namespace fp8q
