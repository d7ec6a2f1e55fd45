// layout.hpp: which checkpoint layout a model directory is in, read from its config.json
// ("quantization_config"), and how one linear layer's weight is dequantized under it. Every
// rule is the layout's public definition, written here without fp8q's quantizer code:
//
//   original  `weight` F32/BF16/F16, used as it is.
//   hf-fp8    (DeepSeek-V3 / Transformers fine-grained FP8; quant_method "fp8")
//             `weight` F8_E4M3 [out, in], `weight_scale_inv` F32 [ceil(out/bo), ceil(in/bi)],
//             (bo, bi) = weight_block_size (128, 128):  w[i][j] = q[i][j] * s[i/bo][j/bi].
//   ct-fp8    (compressed-tensors, format "float-quantized")
//             `weight` F8_E4M3, `weight_scale` in the original dtype: strategy tensor [1],
//             channel [out, 1], block [ceil(out/bo), ceil(in/bi)] with (bo, bi) =
//             block_structure:  w = q * scale of its tensor / row / block.
//   ct-mxfp8  (compressed-tensors, format "mxfp8-quantized")
//             `weight` F8_E4M3 [out, in], `weight_scale` U8 E8M0 [out, ceil(in/32)]:
//             w[i][j] = q[i][j] * 2^(s[i][j/32] - 127).
//   ct-mxfp4  (compressed-tensors, format "mxfp4-pack-quantized")
//             `weight_packed` U8 [out, in/2] (e2m1, element 2i in the low nibble), `weight_scale`
//             U8 E8M0 [out, in/32]:  w[i][j] = q[i][j] * 2^(s[i][j/32] - 127).
//   ct-nvfp4  (compressed-tensors, format "nvfp4-pack-quantized")
//             `weight_packed` as ct-mxfp4, `weight_scale` F8_E4M3 [out, in/16], `weight_global_scale`
//             F32 [1]:  w[i][j] = q[i][j] * fp32(s[i][j/16] / global_scale).
//   trn2      (fp8q's layout; quant_method "fp8q", layout "trn2", fmt "e4m3", fp8_max 240)
//             `weight` F8_E4M3-tagged codes of Trainium2's IEEE-style e4m3 (max 240,
//             S.1111.000 Inf), decoded with that table rather than OCP e4m3fn's, times
//             `weight_scale` F32 per tensor [1], channel [out, 1] or block (weight_block_size).
//   trn3-mx   (fp8q's layout; quant_method "fp8q", layout "trn3-mx", packing none|wrapX|1x32)
//             packing none: the ct-mxfp8 shapes. wrapX / 1x32: pre-packed for nc_matmul_mx,
//             `weight` [128, ceil(in/512), out, 4] and `weight_scale` U8 [128, ceil(in/512),
//             out], unpacked here by the inverse of the placement in
//             docs/trainium3_layouts.md (trn3_onchip.hpp).
#pragma once

#include "codes.hpp"
#include "model_files.hpp"
#include "trn3_onchip.hpp"

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace digits {

enum class LayoutKind { kOriginal, kHfFp8, kCtFp8, kCtMxfp8, kCtMxfp4, kCtNvfp4, kTrn2, kTrn3Mx };

struct Layout {
  LayoutKind kind = LayoutKind::kOriginal;
  // Block shape for block scales (hf-fp8 weight_block_size, ct block_structure); 0 = none given.
  std::uint64_t block_rows = 0, block_cols = 0;
  std::uint64_t mx_group = 32;  // MX elements per E8M0 scale, along the input dimension
  std::optional<trn3::KLayout> packing;  // trn3-mx pre-packed for nc_matmul_mx
  bool fp4 = false;                      // trn3-mx MXFP4 (fmt e2m1): two codes a byte
};

const char* layout_name(LayoutKind kind);
std::optional<LayoutKind> parse_layout_name(const std::string& name);

// From config.json; throws std::runtime_error naming the field for a quantization_config
// this program does not know.
Layout detect_layout(const nlohmann::json& config);

// One linear layer's weight, dequantized to fp32, row-major [out, in]; `how` describes the
// stored form (e.g. "F8_E4M3 * F32 weight_scale_inv [1, 1] (128x128 blocks)"). A module
// whose weight is floating point (kept unquantized) is used as it is under every layout.
struct Weight {
  std::vector<float> values;
  std::string how;
};
Weight dequantize_weight(const ModelFiles& files, const Layout& layout, const std::string& module,
                         std::uint64_t out, std::uint64_t in);

}  // namespace digits
