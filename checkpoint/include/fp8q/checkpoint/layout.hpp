// fp8q/checkpoint/layout.hpp: one checkpoint layout = how a quantized linear weight is stored
// (tensor names, dtypes, scale shapes) and what config.json says about it. One file per
// layout in checkpoint/src/layouts/; the choice among them is made in one place,
// layout_named(). Each layout's file header names the public definition it follows.
//
// Every layout here stores a weight W [out, in] (x = W's element in the input dtype) as codes
// q and a dequantization multiplier s per block: x ~= fp32(decode(q) * s).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fp8q/checkpoint/safetensors.hpp"
#include "fp8q/numerics/block_scaled.hpp"
#include "fp8q/numerics/format.hpp"
#include "fp8q/numerics/isa.hpp"
#include "fp8q/quant/granularity.hpp"
#include "fp8q/quant/producer.hpp"
#include "fp8q/quant/trainium3_layout.hpp"

namespace fp8q::checkpoint {

// The weight granularities of ct-fp8 and trn2 (quant/granularity.hpp): tensor, row (one scale
// per output channel) or block128x128. compressed-tensors' words for them (tensor, channel,
// block) appear only in the JSON those layouts write and read, and in `--strategy`:
std::optional<Granularity> parse_ct_strategy(std::string_view word);  // tensor channel block
std::string_view ct_strategy(const Granularity& g);                   // the inverse ("?" for others)


struct LayoutOptions {
  std::optional<Granularity> granularity;  // ct-fp8 and trn2 (default: row); others refuse it
  std::optional<trn3::KLayout> pack;       // trn3-mx only: pre-pack for nc_matmul_mx
  std::optional<FormatId> element;         // trn3-mx only: e4m3fn (MXFP8, default) or e2m1 (MXFP4)
  Producer like = Producer::kFp8q;         // whose quantizer (quant/producer.hpp); kCompressedTensors:
                                           // ct-fp8, ct-mxfp8, ct-mxfp4
  int threads = 1;                         // results do not depend on it
  std::optional<Isa> isa;                  // force a kernel path (fp8q/numerics/isa.hpp), as
                                           // BulkOptions::isa; default active_isa(); same results
};

// A weight to quantize: a 2-D tensor of F32, BF16 or F16.
struct WeightRef {
  std::string name;      // "<module>.weight"
  std::string module;    // "<module>"
  DType dtype = DType::kBF16;
  std::vector<std::uint64_t> shape;  // [out, in] (experts [E, out, in]: Layout::stores_experts)
  std::span<const std::byte> data;   // row-major, little-endian
  std::optional<float> input_amax;   // calibrated amax of the module's input (static scheme)
  std::optional<DType> scale_dtype;  // ct-fp8's stored scale dtype where it is not `dtype`: a
                                     // converted weight's values are F32, its model's dtype may
                                     // be BF16, which compressed-tensors casts the scales to
  std::optional<float> global_scale;  // the global scale to quantize with (a layout that has one),
                                      // in place of the weight's own: its fused group's
};

struct OutputTensor {
  TensorSpec spec;
  std::vector<std::byte> bytes;
};

// The stored codes and scales of one weight, seen as the logical [rows, cols] matrix W:
// element (r, c) dequantizes to fp32(decode(codes[r * cols + c]) * scale(r, c)).
struct DequantView {
  FormatId element = FormatId::kE4M3FN;
  std::size_t rows = 0, cols = 0;
  std::vector<std::uint8_t> codes;
  bool mx = false;
  // not mx: one multiplier per block of `grid`
  BlockGrid grid;
  std::vector<float> scale_inv;
  // mx: E8M0 codes [rows, groups_per_row]; column c's group is group_of_col[c]
  std::vector<std::uint8_t> e8m0;
  std::size_t groups_per_row = 0;
  std::vector<std::uint32_t> group_of_col;
  // A second multiplier of the whole weight, for a layout read as an input only (ModelOpt
  // NVFP4's weight_scale_2): the value is decode(q) * scale(r, c) * global_scale, exact in fp64.
  // Every layout fp8q writes has 1, and only the reading of quantized inputs uses it.
  double global_scale = 1.0;

  float scale(std::size_t r, std::size_t c) const;
};

struct QuantizedWeight {
  std::vector<OutputTensor> tensors;  // in the order plan() gave
  DequantView view;
};

// Reads one stored tensor back (from the quantized checkpoint): nullptr when absent.
struct StoredTensor {
  const TensorInfo* info = nullptr;
  std::span<const std::byte> bytes;
};
using TensorLookup = std::function<StoredTensor(const std::string& name)>;

// What config.json's quantization_config is built from.
struct ConfigContext {
  LayoutOptions options;
  std::vector<std::string> quantized_modules;  // sorted
  std::map<std::string, std::vector<std::uint64_t>> quantized_shapes;  // module -> W's [out, in]
  std::vector<std::string> kept_linear_modules; // 2-D ".weight" tensors left unquantized and
                                                // "lm_head" (stored or tied), sorted
  bool static_input_scales = false;            // input_scale tensors were written
};

class Layout {
 public:
  virtual ~Layout() = default;
  virtual std::string_view name() const = 0;
  virtual std::string_view summary() const = 0;
  // Throws std::invalid_argument when the options do not apply to this layout.
  virtual void check_options(const LayoutOptions& options) const = 0;
  // The weight granularities `options.granularity` may name; empty when the layout fixes its
  // own (MX and NVFP4 groups) and refuses the option.
  virtual std::vector<Granularity> granularities() const { return {}; }
  // Why this weight is kept as it is (nullopt: it can be quantized): a shape the layout's
  // loaders would misread or refuse, e.g. an MX layout and a last dimension that is not a
  // multiple of 32. verify reports a stored weight of such a shape as a problem.
  virtual std::optional<std::string> cannot_quantize(const std::vector<std::uint64_t>& shape,
                                                     const LayoutOptions& options) const;
  // The output tensors of a weight, known before its data is read (the writer needs every
  // header up front). Deterministic in (weight name, dtype, shape, options).
  virtual std::vector<TensorSpec> plan(const WeightRef& w, const LayoutOptions& options) const = 0;
  // Quantizes (the tensors match plan() exactly). Bits do not depend on options.threads.
  virtual QuantizedWeight quantize(const WeightRef& w, const LayoutOptions& options) const = 0;
  // The tensors (plan()'s, in its order) that hold `view`: codes and scales in the structure
  // quantize() gives w in QuantizedWeight::view (element format, scale grid or MX groups). How a
  // quantized input is re-encoded without rounding (docs/checkpoints.md, "Quantized inputs").
  // std::invalid_argument when this layout cannot hold the view exactly (a scale its scale
  // dtype cannot represent, a structure it does not store).
  virtual std::vector<OutputTensor> store(const WeightRef& w, const DequantView& view, const LayoutOptions& options) const;
  // The weight's stored tensors read back (for verify); the original [out, in] shape is given.
  // Throws FormatError naming the tensor when a tensor is missing or has the wrong dtype/shape.
  virtual DequantView read_back(const std::string& module, const std::vector<std::uint64_t>& shape,
                                const TensorLookup& lookup, const LayoutOptions& options) const = 0;
  // Names of the stored tensors of a module other than "<module>.weight" (scales, input scale).
  virtual std::vector<std::string> companion_names(const std::string& module) const = 0;
  // The "quantization_config" object of config.json, as JSON text.
  virtual std::string quantization_config(const ConfigContext& context) const = 0;
  // Whether ct-fp8-style static input scales (from --calib-data) are supported.
  virtual bool supports_input_scales() const { return false; }
  // Whether the layout stores a stack of experts, WeightRef::shape [E, out, in] (a quantized
  // input's, gpt-oss's), each expert as its [out, in] weight; else only 2-D weights.
  virtual bool stores_experts(const LayoutOptions& options) const;
  // The global scale quantize() would give w (w.global_scale unset), for a layout with one
  // (NVFP4's); nullopt otherwise. The layers a server fuses share the smallest of theirs
  // (WeightRef::global_scale; docs/checkpoints.md, "Fused layers").
  virtual std::optional<float> global_scale_of(const WeightRef& w, const LayoutOptions& options) const;
};

// hf-fp8 ct-fp8 ct-mxfp8 ct-mxfp4 ct-nvfp4 trn2 trn3-mx; nullptr for anything else.
const Layout* layout_named(std::string_view name);
// A layout fp8q reads as an input but does not write (its quantize() and store() throw):
// "modelopt-nvfp4", "gpt-oss-mxfp4" (whose W is a [E, N, K] stack of experts), "fbgemm-fp8";
// nullptr for anything else.
const Layout* input_layout_named(std::string_view name);
std::vector<std::string_view> layout_names();

}  // namespace fp8q::checkpoint
