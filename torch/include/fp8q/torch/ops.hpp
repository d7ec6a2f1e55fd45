// fp8q/torch/ops.hpp: fp8q's operators on torch tensors, for LibTorch programs. The same
// functions are registered as torch.ops.fp8q.* (TORCH_LIBRARY(fp8q, ...)), each with a meta
// kernel so torch.compile traces it; the Python package wraps them. They add no numerics of
// their own: each calls the library (docs/numerics.md fixes every bit), so C++, Python and the
// fp8q tool give the same bits, for any at::get_num_threads() (the library's thread count)
// and any floating-point environment of the caller.
//
// Tensors (docs/python.md): CPU and dense; inputs of any strides (a non-contiguous one is read
// through one contiguous copy), an `out` contiguous. A format torch has travels as that dtype
// (float8_e4m3fn, float8_e5m2, float8_e4m3fnuz, float8_e5m2fnuz, float8_e8m0fnu scales,
// float4_e2m1fn_x2 with two codes a byte, element 2i in the low nibble); a format torch lacks
// (Trainium2's IEEE-style e4m3, e3m4, e2m3, e3m2) travels as uint8 codes, one a byte, with its
// format named. uint8 codes of any narrow format are accepted wherever codes are read. Sources
// are float32, bfloat16, float16 (and float64 for convert). A format argument left empty
// takes the tensor's own dtype's format.
//
// Errors: c10::TypeError for a wrong dtype, c10::ValueError for everything else (device,
// shape, contiguity, a name that is not a format or policy, the library's own checks); each
// names the argument. No op writes to its inputs.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace fp8q::torch {

// ---- conversions -------------------------------------------------------------------------------
// x (elements of `from`) converted to `to`: the bulk conversion (numerics/bulk.hpp). rounding
// rne rna rtz rup rdn rto sr; overflow saturate | inf-nan; nan error | zero (NaN into a format
// without NaN); seed / offset key stochastic rounding (their 64 bits); scale: a 1-element
// float32 tensor, converting fp32(x * scale) (scale_op multiply) or fp32(x / scale) (divide).
// The result has x's shape, except that e2m1 packs two codes a byte along the last dimension.
at::Tensor convert(const at::Tensor& x, std::string_view to, std::string_view from = "",
                   std::string_view rounding = "rne", std::string_view overflow = "saturate",
                   std::string_view nan = "error", std::int64_t seed = 0, std::int64_t offset = 0,
                   const std::optional<at::Tensor>& scale = std::nullopt, std::string_view scale_op = "multiply");
// The same into `out` (its dtype and shape as convert's result; not overlapping x): a caller
// that converts repeatedly reuses one buffer instead of fresh pages.
void convert_into(const at::Tensor& x, std::string_view to, std::string_view from, std::string_view rounding,
                  std::string_view overflow, std::string_view nan, std::int64_t seed, std::int64_t offset,
                  const std::optional<at::Tensor>& scale, std::string_view scale_op, at::Tensor& out);

// The largest |x| of each block of the granularity (tensor, row, col, block<R>x<C>, mx) over x's
// matrix view [prod(shape[:-1]), shape[-1]]: float32 [grid_rows, grid_cols]. NaN if a block
// holds a NaN. x: float32, bfloat16 or float16.
at::Tensor amax(const at::Tensor& x, std::string_view granularity = "tensor");

// The 16-point random Hadamard transform along the last dimension (a multiple of 16), per block
// of 16: y_j = fp32((1/4) sum_i H_ji s_i x_i), s_i = -1 where bit i of sign_mask is set
// (numerics/hadamard.hpp). x float32, bfloat16 or float16; the result float32, x's shape.
at::Tensor hadamard16(const at::Tensor& x, std::int64_t sign_mask = 0);

// The per-tensor scale rule of an amax tensor, elementwise (quant/scale_rules.hpp):
// scale_op multiply gives scale = fp32(max / amax) (what q = x * scale uses), divide gives
// scale_inv = fp32(amax / max) (q = x / scale_inv). margin, amax_epsilon, power_of_two as there.
at::Tensor scale_from_amax(const at::Tensor& amax, std::string_view format, std::string_view scale_op = "multiply",
                           std::int64_t margin = 0, double amax_epsilon = 0.0, bool power_of_two = false);

// The fused cast + transpose of a 2-D float32 / bfloat16 / float16 x by one per-tensor
// scale: (q [R, C], qt [C, R], amax float32 0-d), equal to convert + transpose + amax.
std::tuple<at::Tensor, at::Tensor, at::Tensor> cast_transpose(
    const at::Tensor& x, std::string_view to, const std::optional<at::Tensor>& scale = std::nullopt,
    std::string_view rounding = "rne", std::string_view overflow = "saturate", std::string_view nan = "error",
    std::int64_t seed = 0, std::int64_t offset = 0);

// ---- quantized tensors -------------------------------------------------------------------------
// The canonical name of a granularity (quant/granularity.hpp), of the same blocks on the
// transposed matrix when `transposed`; ValueError for an unknown name.
std::string granularity(std::string_view name, bool transposed = false);

// quantize (quant/quantized_tensor.hpp): codes (x's shape, e2m1 packed) and scales over the
// granularity's grid of x's matrix view, [grid_rows, grid_cols]: float32 scale_inv (the
// dequantization multiplier) for tensor / row / col / block<R>x<C>, float8_e8m0fnu for mx.
// scale_op multiply or divide (not mx); margin, amax_epsilon, power_of_two: the amax -> scale
// rule; mx_rule floor ceil even rceil trainium3 compressed-tensors; like fp8q or
// compressed-tensors (quant/producer.hpp: its FP8 quantizer, e4m3fn, divide).
std::tuple<at::Tensor, at::Tensor> quantize(const at::Tensor& x, std::string_view format,
                                            std::string_view granularity = "tensor",
                                            std::string_view scale_op = "multiply", std::int64_t margin = 0,
                                            double amax_epsilon = 0.0, bool power_of_two = false,
                                            std::string_view mx_rule = "floor", std::string_view rounding = "rne",
                                            std::string_view overflow = "saturate", std::string_view nan = "error",
                                            std::int64_t seed = 0, std::int64_t offset = 0,
                                            std::string_view like = "fp8q");

// NVFP4 (granularity nvfp4, 1 x 16, or nvfp4_16x16; format e2m1): e2m1 codes (float4_e2m1fn_x2),
// float8_e4m3fn block scales [grid_rows, grid_cols] and the float32 global scale S [1]
// (docs/numerics.md section 5, "NVFP4"). quantize's arguments; scale_op and the amax options keep
// their defaults. like "modelopt" (granularity nvfp4): ModelOpt's quantizer, whose global scale is
// its weight_scale_2, a multiplier (quant/producer.hpp). global_scale: the one to use in place of
// x's own (QuantizeOptions::global_scale: a fused group's), a float32 value.
std::tuple<at::Tensor, at::Tensor, at::Tensor> quantize_nvfp4(
    const at::Tensor& x, std::string_view format = "e2m1", std::string_view granularity = "nvfp4",
    std::string_view scale_op = "multiply", std::int64_t margin = 0, double amax_epsilon = 0.0,
    bool power_of_two = false, std::string_view mx_rule = "floor", std::string_view rounding = "rne",
    std::string_view overflow = "saturate", std::string_view nan = "error", std::int64_t seed = 0,
    std::int64_t offset = 0, std::string_view like = "fp8q", std::optional<double> global_scale = std::nullopt);

// e2m1 codes two a byte (float4_e2m1fn_x2 or uint8, element 2i in the low nibble) as uint8 codes
// one a byte, the last dimension doubled: data movement, an op so that compiled graphs keep it.
at::Tensor unpack_fp4(const at::Tensor& packed);

// The inverse: fp32(decode(q) * scale) per element, then rounded to dtype (float32, bfloat16,
// float16) nearest-even. codes and scales as quantize returns them; format empty: codes' own;
// global_scale: NVFP4's S, required for the nvfp4 granularities and refused for the others;
// global_scale_op: "divide" (d = fp32(scale / S)) or "multiply" (ModelOpt: d = fp32(scale * S)).
at::Tensor dequantize(const at::Tensor& codes, const at::Tensor& scales, std::string_view granularity = "tensor",
                      std::string_view format = "", at::ScalarType dtype = at::kFloat,
                      const std::optional<at::Tensor>& global_scale = std::nullopt,
                      std::string_view global_scale_op = "divide");

// ---- delayed scaling (quant/recipes/delayed_scaling.hpp) ------------------------------------------
// One step's cast of x with the scale of the state (q = convert(fp32(x * scale)), saturating):
// codes (x's shape), scale_inv = fp32(1 / scale) as a [1, 1] float32 grid (a per-tensor
// QuantizedTensor's scales), and x's amax (a 0-d float32 tensor), from one read of x.
std::tuple<at::Tensor, at::Tensor, at::Tensor> quantize_scaled(const at::Tensor& x, std::string_view format,
                                                                const at::Tensor& scale,
                                                                std::string_view rounding = "rne",
                                                                std::int64_t seed = 0, std::int64_t offset = 0);
// DelayedScaling::update(amax) on the state (history float32 [L] most recent first, scale
// float32 [1]): the new history and scale. algorithm "max" or "most_recent".
std::tuple<at::Tensor, at::Tensor> delayed_update(const at::Tensor& history, const at::Tensor& scale,
                                                  const at::Tensor& amax, std::string_view format,
                                                  std::string_view algorithm = "max", std::int64_t margin = 0,
                                                  bool power_of_two = false);

// ---- calibration ---------------------------------------------------------------------------------
// A histogram observer (calib/histogram.hpp) as an int64 state tensor of fixed size for its
// bins and tail: new, observe (returns the new state), merge (exact), and the four
// calibrators (max, percentile, mse, entropy) giving the amax as a float32 0-d tensor.
at::Tensor histogram_new(std::int64_t bins = 2048, std::int64_t tail = 256);
at::Tensor histogram_observe(const at::Tensor& state, const at::Tensor& x);
at::Tensor histogram_merge(const at::Tensor& a, const at::Tensor& b);
at::Tensor calibrate(const at::Tensor& state, std::string_view method, std::string_view format,
                     double percentile = 99.99, std::int64_t margin = 0, double amax_epsilon = 0.0,
                     bool power_of_two = false);

// ---- training recipes (quant/recipes/recipe.hpp) -------------------------------------------------
// The JSON of a named recipe (with the gradient casts rounded stochastically if asked); a
// recipe's JSON validated and in canonical form; its operand plan as JSON; one cast's JSON
// validated (`role` names it in errors). ValueError naming the field for anything invalid.
std::string recipe(std::string_view name, bool stochastic_gradients = false);
std::vector<std::string> recipe_names();
std::string recipe_check(std::string_view json);
std::string recipe_plan(std::string_view json);
std::string cast_check(std::string_view json, std::string_view role);

// ---- matmul -----------------------------------------------------------------------------------
// D = epilogue(A x B) under a device profile (trn2 trn3 ocp hopper fp32) and its model or
// `model` (kernels/gemm.hpp, kernels/profile.hpp). a: [M, K] codes, b: [K, N] codes. Each
// operand's granularity on its own matrix (quant/granularity.hpp names; GemmOperand says which
// A and B take): tensor (1 scale_inv, or no scale), row of A / col of B (per output channel),
// block1x128 / block128x128, mx / mx32x1 (E8M0 per 32 along K), nvfp4 / nvfp4_16x1 /
// nvfp4_16x16 (E4M3FN per 16 along K, both operands); the scales are shaped as the block grid
// ([M, ceil(K/32)] for A's mx, ...), float32 scale_inv, float8_e8m0fnu / uint8 (MX) or
// float8_e4m3fn / uint8 (NVFP4). a_global_scale, b_global_scale: NVFP4's tensor scales S
// (float32, one element), for NVFP4 operands only.
// c: optional float32 [M, N], bias: optional float32 [N]. c_role (CRole of gemm.hpp): "epilogue"
// adds c after the scales; "accumulator" makes c the accumulator input (D = A B + C inside the
// model, in the accumulator's units; it needs c). out_dtype float32 or bfloat16. trainium true
// runs the Trainium instruction emulation (kernels/trainium.hpp), the same bits by construction
// and test.
at::Tensor matmul(const at::Tensor& a, const at::Tensor& b, std::string_view profile,
                  std::string_view a_format = "", std::string_view b_format = "",
                  std::string_view a_granularity = "tensor", const std::optional<at::Tensor>& a_scale = std::nullopt,
                  std::string_view b_granularity = "tensor", const std::optional<at::Tensor>& b_scale = std::nullopt,
                  const std::optional<at::Tensor>& c = std::nullopt,
                  const std::optional<at::Tensor>& bias = std::nullopt, std::string_view model = "",
                  at::ScalarType out_dtype = at::kFloat, bool trainium = false,
                  std::string_view c_role = "epilogue",
                  const std::optional<at::Tensor>& a_global_scale = std::nullopt,
                  const std::optional<at::Tensor>& b_global_scale = std::nullopt);

// ---- Trainium instructions (kernels/trainium.hpp) --------------------------------------------
// nc_matmul: psum (+)= stationary.T @ moving. stationary [K, M] and moving [K, N] codes (or
// bfloat16), K on the partitions (<= 128; double_row: [K, M, 2] pairs, K <= 128 pairs).
// perf_mode none | double_row. psum: float32 [M, N] to accumulate into (a new tensor is
// returned; psum is not written), or none to start a tile.
at::Tensor nc_matmul(const at::Tensor& stationary, const at::Tensor& moving, std::string_view stationary_format = "",
                     std::string_view moving_format = "", std::string_view perf_mode = "none",
                     const std::optional<at::Tensor>& psum = std::nullopt);
// nc_matmul_mx: x4 tiles as uint8 images [P, F, 4] (fp8 x4) or [P, F, 2] (fp4 x4), scales
// [P, F] E8M0 (float8_e8m0fnu or uint8) in the quadrant placement; x4 types
// float8_e4m3fn_x4 float8_e5m2_x4 float4_e2m1fn_x4. The two assumptions of docs/numerics.md
// (exact partition sum, single-rounding add) are parameters.
at::Tensor nc_matmul_mx(const at::Tensor& stationary, const at::Tensor& stationary_scale, const at::Tensor& moving,
                        const at::Tensor& moving_scale, std::string_view stationary_type,
                        std::string_view moving_type, const std::optional<at::Tensor>& psum = std::nullopt,
                        bool exact_partition_sum = true, bool single_rounding_add = true);

// Trainium3 layouts (quant/trainium3_layout.hpp), layout wrapX | 1x32: [K, N] codes (one a
// byte) to the on-chip image [128, T, N, 4] (T = ceil(K / 512)) and back; compact [blocks, N]
// E8M0 scales to the [128, T, N] scale tile and back; x4 packing of codes (fp4: two a byte).
at::Tensor trn3_pack_codes(const at::Tensor& codes, std::string_view layout);
at::Tensor trn3_unpack_codes(const at::Tensor& onchip, std::string_view layout, std::int64_t k);
at::Tensor trn3_pack_scales(const at::Tensor& scales, std::string_view layout, std::int64_t k);
at::Tensor trn3_unpack_scales(const at::Tensor& onchip, std::string_view layout, std::int64_t k);
at::Tensor pack_x4(const at::Tensor& codes, std::string_view type);
at::Tensor unpack_x4(const at::Tensor& image, std::string_view type);

// ---- comparison (numerics/compare.hpp) ------------------------------------------------------------
// actual against expected (same dtype and shape), bitwise and in ULPs as `fp8q compare` does:
// codes of `format` (default: the dtype's own; uint8 needs one named), integer and bool tensors
// bitwise. Returns (counts int64 [7]: count, bit_equal, differ, signed_zero, nan_payload, beyond
// (elements not within `ulps`), max_ulps; rows int64 [worst, 5]: flat index, actual code, expected
// code, ulps, ElementMatch, largest distance first (index -1 past the differing elements);
// values float64 [worst, 2]: the two codes decoded). An infinite distance (NaN against a number)
// is -1.
std::tuple<at::Tensor, at::Tensor, at::Tensor> compare(const at::Tensor& actual, const at::Tensor& expected,
                                                       std::string_view format = "", std::int64_t ulps = 0,
                                                       std::int64_t worst = 5);

}  // namespace fp8q::torch
