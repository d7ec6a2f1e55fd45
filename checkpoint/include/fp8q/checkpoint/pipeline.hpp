// fp8q/checkpoint/pipeline.hpp: quantize a whole checkpoint into a layout, and check one.
//
// quantize_checkpoint(IN, OUT_DIR):
//   1. opens IN (model_dir.hpp: every header, the index, config.json validated) and picks the
//      tensors to quantize (select_tensor below); plans every output tensor and cuts them into
//      shards of at most max_shard_bytes (one shard: model.safetensors; more:
//      model-0000i-of-0000n.safetensors plus model.safetensors.index.json);
//   2. builds the output in a temporary directory beside OUT_DIR (".<name>.tmp.<pid>.<n>");
//   3. streams: tensors are read memory-mapped, one at a time, in input order; each quantized
//      weight is quantized by the layout (threads inside the tensor), measured
//      (error_stats.hpp) and checked for NaN/Inf (the measuring pass counts them; with
//      `measure` off a scan runs first), and written while it is measured, both on worker
//      threads while the next weight is quantized (write_behind.hpp: one weight's job in
//      flight, its output written in order); everything else is copied bit for bit; each input tensor's pages are
//      released once used, and each shard is committed as soon as it is full, so resident
//      memory follows the largest tensor, not the checkpoint;
//   4. writes config.json (IN's, with "quantization_config" set by the layout) and copies
//      IN's other small files (tokenizer, generation config; not other weight files);
//   5. fsyncs every file of the temporary directory and the directory, renames it onto
//      OUT_DIR (an existing OUT_DIR only with force: it is moved aside first and removed
//      after the rename), then fsyncs OUT_DIR's parent (durable.hpp).
// Any error removes the temporary directory; IN is only ever read. The bytes written do not
// depend on the thread count.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "fp8q/checkpoint/error_stats.hpp"
#include "fp8q/checkpoint/layout.hpp"
#include "fp8q/checkpoint/model_dir.hpp"

namespace fp8q::checkpoint {

// Bad options or an input that the options cannot apply to (exit code 2 in the CLI).
struct PipelineError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct QuantizeCheckpointOptions {
  std::string layout;                         // layout_names()
  LayoutOptions layout_options;
  std::vector<std::string> ignore;            // ECMAScript regexes, searched in each tensor name
  std::optional<std::filesystem::path> calib_data;  // safetensors with "<module>.input" samples
  std::string calib_method = "max";           // max percentile mse entropy
  bool force = false;                         // replace an existing OUT_DIR
  bool allow_nonfinite = false;               // pass NaN/Inf weights through instead of failing
  std::uint64_t max_shard_bytes = 5'000'000'000;  // Transformers' default "5GB"
  bool measure = true;                        // per-tensor error figures (costs one more read)
  bool require_exact = false;                 // a quantized input: fail (nothing written) where a value would change
};

// Why a tensor is kept as it is (nullopt: quantize it). Default rules: only 2-D F32/BF16/F16
// tensors whose name ends in ".weight" are candidates; embeddings (a name with "embed", "wte",
// "wpe"), lm_head, norms ("norm", "ln_"), and routers / MoE gates (module "gate", "router",
// "shared_expert_gate"; "gate_proj" is a linear layer and is quantized) are kept; then every
// `ignore` regex that matches; then the layout's own constraint (cannot_quantize).
std::optional<std::string> keep_reason(const TensorInfo& t, const std::vector<std::string>& ignore, const Layout& layout,
                                       const LayoutOptions& options);

// A weight of an already-quantized input converted into the layout (docs/checkpoints.md,
// "Quantized inputs").
struct Conversion {
  std::string from;                // the input's layout
  std::string path;                // "requantized" (the layout's quantizer on the exact values),
                                   // "re-encoded" (the exact values under scales the layout stores)
                                   // or "dequantized" (dequantize_checkpoint)
  std::uint64_t changed = 0;       // values that differ from the input's exact values (NaN equals NaN)
  double max_change = 0;           // the largest |difference| (Inf where a NaN appeared or went)
  std::uint64_t fp32_rounded = 0;  // input values fp32 cannot hold (quantized from their round-to-odd fp32)
  bool exact() const { return changed == 0; }
};

struct TensorReport {
  std::string name;
  bool quantized = false;
  std::string reason;                    // why kept
  DType dtype = DType::kU8;
  std::vector<std::uint64_t> shape;
  std::uint64_t in_bytes = 0, out_bytes = 0;
  std::vector<std::string> outputs;      // output tensor names
  ErrorStats stats;                      // quantized (and measured) only
  std::optional<Conversion> conversion;  // a quantized input's weight
};

struct Summary {
  std::size_t tensors = 0, quantized = 0, kept = 0;
  std::size_t converted = 0, converted_exact = 0;  // weights of a quantized input, and those without a change
  std::uint64_t in_bytes = 0, out_bytes = 0;
  ErrorStats stats;                      // over every quantized weight
  double seconds = 0;
  std::vector<std::string> files;        // written into OUT_DIR
};

struct Progress {
  std::size_t tensors_done = 0, tensors_total = 0;
  std::uint64_t bytes_done = 0, bytes_total = 0;   // input bytes
  const TensorReport* last = nullptr;
};
using ProgressFn = std::function<void(const Progress&)>;

struct QuantizeResult {
  std::vector<TensorReport> tensors;
  Summary summary;
};

// Throws PipelineError (options, OUT_DIR exists without force, OUT_DIR overlapping IN, NaN/Inf
// in a weight naming the tensor and element), FormatError (malformed input), std::system_error.
QuantizeResult quantize_checkpoint(const std::filesystem::path& in, const std::filesystem::path& out_dir,
                                   const QuantizeCheckpointOptions& options, const ProgressFn& progress = {});

// dequantize_checkpoint(IN, OUT_DIR): a quantized IN in high precision (docs/checkpoints.md,
// "Dequantized outputs"). Every quantized weight of IN (any layout quantize reads) becomes
// "<module>.weight" in `dtype`, each value decode(q) x scale (exact) rounded once, nearest-even;
// its scale tensors are dropped; every other tensor is copied bit for bit; config.json loses
// "quantization_config" and hf_quant_config.json is not copied. Each weight's report carries a
// Conversion with path "dequantized" and the values the dtype could not hold. The output is
// built and committed as quantize_checkpoint()'s (streamed, staged, durable; nothing written on
// an error). Throws PipelineError when IN holds no quantized weight, for a dtype other than
// BF16, F16, F32, a NaN/Inf value (unless allow_nonfinite), or require_exact and a change.
struct DequantizeCheckpointOptions {
  std::optional<DType> dtype;              // default: the model's (config.json's torch_dtype, else the
                                           // dtype of its first high-precision weight)
  int threads = 1;
  bool force = false;
  bool allow_nonfinite = false;
  bool require_exact = false;
  std::uint64_t max_shard_bytes = 5'000'000'000;
};
QuantizeResult dequantize_checkpoint(const std::filesystem::path& in, const std::filesystem::path& out_dir,
                                     const DequantizeCheckpointOptions& options, const ProgressFn& progress = {});

// How quantize reads a checkpoint (docs/checkpoints.md, "Quantized inputs"): its quantized
// layout (empty when it holds no quantized weight), what named it, and each tensor's role:
// "codes of M, W [out, in]", "scales of M" (a module's other tensors), or "high precision".
// Throws PipelineError for a quantized checkpoint fp8q cannot read, as quantize would.
struct CheckpointLayout {
  std::string layout;
  std::string described_by;
  std::vector<std::pair<std::string, std::string>> roles;  // (tensor, role), in the model's order
};
CheckpointLayout describe_checkpoint(const Model& model);

// verify OUT_DIR against IN: reads the layout from OUT_DIR's safetensors metadata, dequantizes
// every quantized weight and measures it against IN (a problem below 10 dB SQNR, or NaN:
// codes or scales that do not encode IN), checks that every other tensor of IN is in OUT_DIR
// bit for bit and that OUT_DIR holds nothing else.
struct VerifyResult {
  std::string layout;
  std::vector<TensorReport> tensors;
  Summary summary;
  std::vector<std::string> problems;     // empty when OUT_DIR is a faithful quantization of IN
};
VerifyResult verify_checkpoint(const std::filesystem::path& out_dir, const std::filesystem::path& in, int threads = 1);

}  // namespace fp8q::checkpoint
