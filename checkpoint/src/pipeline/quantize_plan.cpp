// quantize_checkpoint()'s first steps (pipeline/quantize_steps.hpp): the options, the input
// and the output's place, and the plan of every tensor and shard.
#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "fp8q/checkpoint/safetensors.hpp"
#include "pipeline/quantize_steps.hpp"
#include "pipeline/shared.hpp"
#include "reencode/reencode.hpp"
#include "safetensors/text.hpp"

namespace fp8q::checkpoint::pipeline {
namespace fs = std::filesystem;
using detail::quote;

namespace {

// OUT_DIR must not be IN, lie inside IN, or contain IN: the input is never written or removed.
void check_no_overlap(const fs::path& in, const fs::path& out) {
  const fs::path a = fs::weakly_canonical(in), b = fs::weakly_canonical(out);
  auto inside = [](const fs::path& x, const fs::path& dir) {
    const auto rel = x.lexically_relative(dir);
    return !rel.empty() && *rel.begin() != "..";
  };
  if (inside(b, a) || inside(a, b))
    throw PipelineError("output directory " + out.string() + " overlaps the input " + in.string() +
                        "; the input is never written");
}

// A dequantized weight's shape: W's, experts as their loader's [E, in, out].
std::vector<std::uint64_t> dequantized_shape(const Item& it) {
  const auto& s = it.weight.shape;
  return it.source && it.source->experts() ? std::vector<std::uint64_t>{s[0], s[2], s[1]} : s;
}

}  // namespace

void share_fused_global_scales(const Model& model, const std::optional<reencode::QuantizedSource>& source,
                               const Layout& layout, const LayoutOptions& options, QuantizePlan& plan) {
  std::map<std::string, Item*> weights;  // module -> its item, for the weights the layout quantizes
  for (Item& it : plan.items)
    if (!it.keep) weights[it.weight.module] = &it;
  std::vector<std::string> modules;
  for (const auto& [m, it] : weights) modules.push_back(m);
  for (const auto& group : fused_groups(modules)) {
    std::optional<float> shared;
    for (const std::string& module : group) {
      Item& it = *weights.at(module);
      WeightRef w = it.weight;
      std::vector<float> values;  // a quantized input's: its exact values as the conversion quantizes them
      std::optional<float> g;
      try {
        if (it.source) {
          std::uint64_t rounded = 0;
          values = reencode::fp32_values(reencode::read_source(*source, model, *it.source), options.threads, rounded,
                                         options.isa);
          w.data = std::as_bytes(std::span<const float>(values));
        } else {
          w.data = model.bytes(*it.tensor);
        }
        g = layout.global_scale_of(w, options);
      } catch (const std::invalid_argument& e) {
        throw PipelineError("tensor " + quote(w.name) + ": " + e.what());
      }
      model.release(*it.tensor);
      if (!g) return;  // the layout has no global scale
      shared = shared ? std::min(*shared, *g) : *g;
    }
    for (const std::string& module : group) weights.at(module)->weight.global_scale = shared;
  }
}

std::uint64_t spec_bytes(const TensorSpec& s) {
  std::uint64_t n = dtype_bytes(s.dtype);
  for (auto d : s.shape) n *= d;
  return n;
}

std::string shard_name(std::size_t i, std::size_t n) {
  if (n == 1) return std::string(kSingleFileName);
  char buf[64];
  std::snprintf(buf, sizeof buf, "model-%05zu-of-%05zu.safetensors", i + 1, n);
  return buf;
}

CheckedOptions check_options(const QuantizeCheckpointOptions& opt) {
  const Layout* layout = layout_named(opt.layout);
  if (layout == nullptr) {
    std::string what = "--layout: ";
    what.append(quote(opt.layout)).append(" is not one of");
    for (auto n : layout_names()) what.append(" ").append(n);
    throw PipelineError(what);
  }
  try {
    if (opt.layout_options.like == Producer::kModelOpt || opt.layout_options.like == Producer::kModelOptCuda)
      throw std::invalid_argument("--like " + std::string(producer_name(opt.layout_options.like)) +
                                  ": fp8q reads ModelOpt's checkpoints (modelopt-fp8, modelopt-nvfp4) and does not write "
                                  "them; its quantizer is QuantizeOptions::like and fp8q.quantize(..., like=\"modelopt\")");
    // ct-mxfp8 and ct-mxfp4 quantize with compressed-tensors' MX exponents already
    if (opt.layout_options.like == Producer::kCompressedTensors && !layout->name().starts_with("ct-"))
      throw std::invalid_argument("--like compressed-tensors applies to the compressed-tensors layouts (ct-fp8, "
                                  "ct-mxfp8, ct-mxfp4, ct-nvfp4), not " + std::string(layout->name()));
    if (opt.layout_options.element && layout->name() != "trn3-mx")
      throw std::invalid_argument("--elem applies to --layout trn3-mx only (" + std::string(layout->name()) +
                                  " fixes its element format)");
    layout->check_options(opt.layout_options);
    resolve_isa(opt.layout_options.isa, "LayoutOptions::isa");  // a forced path this CPU lacks
  } catch (const std::invalid_argument& e) {
    throw PipelineError(e.what());
  }
  const int threads = opt.layout_options.threads;
  if (threads < 1) throw PipelineError("--threads: must be at least 1, got " + std::to_string(threads));
  for (const auto& p : opt.ignore) {
    try {
      std::regex re(p, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      throw PipelineError("--ignore: " + quote(p) + " is not a valid regular expression (" + e.what() + ")");
    }
  }
  std::optional<calib::Method> method;
  if (opt.calib_data) {
    if (!layout->supports_input_scales())
      throw PipelineError("--calib-data: layout " + std::string(layout->name()) +
                          " has no static input scales (ct-fp8 has input_scale)");
    method = calib::parse_method(opt.calib_method);
    if (!method) throw PipelineError("--calib-method: " + quote(opt.calib_method) + " is not one of max percentile mse entropy");
  }
  if (opt.max_shard_bytes == 0) throw PipelineError("--max-shard-size must be positive");
  return {layout, threads, method, std::nullopt};
}

void check_output_name(const fs::path& out_dir, const fs::path& out_arg) {
  if (out_dir.filename() == "." || out_dir.filename() == "..")
    throw PipelineError("output directory " + out_arg.string() + " names an existing directory by '" +
                        out_dir.filename().string() + "'; give the new directory's own name");
}

void check_input_and_output(const fs::path& in, const fs::path& out_dir, bool force) {
  const fs::path parent = out_dir.parent_path().empty() ? fs::path(".") : out_dir.parent_path();
  if (!fs::is_directory(parent)) throw PipelineError("output directory " + out_dir.string() + ": " + parent.string() + " is not a directory");
  check_no_overlap(in, out_dir);
  if (fs::exists(fs::symlink_status(out_dir)) && !force)
    throw PipelineError("output directory " + out_dir.string() + " exists; --force replaces it");
}

QuantizePlan make_plan(const Model& model, const CheckedOptions& checked, const QuantizeCheckpointOptions& opt,
                       const std::optional<reencode::QuantizedSource>& source) {
  const Layout* layout = checked.layout;
  const int threads = checked.threads;
  const std::optional<calib::Method>& method = checked.method;
  std::vector<Item> items;
  items.reserve(model.tensors().size());
  std::map<std::string, std::string> produced_by;  // output name -> input tensor
  ConfigContext ctx;
  ctx.options = opt.layout_options;
  if (source && opt.calib_data)
    throw PipelineError("--calib-data: the input is already quantized (" + source->described_by +
                        "); static input scales are calibrated on a high-precision model");
  // A quantized input: its modules' tensors, found from their codes tensors.
  const reencode::SourceModules found = source ? reencode::source_modules(*source, model) : reencode::SourceModules{};
  const auto& modules = found.by_codes;
  const std::set<std::string>& consumed = found.tensors;  // every tensor of those modules
  for (const ModelTensor& t : model.tensors()) {
    Item it;
    it.tensor = &t;
    if (source) {
      const auto m = modules.find(t.info->name);
      if (m == modules.end()) {
        if (consumed.count(t.info->name)) continue;  // a scale, converted with its module's codes
        it.keep = "not quantized in the input";
        it.specs = {{t.info->name, t.info->dtype, t.info->shape}};
        if (t.info->shape.size() == 2 && t.info->name.ends_with(".weight"))
          ctx.kept_linear_modules.push_back(t.info->name.substr(0, t.info->name.size() - 7));
        items.push_back(std::move(it));
        continue;
      }
      const reencode::SourceModule& sm = m->second;
      if (sm.experts() && !checked.dequantize_to && !layout->stores_experts(opt.layout_options)) {
        LayoutOptions unpacked = opt.layout_options;
        unpacked.pack.reset();
        throw PipelineError("tensor " + quote(t.info->name) + " (" + std::string(source->layout->name()) + ") holds " +
                            std::to_string(sm.shape[0]) + " experts in one 3-D tensor, which layout " +
                            std::string(layout->name()) +
                            (layout->stores_experts(unpacked) ? " stores unpacked only (without --pack)"
                                                              : " does not store (trn3-mx without --pack does)") +
                            "; fp8q dequantize writes them in high precision");
      }
      if (auto why = layout ? layout->cannot_quantize(sm.shape, opt.layout_options) : std::nullopt)
        throw PipelineError("tensor " + quote(t.info->name) + " (" + std::string(source->layout->name()) +
                            ", W " + std::to_string(sm.shape[0]) + " x " + std::to_string(sm.shape[1]) +
                            ") cannot be converted: layout " + std::string(layout->name()) + " keeps such a weight in "
                            "high precision because " + *why +
                            (opt.layout_options.granularity == Granularity::block(128, 128) && layout->name() != "hf-fp8"
                                 ? " (--granularity row stores it per output channel)"
                                 : ""));
      for (const auto& p : opt.ignore)
        if (std::regex_search(sm.module + ".weight", std::regex(p, std::regex::ECMAScript)))
          throw PipelineError("--ignore " + quote(p) + " matches " + quote(sm.module + ".weight") +
                              ", which the input stores quantized: a quantized input's weights are all converted");
      it.source = sm;
      it.weight.name = sm.weight_name();
      it.weight.module = sm.module;
      it.weight.dtype = DType::kF32;
      it.weight.scale_dtype = source->model_dtype;
      it.weight.shape = sm.shape;
      ctx.quantized_modules.push_back(sm.module);
      ctx.quantized_shapes[sm.module] = sm.shape;
      items.push_back(std::move(it));
      continue;
    }
    it.keep = keep_reason(*t.info, opt.ignore, *layout, opt.layout_options);
    if (it.keep) {
      it.specs = {{t.info->name, t.info->dtype, t.info->shape}};
      // every kept 2-D weight is listed as not converted: fp8q cannot tell an nn.Embedding
      // from an nn.Linear by name (an "embedding_projection" is a Linear), and the loaders
      // ignore names that are not Linear layers
      if (t.info->shape.size() == 2 && t.info->name.ends_with(".weight"))
        ctx.kept_linear_modules.push_back(t.info->name.substr(0, t.info->name.size() - 7));
    } else {
      it.weight.name = t.info->name;
      it.weight.module = t.info->name.substr(0, t.info->name.size() - 7);
      it.weight.dtype = t.info->dtype;
      it.weight.shape = t.info->shape;
      ctx.quantized_modules.push_back(it.weight.module);
      ctx.quantized_shapes[it.weight.module] = it.weight.shape;
    }
    items.push_back(std::move(it));
  }
  if (opt.calib_data) {
    const Reader samples(*opt.calib_data);
    calib::CalibrationSpec spec;
    spec.method = *method;
    spec.threads = threads;
    for (Item& it : items) {
      if (it.keep) continue;
      const std::string key = it.weight.module + ".input";
      const TensorInfo* s = samples.find(key);
      if (s == nullptr)
        throw PipelineError("--calib-data " + opt.calib_data->string() + ": no tensor " + quote(key) +
                            " (samples of the input of " + quote(it.weight.module) + ")");
      if (s->dtype != DType::kF32 && s->dtype != DType::kBF16 && s->dtype != DType::kF16)
        throw PipelineError("--calib-data: tensor " + quote(key) + " is " + std::string(dtype_name(s->dtype)) + ", not F32, BF16 or F16");
      const Format& f = s->dtype == DType::kF32 ? kF32 : s->dtype == DType::kBF16 ? kBF16 : kF16;
      const auto cal = calib::calibrate(samples.bytes(*s), f, spec);
      if (cal.empty() || cal[0].count == 0)
        throw PipelineError("--calib-data: tensor " + quote(key) + " holds no finite sample");
      it.weight.input_amax = cal[0].amax;
    }
    ctx.static_input_scales = true;
  }
  for (Item& it : items) {
    if (!it.keep)
      it.specs = checked.dequantize_to ? std::vector<TensorSpec>{{it.weight.name, *checked.dequantize_to, dequantized_shape(it)}}
                                       : layout->plan(it.weight, opt.layout_options);
    for (const auto& s : it.specs) {
      const auto [pos, fresh] = produced_by.emplace(s.name, it.tensor->info->name);
      if (!fresh)
        throw PipelineError("output tensor " + quote(s.name) + " would be written for both " + quote(pos->second) +
                            " and " + quote(it.tensor->info->name));
      it.out_bytes += spec_bytes(s);
    }
  }
  complete_config_context(ctx);

  // Shards: consecutive items, a new shard when the next item would pass the limit.
  std::vector<std::pair<std::size_t, std::size_t>> shards;  // [begin, end) of items
  {
    std::size_t begin = 0;
    std::uint64_t size = 0;
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (i > begin && size + items[i].out_bytes > opt.max_shard_bytes) {
        shards.emplace_back(begin, i);
        begin = i;
        size = 0;
      }
      size += items[i].out_bytes;
    }
    shards.emplace_back(begin, items.size());
  }
  return {std::move(items), std::move(ctx), std::move(shards), source.has_value()};
}

}  // namespace fp8q::checkpoint::pipeline
