// Internal: the steps of quantize_checkpoint() (pipeline/quantize.cpp), one function each, in
// the order it runs them: check the options, check the input and the output's place, plan every
// tensor and shard, stream the shards into the staging directory, then write the index, the
// config and the model's other files.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fp8q/calib/calibrate.hpp"
#include "fp8q/checkpoint/layout.hpp"
#include "fp8q/checkpoint/model_dir.hpp"
#include "fp8q/checkpoint/pipeline.hpp"
#include "reencode/source.hpp"

namespace fp8q::checkpoint::pipeline {

using OJson = nlohmann::ordered_json;

// The layout that --layout names, with the options checked against it; or, dequantizing, no
// layout and the dtype the quantized weights are written in.
struct CheckedOptions {
  const Layout* layout = nullptr;
  int threads = 1;
  std::optional<calib::Method> method;  // --calib-method, with --calib-data
  std::optional<DType> dequantize_to;   // dequantize_checkpoint (layout is nullptr)
};
CheckedOptions check_options(const QuantizeCheckpointOptions& opt);

// OUT_DIR's own name, before IN is opened; then an output place that is a directory, apart
// from IN, and free (or --force).
void check_output_name(const std::filesystem::path& out_dir, const std::filesystem::path& out_arg);
void check_input_and_output(const std::filesystem::path& in, const std::filesystem::path& out_dir, bool force);

// One input tensor: kept (with the reason) or a weight to quantize, and its output tensors.
// A quantized input's weight is the module's codes tensor, with `source` naming all its tensors.
struct Item {
  const ModelTensor* tensor = nullptr;
  std::optional<std::string> keep;
  std::optional<reencode::SourceModule> source;
  WeightRef weight;
  std::vector<TensorSpec> specs;
  std::uint64_t out_bytes = 0;
};
struct QuantizePlan {
  std::vector<Item> items;
  ConfigContext ctx;                                         // what the layout's config needs
  std::vector<std::pair<std::size_t, std::size_t>> shards;  // [begin, end) of items
  bool quantized_input = false;                              // IN's quantization is replaced
};
// With a quantized input (`source`), its quantized modules are converted, its other tensors kept.
QuantizePlan make_plan(const Model& model, const CheckedOptions& checked, const QuantizeCheckpointOptions& opt,
                       const std::optional<reencode::QuantizedSource>& source);

// The layers of each fused group (fused_groups) that the layout quantizes get the smallest of
// their global scales, for a layout with one (vLLM loads one per fused layer; docs/checkpoints.md,
// "Fused layers"). Reads those weights once (a quantized input's: decodes them).
void share_fused_global_scales(const Model& model, const std::optional<reencode::QuantizedSource>& source,
                               const Layout& layout, const LayoutOptions& options, QuantizePlan& plan);

std::uint64_t spec_bytes(const TensorSpec& s);
std::string shard_name(std::size_t i, std::size_t n);

// Quantizes, writes and measures every shard's tensors into `dir`, recording each file of
// index_map and each tensor's report in `result`.
void stream_shards(const Model& model, const std::optional<reencode::QuantizedSource>& source,
                   const CheckedOptions& checked, const QuantizeCheckpointOptions& opt,
                   QuantizePlan& plan, const std::filesystem::path& dir, const ProgressFn& progress,
                   QuantizeResult& result, OJson& index_map);

// The shard index (more than one shard), config.json with the layout's quantization_config
// (none when dequantizing), and IN's other files (not a quantized IN's hf_quant_config.json,
// which would describe the input's quantization), into `dir`.
void write_other_files(const Model& model, const std::filesystem::path& in, const CheckedOptions& checked,
                       const QuantizePlan& plan, const OJson& index_map, const std::filesystem::path& dir,
                       QuantizeResult& result);

}  // namespace fp8q::checkpoint::pipeline
