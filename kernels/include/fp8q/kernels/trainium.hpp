// fp8q/kernels/trainium.hpp: emulation of Trainium's matmul instructions on the SBUF layouts
// quant/ produces, and a GEMM built from them (docs/numerics.md section 8, docs/matmul.md).
//
// What AWS documents (NKI `nki.isa.nc_matmul`, `nki.isa.nc_matmul_mx`, the Trainium2/3
// architecture guides): the Tensor Engine computes dst = stationary.T @ moving; the contraction
// axis K lies on the SBUF partitions (at most 128); the stationary tile's free size is at most
// 128 (M), the moving tile's at most 512 (N); results are fp32 in PSUM, and a K longer than one
// instruction is contracted by accumulating several instructions into one PSUM tile. FP8
// "double_row" performance mode packs two FP8 element pairs per PE (K up to 256). nc_matmul_mx
// takes x4 tiles (4 codes per element, K up to 512) with one E8M0 scale per 8 partitions x 4
// codes, the scales placed in the quadrant layout (quant/trainium3_layout.hpp).
//
// What AWS does not document, and fp8q assumes (each the model's parameter, docs/numerics.md):
//   nc_matmul (systolic:128; double_row systolic:256): the column accumulator t starts at +0
//     and adds each product in K order, t = fp32(t + a_k * b_k), nearest-even, the product
//     exact; in double_row mode partition p holds K = 2p and 2p + 1 (pair slot r = 0, 1), and
//     the products are added in K order (fp8q's packing choice, like the x4 packing).
//   nc_matmul_mx (trainium3_mx): per partition p, s_p = the 4 slots' products, each times
//     2^(e_stationary + e_moving) of the partition's MX group, summed exactly (A1); t = +0,
//     then t = fp32(t + s_p) for p = 0, 1, ... (A2); Trainium3MxAssumptions selects the
//     alternatives. Which K a slot holds (wrapx / 1x32) is the data's layout, not the
//     instruction's: the same instruction runs both.
//   PSUM: psum = fp32(+0 + t) when the instruction starts a tile (accumulate false: a column
//     sum t that rounded to -0 is stored as +0, as the models start PSUM at +0), otherwise
//     psum = fp32(psum + t), nearest-even.
// Subnormal operands and results are kept; special values follow IEEE (a NaN, Inf - Inf or
// Inf * 0 gives NaN, the canonical 0x7FC00000). No host floating-point operation takes part,
// so the caller's FP environment cannot change a bit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "fp8q/kernels/gemm.hpp"
#include "fp8q/numerics/accumulation.hpp"
#include "fp8q/numerics/format.hpp"
#include "fp8q/quant/trainium3_layout.hpp"

namespace fp8q::trn {

// ---- geometry (AWS-documented) -----------------------------------------------------------------
inline constexpr std::size_t kPartitions = 128;       // PE rows: K of one plain instruction
inline constexpr std::size_t kDoubleRowK = 256;       // FP8 double_row: 2 per partition
inline constexpr std::size_t kMaxStationaryFree = 128;  // M of one instruction
inline constexpr std::size_t kMaxMovingFree = 512;      // N of one instruction (one PSUM bank of fp32)

enum class PerfMode : std::uint8_t {
  kNone,       // K <= 128: one element per partition
  kDoubleRow,  // FP8 only, K <= 256: partition p holds the pair K = 2p, 2p + 1
};

// A [partitions, free] SBUF tile as nc_matmul reads it. Element (p, f), or in double_row mode
// element (p, f, r) of the pair, is at byte offset
//   ((p * partition_stride + f) * rows + r) * element_bytes,  rows = 1 (kNone) or 2 (kDoubleRow),
// element_bytes = 1 for FP8 / fp6 / fp4 codes (one per byte, low bits), 2 for kBF16 (little-endian).
struct Tile {
  FormatId format = FormatId::kE4M3FN;
  std::size_t partitions = 0;
  std::size_t free = 0;
  std::size_t partition_stride = 0;  // in elements (pairs in double_row mode), >= free
  std::span<const std::uint8_t> bytes;
};

// An x4 tile for nc_matmul_mx: element (p, f) is the x4 container at byte offset
// (p * partition_stride + f) * x4_bytes(type); slot c of it is the code at fp8 byte c / fp4
// nibble c (trn3::fp8_x4_code / fp4_x4_code). This is the image trn3::to_onchip_codes (and
// pack_x4 for fp4) produce, sliced to one K tile and <= 128 / 512 columns.
struct X4Tile {
  trn3::X4Type type = trn3::X4Type::kFloat8E4M3fnX4;
  std::size_t partitions = 0;  // <= 128
  std::size_t free = 0;
  std::size_t partition_stride = 0;  // in x4 elements, >= free
  std::span<const std::uint8_t> image;
};

// The E8M0 scales of an x4 tile: the scale of data partitions 8g .. 8g + 7, column f, is the
// byte at scale_partition(g) * partition_stride + f (trn3::to_onchip_scales' placement).
struct ScaleTile {
  std::size_t partition_stride = 0;
  std::span<const std::uint8_t> bytes;
};

// An fp32 PSUM tile: rows = the stationary's free size (M), cols = the moving's (N), row-major.
struct Psum {
  std::size_t rows = 0, cols = 0;
  std::span<float> values;
};

// dst (+)= stationary.T @ moving. Throws std::invalid_argument naming the operand and the
// field: partitions differ or exceed 128 (256 / 2 pairs in double_row), free sizes over 128 /
// 512, dst not stationary.free x moving.free, a span too short for its stride, a format that
// is not an element format or bf16, double_row with a non-FP8 operand, a code outside its
// format (fp6 / fp4 high bits).
void nc_matmul(const Psum& dst, const Tile& stationary, const Tile& moving, PerfMode mode = PerfMode::kNone,
               bool accumulate = false);

// dst (+)= the MX product of stationary and moving (both <= 128 partitions, <= 128 / 512 x4
// columns), scales as in ScaleTile, under the Trainium3 assumptions given. Errors as nc_matmul.
void nc_matmul_mx(const Psum& dst, const X4Tile& stationary, const ScaleTile& stationary_scale, const X4Tile& moving,
                  const ScaleTile& moving_scale, const Trainium3MxAssumptions& assumptions = {},
                  bool accumulate = false);

// ---- the GEMM built from the instructions -----------------------------------------------------
// D = epilogue(A x B) as a Trainium kernel issues it: A^T becomes the stationary tiles (K on
// partitions, <= 128 columns of M each), B the moving tiles (<= 512 columns of N), one PSUM
// tile per (M tile, N tile), K instructions accumulated into it in K order; the epilogue of
// gemm.hpp runs on PSUM (the vector engine's fp32 operations; block scaling: one PSUM
// accumulation per 128-K block). The instruction follows options:
//   systolic:128                 nc_matmul, K tiles of 128 (fp8 and fp6/fp4 operands)
//   systolic:256                 nc_matmul double_row, K tiles of 256 (FP8 operands)
//   mx_dequantize_to_bf16 with systolic:128
//                                MX operands dequantized to bf16 (Trainium2), nc_matmul
//   trainium3_mx:wrapx|1x32      nc_matmul_mx on trn3::to_onchip_codes / to_onchip_scales of
//                                the model's layout (e4m3fn, e5m2, e2m1 operands)
// and gives the same bits as gemm_reference(args, options) for every shape and thread count.
// C as the accumulator input (CRole::kAccumulator) is the PSUM tile's value before the first
// instruction, which then accumulates into it (accumulate=True), as a kernel that matmuls onto a
// loaded PSUM tile does; under block scaling C starts the fp32 sum of the scaled partials.
// For wrapx, an MX group is 4 runs of 8 K 128 apart (trainium3_layout.hpp), so the OCP
// scales of args (one per 32 consecutive K) must agree within each such group; otherwise
// std::invalid_argument names the tensor, row / column and the two blocks. Other models, or
// operands an instruction cannot take, throw std::invalid_argument naming the model or tensor.
void gemm_trainium(const GemmArgs& args, const GemmOptions& options, std::span<float> out);
void gemm_trainium(const GemmArgs& args, const GemmOptions& options, std::span<std::uint16_t> out_bf16);

// The instruction gemm_trainium issues for these options: "nc_matmul", "nc_matmul:double_row",
// "nc_matmul:bf16" or "nc_matmul_mx"; throws as gemm_trainium for a model with none.
std::string_view trainium_instruction(const GemmArgs& args, const GemmOptions& options);

}  // namespace fp8q::trn
