// What quantize and verify share: the safetensors metadata that records how a checkpoint
// was quantized, so that verify reads the layout back from the output itself.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "fp8q/checkpoint/layout.hpp"

namespace fp8q::checkpoint::pipeline {

inline constexpr std::string_view kMetaLayout = "fp8q.layout";
inline constexpr std::string_view kMetaGranularity = "fp8q.granularity";
inline constexpr std::string_view kMetaStrategy = "fp8q.strategy";  // the same in compressed-tensors' words (older files)
inline constexpr std::string_view kMetaPack = "fp8q.pack";
inline constexpr std::string_view kMetaWeightFormat = "fp8q.weight_format";  // the element format of the weights

std::map<std::string, std::string> shard_metadata(const Layout& layout, const LayoutOptions& options);
// Throws FormatError for a value that is not a granularity / packing.
LayoutOptions options_from_metadata(const std::map<std::string, std::string>& metadata);

// Adds "lm_head" to the modules not converted unless an output projection is listed (the
// loader builds lm_head as a Linear even when tie_word_embeddings stores no weight for it;
// llm-compressor always ignores it), then sorts both lists.
void complete_config_context(ConfigContext& context);

// The groups of `modules` a server fuses into one GEMM, each complete (every member listed):
// <parent>.q_proj, .k_proj, .v_proj; .q_a_proj, .kv_a_proj_with_mqa; .gate_proj, .up_proj
// (vLLM's qkv_proj, fused_qkv_a_proj and gate_up_proj). In the order of `modules`' first members.
std::vector<std::vector<std::string>> fused_groups(const std::vector<std::string>& modules);

}  // namespace fp8q::checkpoint::pipeline
