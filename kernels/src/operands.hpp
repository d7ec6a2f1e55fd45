// Internal: checking and reading the GEMM's operands, shared by the reference and the fast path.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "fp8q/kernels/gemm.hpp"

namespace fp8q::detail {

inline constexpr std::size_t kScaleBlock = 128;  // DeepSeek-V3 block scaling: 1x128 / 128x128

// Throws std::invalid_argument, naming the tensor and the field or index, unless: shapes and
// spans agree, both formats are element formats (FP8, fp6, fp4) and every code is one of
// theirs, scale_inv values are finite and > 0, block scaling is on both operands or neither,
// MX scales are not mixed with scale_inv, the model is valid, and the output (out_size
// elements at `out`) shares no byte with any input (the fast paths write it before they read C).
void check_gemm(const GemmArgs& args, const GemmOptions& options, std::span<const std::byte> out, std::size_t out_size);

inline bool is_mx(const GemmOperand& o) { return o.granularity.kind == GranularityKind::kMx; }
inline bool is_nvfp4(const GemmOperand& o) { return o.granularity.kind == GranularityKind::kNvfp4; }
// A multiplier per tensor or per output channel, applied after the model's sum.
inline bool plain_scaled(const GemmOperand& o) {
  return !is_mx(o) && !is_nvfp4(o) && o.granularity.kind != GranularityKind::kBlock && !o.scale_inv.empty();
}
inline bool nvfp4_scaled(const GemmArgs& g) { return is_nvfp4(g.a); }  // check_gemm: both or neither
inline bool block_scaled(const GemmArgs& g) { return g.a.granularity.kind == GranularityKind::kBlock; }
inline bool mx_scaled(const GemmArgs& g) { return is_mx(g.a) || is_mx(g.b); }
inline std::size_t k_blocks(const GemmArgs& g) { return (g.k + kScaleBlock - 1) / kScaleBlock; }

// C's role for these arguments (an empty C has none), and the accumulator input C0 of output
// (m, n): c[m, n] when C is the accumulator input, +0 otherwise (gemm.hpp).
inline bool c_accumulates(const GemmArgs& g) { return !g.c.empty() && g.c_role == CRole::kAccumulator; }
inline bool c_in_epilogue(const GemmArgs& g) { return !g.c.empty() && g.c_role == CRole::kEpilogue; }
inline float accumulator_input(const GemmArgs& g, std::size_t m, std::size_t n) {
  return c_accumulates(g) ? g.c[m * g.n + n] : 0.0f;
}

// The fp32 value of every code of a format (exact; NaN codes give NaN).
std::array<float, 256> decode_table(FormatId f);

// scale_inv of row m of A / column n of B under plain scaling (1 without a plain scale).
float plain_scale_a(const GemmArgs& g, std::size_t m);
float plain_scale_b(const GemmArgs& g, std::size_t n);
// Block scaling: scale_inv of A's block (m, j) and of B's block (j, n / 128).
inline float block_scale_a(const GemmArgs& g, std::size_t m, std::size_t j) { return g.a.scale_inv[m * k_blocks(g) + j]; }
inline float block_scale_b(const GemmArgs& g, std::size_t j, std::size_t n) {
  const std::size_t nb = (g.n + kScaleBlock - 1) / kScaleBlock;
  return g.b.scale_inv[j * nb + n / kScaleBlock];
}

// NVFP4: the index in scale_codes of element (r, c) of an operand with `cols` columns (A: m, k;
// B: k, n); its decoded E4M3FN block scale, exact in fp32; and the output multiplier
// alpha = fp32(1 / fp32(S_a * S_b)).
inline std::size_t nvfp4_scale_index(const GemmOperand& op, std::size_t cols, std::size_t r, std::size_t c) {
  const std::size_t br = op.granularity.block_rows, bc = op.granularity.block_cols;
  return (r / br) * ((cols + bc - 1) / bc) + c / bc;
}
float nvfp4_block_scale(const GemmOperand& op, std::size_t cols, std::size_t r, std::size_t c);
float nvfp4_alpha(const GemmArgs& g);

// The canonical NaN for any NaN, everything else unchanged.
float canonical(float x);
// fp32 -> bf16, nearest-even (the NaN 0x7FC00000 becomes 0x7FC0).
std::uint16_t to_bf16(float x);

}  // namespace fp8q::detail
