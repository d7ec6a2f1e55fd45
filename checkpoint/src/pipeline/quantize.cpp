// quantize_checkpoint(): the streaming pipeline of pipeline.hpp, its steps in order
// (pipeline/quantize_steps.hpp).
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string>
#include <system_error>

#include "fp8q/checkpoint/pipeline.hpp"
#include "pipeline/output_dir.hpp"
#include "pipeline/quantize_steps.hpp"

namespace fp8q::checkpoint {
namespace fs = std::filesystem;

namespace {

// An error while OUT_DIR is built (a write, a copy, the commit: ENOSPC, EIO, EFBIG) names a
// file of the staging directory, which is gone once the error has unwound: the message leads
// with OUT_DIR, the name the caller gave; the error code is kept.
class OutputError : public std::system_error {
 public:
  OutputError(const fs::path& out_dir, const std::system_error& e)
      : std::system_error(e.code()), what_("output directory " + out_dir.string() + ": " + e.what()) {}
  const char* what() const noexcept override { return what_.c_str(); }

 private:
  std::string what_;
};

// "out/q1/" names the directory out/q1: without the trailing separators its parent (where
// the staging directory goes) is out, not out/q1 itself.
fs::path directory_named(const fs::path& out_arg) {
  fs::path out_dir = out_arg;
  while (!out_dir.has_filename() && out_dir.has_relative_path()) out_dir = out_dir.parent_path();
  return out_dir;
}

// The plan of `model` streamed into a staging directory beside OUT_DIR, then committed; sets
// `building` to OUT_DIR as the staging begins.
QuantizeResult build(const Model& model, const fs::path& in, const fs::path& out_dir,
                     const pipeline::CheckedOptions& checked, const QuantizeCheckpointOptions& options,
                     const std::optional<reencode::QuantizedSource>& source, const ProgressFn& progress,
                     fs::path& building, std::chrono::steady_clock::time_point start) {
  pipeline::QuantizePlan plan = pipeline::make_plan(model, checked, options, source);
  if (checked.layout) pipeline::share_fused_global_scales(model, source, *checked.layout, options.layout_options, plan);
  building = out_dir;
  pipeline::StagingDir staging(out_dir);
  QuantizeResult result;
  pipeline::OJson index_map = pipeline::OJson::object();
  pipeline::stream_shards(model, source, checked, options, plan, staging.path(), progress, result, index_map);
  pipeline::write_other_files(model, in, checked, plan, index_map, staging.path(), result);
  staging.commit();
  result.summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

// quantize_checkpoint() less OutputError; sets `building` to OUT_DIR as its staging begins.
QuantizeResult quantize_into(const fs::path& in, const fs::path& out_arg, const QuantizeCheckpointOptions& opt,
                             const ProgressFn& progress, fs::path& building) {
  const auto start = std::chrono::steady_clock::now();
  const fs::path out_dir = directory_named(out_arg);
  pipeline::check_options(opt);
  pipeline::check_output_name(out_dir, out_arg);
  const Model model = Model::open(in);
  pipeline::check_input_and_output(in, out_dir, opt.force);
  const auto source = reencode::quantized_source(model);
  if (source && opt.layout_options.like != Producer::kFp8q)
    throw PipelineError("--like: the input is already quantized (" + source->described_by +
                        "); a producer's quantizer applies to a high-precision model");
  // A quantized input's weights keep their granularity where the layout takes it and none is given.
  QuantizeCheckpointOptions options = opt;
  if (source && !options.layout_options.granularity) {
    const Granularity g = source->layout->name() == "hf-fp8" ? Granularity::block(128, 128)
                                                               : source->options.granularity.value_or(Granularity::row());
    const auto takes = layout_named(opt.layout)->granularities();
    if (std::find(takes.begin(), takes.end(), g) != takes.end()) options.layout_options.granularity = g;
  }
  const pipeline::CheckedOptions checked = pipeline::check_options(options);
  return build(model, in, out_dir, checked, options, source, progress, building, start);
}

// dequantize_checkpoint() less OutputError, as quantize_into().
QuantizeResult dequantize_into(const fs::path& in, const fs::path& out_arg, const DequantizeCheckpointOptions& d,
                               const ProgressFn& progress, fs::path& building) {
  const auto start = std::chrono::steady_clock::now();
  const fs::path out_dir = directory_named(out_arg);
  if (d.dtype && *d.dtype != DType::kBF16 && *d.dtype != DType::kF16 && *d.dtype != DType::kF32)
    throw PipelineError("--dtype: " + std::string(dtype_name(*d.dtype)) + " is not one of BF16 F16 F32");
  if (d.threads < 1) throw PipelineError("--threads: must be at least 1, got " + std::to_string(d.threads));
  if (d.max_shard_bytes == 0) throw PipelineError("--max-shard-size must be positive");
  pipeline::check_output_name(out_dir, out_arg);
  const Model model = Model::open(in);
  pipeline::check_input_and_output(in, out_dir, d.force);
  const auto source = reencode::quantized_source(model);
  if (!source) throw PipelineError("input " + in.string() + " holds no quantized weight: nothing to dequantize");
  QuantizeCheckpointOptions options;
  options.layout_options.threads = d.threads;
  options.force = d.force;
  options.allow_nonfinite = d.allow_nonfinite;
  options.require_exact = d.require_exact;
  options.max_shard_bytes = d.max_shard_bytes;
  options.measure = false;  // the report's Conversion is the exact measure
  pipeline::CheckedOptions checked;
  checked.threads = d.threads;
  checked.dequantize_to = d.dtype.value_or(source->model_dtype);
  return build(model, in, out_dir, checked, options, source, progress, building, start);
}

// The result of `into` (quantize_into or dequantize_into); an error while OUT_DIR is built names OUT_DIR.
template <class Options, class Into>
QuantizeResult naming_output(const fs::path& in, const fs::path& out_arg, const Options& opt, const ProgressFn& progress,
                             Into into) {
  fs::path building;  // empty until the staging directory is being made
  try {
    return into(in, out_arg, opt, progress, building);
  } catch (const std::system_error& e) {
    if (building.empty()) throw;
    throw OutputError(building, e);
  }
}

}  // namespace

QuantizeResult quantize_checkpoint(const fs::path& in, const fs::path& out_arg, const QuantizeCheckpointOptions& opt,
                                   const ProgressFn& progress) {
  return naming_output(in, out_arg, opt, progress, quantize_into);
}

QuantizeResult dequantize_checkpoint(const fs::path& in, const fs::path& out_arg, const DequantizeCheckpointOptions& opt,
                                     const ProgressFn& progress) {
  return naming_output(in, out_arg, opt, progress, dequantize_into);
}

}  // namespace fp8q::checkpoint
