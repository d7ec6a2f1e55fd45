// Internal: an already-quantized input checkpoint, read through the layout that wrote it
// (docs/checkpoints.md, "Quantized inputs"): which layout, its options, and each quantized
// module's stored tensors and logical [out, in] shape.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "fp8q/checkpoint/layout.hpp"
#include "fp8q/checkpoint/model_dir.hpp"

namespace fp8q::checkpoint::reencode {

struct QuantizedSource {
  const Layout* layout = nullptr;
  LayoutOptions options;
  std::string described_by;    // what named the layout: "config.json quant_method \"fp8\"", ...
  bool pow2_scales = false;    // the config promises power-of-two scales (scale_fmt "ue8m0")
  std::map<std::string, std::uint64_t> in_features;  // trn3-mx packed: each module's K
  DType model_dtype = DType::kBF16;  // config.json's torch_dtype, else the first kept float weight's:
                                     // the dtype a loader gives scales stored in the model's dtype
};

// The layout of a quantized input, from fp8q's shard metadata or config.json's
// quantization_config; nullopt when the input holds no quantized weight. Throws PipelineError
// naming the config key or tensor for a quantized input fp8q cannot read (an unknown
// quant_method or format, static activation scales, FP8 weights with no quantization_config).
std::optional<QuantizedSource> quantized_source(const Model& model);

// The same from the texts that name it: shard metadata, config.json, hf_quant_config.json (the
// entry point of the mutation test); nullopt when they name no quantized layout.
std::optional<QuantizedSource> layout_from_texts(const std::map<std::string, std::string>& metadata,
                                                 const std::optional<std::string>& config_json,
                                                 const std::optional<std::string>& hf_quant_config_json);

// One quantized module of the source: its stored tensors (the codes first) and W's shape.
struct SourceModule {
  std::string module;
  std::vector<std::uint64_t> shape;  // [out, in]; a stack of experts (gpt-oss): [E, out, in]
  std::vector<const ModelTensor*> tensors;
  bool experts() const { return shape.size() == 3; }
  // The high-precision tensor's name: "<module>.weight", for experts the module itself
  // (gpt-oss's "<prefix>.gate_up_proj", its loader's [E, in, out] parameter).
  std::string weight_name() const { return experts() ? module : module + ".weight"; }
};

// The quantized module whose codes tensor is `t`; nullopt when t is not a codes tensor of the
// source's layout. Throws PipelineError naming the tensor when its companions (scales) are
// missing.
std::optional<SourceModule> source_module(const QuantizedSource& source, const Model& model, const ModelTensor& t);

// Every quantized module of the source (source_module over the model's tensors), keyed by its
// codes tensor, and the names of all their tensors: codes and companions.
struct SourceModules {
  std::map<std::string, SourceModule> by_codes;
  std::set<std::string> tensors;
};
SourceModules source_modules(const QuantizedSource& source, const Model& model);

// The source module's codes and scales (Layout::read_back): FormatError naming the tensor for
// a wrong dtype or shape; PipelineError when the config promised power-of-two scales and one is not.
DequantView read_source(const QuantizedSource& source, const Model& model, const SourceModule& m);

}  // namespace fp8q::checkpoint::reencode
