// fp8q/kernels/gemm.hpp: the quantized GEMM D = epilogue(A x B + C) (docs/numerics.md section 8).
//
// A is M x K codes, B is K x N codes, both row-major, one byte per code (fp6/fp4 in the low
// bits). Decoded values are exact in fp32; the accumulation model (numerics/accumulation.hpp)
// fixes every addition. With scale_inv_a, scale_inv_b the dequantization multipliers that
// apply to output (m, n):
//
//   plain scaling (tensor, with or without a scale / per row of A, per column of B):
//     acc = model(a[m, :], b[:, n], from C0); out = fp32(acc * fp32(scale_inv_a * scale_inv_b))
//   block scaling (A: 1 x 128 blocks along K; B: 128 x 128 blocks), DeepSeek-V3 style:
//     out = C0; for each K block j of 128: p_j = model(the block's products, from +0);
//     out = fp32(out + fp32(p_j * fp32(scale_inv_a[m, j] * scale_inv_b[j, n / 128])))
//   MX (E8M0 scale per 32 consecutive K, on A, B or both): the scales are inside the model
//     (each product times 2^(e_a + e_b)); out = acc.
//   NVFP4 (E4M3FN scale per 16 K on both operands, under each operand's tensor scale S): the
//     block scales are inside the model, each product a_k * b_k * s_a * s_b exactly (s the
//     decoded E4M3FN scales of the two blocks; an element times its scale is exact in fp32);
//     out = fp32(acc * alpha), alpha = fp32(1 / fp32(S_a * S_b)), the alpha vLLM passes to its
//     NVFP4 GEMM (IEEE: an S_a * S_b that overflows gives +0, one that underflows to 0 gives
//     +Inf). Models fp32_sequential,
//     exact_block and systolic; K a multiple of 16.
// C has one of two roles (CRole). kEpilogue (the default; a GEMM's beta C, beta = 1): C0 = +0
// and out = fp32(out + c[m, n]) after the scales. kAccumulator (an MMA instruction's
// D = A B + C: wgmma, mma.sync, a PSUM tile matmul'ed into with accumulate=True): C0 = c[m, n]
// is the accumulator input, where the model starts its sum (numerics/accumulation.hpp:
// `DotInput::c`), so C is in the accumulator's units: under plain scaling before the
// dequantization multiply (the multiply scales C too), under block scaling the start of the
// fp32 out accumulator the scaled partials are added into, under MX the model's own start.
// Then out = fp32(out + bias[n]) when a bias is given; a NaN is the canonical 0x7FC00000; a
// bf16 output is that fp32 rounded to
// nearest-even (NaN 0x7FC0). Every fp32 operation is IEEE nearest-even with subnormals,
// whatever the caller's FP environment.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "fp8q/numerics/accumulation.hpp"
#include "fp8q/numerics/format.hpp"
#include "fp8q/numerics/isa.hpp"
#include "fp8q/quant/granularity.hpp"

namespace fp8q {

// Which codes share a scale: the operand's granularity on its own matrix (A [M, K], B [K, N];
// quant/granularity.hpp), the scales row-major over block_grid(granularity, that matrix):
//   tensor:                A and B; scale_inv holds 1 value, or none (a multiplier of 1)
//   row (A) / col (B):     one scale_inv per output channel, M or N values
//   block1x128 (A) / block128x128 (B): DeepSeek-V3 blocks; A and B must both use them
//   mx (A, 1 x 32) / mx32x1 (B, 32 x 1): E8M0 codes in scale_codes, one per 32 consecutive K;
//     pairs with MX on the other operand, or with tensor and no scale
//   nvfp4 or nvfp4_16x16 (A) / nvfp4_16x1 or nvfp4_16x16 (B): E4M3FN codes in scale_codes, the
//     tensor scale S in global_scale (finite, > 0); pairs with NVFP4 on the other operand
struct GemmOperand {
  FormatId format = FormatId::kE4M3FN;
  std::span<const std::uint8_t> codes;  // A: M x K, B: K x N, row-major
  Granularity granularity = Granularity::tensor();
  std::span<const float> scale_inv{};           // tensor, row, col, block: finite and > 0
  std::span<const std::uint8_t> scale_codes{};  // MX (E8M0), NVFP4 (E4M3FN)
  float global_scale = 1.0f;                    // NVFP4: the tensor scale S
};

// Where C enters the result (see the definition above). An enum, not a bool, so that a call
// names the role and the CLI and Python spell it the same way ("epilogue", "accumulator").
enum class CRole : std::uint8_t {
  kEpilogue,     // out = fp32(out + c) after the scales (GEMM semantics)
  kAccumulator,  // the model's accumulator starts at c (MMA instruction semantics)
};

struct GemmArgs {
  std::size_t m = 0, n = 0, k = 0;
  GemmOperand a, b;
  std::span<const float> c{};     // empty, or M x N row-major
  std::span<const float> bias{};  // empty, or N
  CRole c_role = CRole::kEpilogue;  // with an empty c either role is C = +0: no term at all
};

// "epilogue" / "accumulator"; parse_c_role returns std::nullopt for any other name.
std::string_view c_role_name(CRole r);
std::optional<CRole> parse_c_role(std::string_view name);

struct GemmOptions {
  AccumulationModel model{};
  // Trainium2 has no MX hardware: MX operands are dequantized to bf16 (v = bf16(x * 2^e),
  // nearest-even) and the plain model runs on them without scales.
  bool mx_dequantize_to_bf16 = false;
  int threads = 1;  // the result does not depend on it
  // The fast path's instruction set, where one is forced (it must be supported); default
  // active_isa() (fp8q/numerics/isa.hpp). The result does not depend on it either.
  std::optional<Isa> isa{};
  // The fp32_sequential / systolic fast path's micro-kernel, by the name gemm_path() gives it
  // ("avx512bf16", "avx512", "avx2", "generic"), where one is forced (it must run on this CPU);
  // default: the one this CPU runs fastest (docs/performance.md, "Kernels per CPU"). Where
  // set it takes the place of `isa` on that path; other paths ignore it. The result does not
  // depend on it.
  std::optional<std::string> micro_kernel{};
};

// The scalar reference, written straight from the definition above (reference_dot per output).
// Throws std::invalid_argument naming the tensor, field or index when the input is bad, and
// when `out` shares memory with any input (C included: D is never written over C in place).
void gemm_reference(const GemmArgs& args, const GemmOptions& options, std::span<float> out);
void gemm_reference(const GemmArgs& args, const GemmOptions& options, std::span<std::uint16_t> out_bf16);

// The fast path: equal to gemm_reference bit for bit, for every shape, thread count and ISA
// (fp32_sequential and systolic on plain or block scaling, exact_block on plain, block or MX
// scaling with B dividing 32 and blocks of at most 4096 products or on NVFP4 with B dividing 16
// where every block sum is exact in fp64 (e2m1, e4m3fn elements), and fused without MX have
// vectorised kernels; other models run the reference, split across threads). Every path takes
// C in both roles; the one exception is fused without promotion and without block scaling
// when some accumulator input C is NaN, infinite, or nonzero with |C| < 2^-100 or |C| >= 2^126
// (outside the range its integer step arithmetic covers): that GEMM runs the reference, and
// gemm_path says "reference". The same checks.
void gemm(const GemmArgs& args, const GemmOptions& options, std::span<float> out);
void gemm(const GemmArgs& args, const GemmOptions& options, std::span<std::uint16_t> out_bf16);

// Which path gemm() takes for these arguments: "avx512bf16", "avx512", "avx2", "generic" or
// "reference" (the fp32_sequential / systolic fast path: its micro-kernel).
std::string_view gemm_path(const GemmArgs& args, const GemmOptions& options);

}  // namespace fp8q
