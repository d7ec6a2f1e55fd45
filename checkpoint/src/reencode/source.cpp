#include "reencode/source.hpp"

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "fp8q/checkpoint/pipeline.hpp"
#include "fp8q/numerics/convert.hpp"
#include "layouts/common.hpp"
#include "pipeline/shared.hpp"
#include "safetensors/text.hpp"

namespace fp8q::checkpoint::reencode {
using detail::quote;
using Json = nlohmann::json;

namespace {

const char* const kReads =
    "fp8q reads quant_method \"fp8\" (DeepSeek-V3 / Transformers fine-grained FP8, 128x128 blocks), "
    "\"compressed-tensors\" (float-quantized, mxfp8-quantized, mxfp4-pack-quantized, nvfp4-pack-quantized), "
    "\"mxfp4\" (gpt-oss's experts), \"fbgemm_fp8\" (per-channel FP8), ModelOpt's FP8 and NVFP4 and fp8q's own layouts";

[[noreturn]] void refuse(const std::string& what) { throw PipelineError(what + "; " + kReads); }

// config.json's quantization_config, when it has one.
std::optional<Json> quantization_config(const std::optional<std::string>& config_json) {
  if (!config_json) return std::nullopt;
  const Json c = Json::parse(*config_json, nullptr, false);
  if (!c.is_object() || !c.contains("quantization_config")) return std::nullopt;
  if (!c["quantization_config"].is_object()) refuse("config.json: quantization_config is not an object");
  return c["quantization_config"];
}

std::string text_of(const Json& q, const char* key) {
  return q.contains(key) && q[key].is_string() ? q[key].get<std::string>() : std::string();
}

QuantizedSource from_fp8_config(const Json& q) {
  // DeepSeek-V3's config and Transformers' FineGrainedFP8Config: weight_block_size [128, 128],
  // fmt "e4m3", activation_scheme "dynamic"; DeepSeek-V3.1 adds scale_fmt "ue8m0".
  if (!q.contains("weight_block_size") || q["weight_block_size"] != Json::array({128, 128}))
    refuse("config.json: quantization_config.weight_block_size is " +
           (q.contains("weight_block_size") ? q["weight_block_size"].dump() : std::string("absent")) +
           "; quant_method \"fp8\" is read with 128x128 blocks");
  if (const std::string fmt = text_of(q, "fmt"); !fmt.empty() && fmt != "e4m3")
    refuse("config.json: quantization_config.fmt is " + quote(fmt) + ", not \"e4m3\"");
  if (const std::string act = text_of(q, "activation_scheme"); !act.empty() && act != "dynamic")
    refuse("config.json: quantization_config.activation_scheme is " + quote(act) +
           "; static activation scales are not converted");
  QuantizedSource s;
  s.layout = layout_named("hf-fp8");
  s.described_by = "config.json quant_method \"fp8\", weight_block_size [128, 128]";
  if (q.contains("scale_fmt") && !q["scale_fmt"].is_null()) {
    if (text_of(q, "scale_fmt") != "ue8m0")
      refuse("config.json: quantization_config.scale_fmt is " + q["scale_fmt"].dump() + ", not \"ue8m0\"");
    s.pow2_scales = true;
    s.described_by += ", scale_fmt \"ue8m0\"";
  }
  return s;
}

QuantizedSource from_compressed_tensors(const Json& q) {
  const std::string format = text_of(q, "format");
  const Json* weights = nullptr;
  const Json* inputs = nullptr;
  if (q.contains("config_groups") && q["config_groups"].is_object())
    for (const auto& [name, g] : q["config_groups"].items()) {
      if (!g.is_object()) continue;
      if (weights != nullptr) refuse("config.json: quantization_config.config_groups has more than one group");
      if (g.contains("weights") && g["weights"].is_object()) weights = &g["weights"];
      if (g.contains("input_activations") && g["input_activations"].is_object()) inputs = &g["input_activations"];
    }
  if (weights == nullptr) refuse("config.json: quantization_config.config_groups has no group with weights");
  if (inputs != nullptr && inputs->contains("dynamic") && (*inputs)["dynamic"] == false)
    refuse("config.json: the input activations have static scales (input_scale), which are not converted");
  QuantizedSource s;
  s.described_by = "config.json quant_method \"compressed-tensors\", format " + quote(format);
  if (format == "float-quantized") {
    s.layout = layout_named("ct-fp8");
    const std::string strategy = text_of(*weights, "strategy");
    const auto g = parse_ct_strategy(strategy);
    if (!g) refuse("config.json: the weights' strategy " + quote(strategy) + " is not tensor, channel or block");
    if (*g == layouts::kBlock128x128 &&
        (!weights->contains("block_structure") || (*weights)["block_structure"] != Json::array({128, 128})))
      refuse("config.json: block strategy with block_structure other than [128, 128]");
    s.options.granularity = *g;
  } else if (format == "mxfp8-quantized") {
    s.layout = layout_named("ct-mxfp8");
  } else if (format == "mxfp4-pack-quantized") {
    s.layout = layout_named("ct-mxfp4");
  } else if (format == "nvfp4-pack-quantized") {
    s.layout = layout_named("ct-nvfp4");
  } else {
    refuse("config.json: quantization_config.format " + quote(format) + " is not read");
  }
  return s;
}

// The dtype the model computes in: config.json's "torch_dtype" (or "dtype"), else the dtype of
// its first floating 2-D tensor, else BF16.
DType model_dtype(const Model& model) {
  if (model.config_json()) {
    const Json c = Json::parse(*model.config_json(), nullptr, false);
    for (const char* key : {"torch_dtype", "dtype"}) {
      const std::string d = c.is_object() ? text_of(c, key) : std::string();
      if (d == "bfloat16") return DType::kBF16;
      if (d == "float16") return DType::kF16;
      if (d == "float32") return DType::kF32;
    }
  }
  for (const ModelTensor& t : model.tensors())
    if (t.info->shape.size() == 2 &&
        (t.info->dtype == DType::kBF16 || t.info->dtype == DType::kF16 || t.info->dtype == DType::kF32))
      return t.info->dtype;
  return DType::kBF16;
}

// NVIDIA ModelOpt's export: hf_quant_config.json's "quantization" (or config.json's
// quant_method "modelopt"), whose quant_algo names the format.
QuantizedSource from_modelopt(const Json& q, const std::string& where) {
  const std::string algo = text_of(q, "quant_algo");
  // e4m3fn weights per tensor, output channel or 128x128 block
  const std::map<std::string, Granularity> fp8 = {{"FP8", Granularity::tensor()},
                                                  {"FP8_PER_CHANNEL_PER_TOKEN", Granularity::row()},
                                                  {"fp8_pb_wo", Granularity::block(128, 128)}};
  if (const auto g = fp8.find(algo); g != fp8.end()) {
    QuantizedSource s;
    s.layout = input_layout_named("modelopt-fp8");
    s.options.granularity = g->second;
    s.described_by = where + " quant_algo " + quote(algo) + " (ModelOpt)";
    return s;
  }
  if (algo != "NVFP4")
    refuse(where + ": quant_algo is " + quote(algo.empty() ? "?" : algo) +
           "; ModelOpt's FP8 (per tensor, FP8_PER_CHANNEL_PER_TOKEN, fp8_pb_wo) and NVFP4 are read");
  if (q.contains("group_size") && q["group_size"] != 16)
    refuse(where + ": group_size is " + q["group_size"].dump() + ", not 16");
  QuantizedSource s;
  s.layout = input_layout_named("modelopt-nvfp4");
  s.described_by = where + " quant_algo \"NVFP4\" (ModelOpt)";
  return s;
}

}  // namespace

std::optional<QuantizedSource> layout_from_texts(const std::map<std::string, std::string>& meta,
                                                 const std::optional<std::string>& config_json,
                                                 const std::optional<std::string>& hf_quant_config_json) {
  if (auto it = meta.find(std::string(pipeline::kMetaLayout)); it != meta.end()) {
    QuantizedSource s;
    s.layout = layout_named(it->second);
    if (s.layout == nullptr) throw PipelineError("__metadata__ " + std::string(pipeline::kMetaLayout) + " = " + quote(it->second) + " is not a layout");
    s.options = pipeline::options_from_metadata(meta);
    s.described_by = "__metadata__ " + std::string(pipeline::kMetaLayout) + " = " + quote(it->second);
    if (s.options.pack) {
      const auto q = quantization_config(config_json);
      if (!q || !q->contains("in_features") || !(*q)["in_features"].is_object())
        throw PipelineError("config.json: quantization_config.in_features is missing: a packed trn3-mx weight needs its in_features");
      for (const auto& [m, k] : (*q)["in_features"].items())
        if (k.is_number_unsigned()) s.in_features[m] = k.get<std::uint64_t>();
    }
    return s;
  }
  if (hf_quant_config_json) {
    const Json h = Json::parse(*hf_quant_config_json, nullptr, false);
    if (!h.is_object() || !h.contains("quantization") || !h["quantization"].is_object())
      refuse("hf_quant_config.json has no \"quantization\" object");
    return from_modelopt(h["quantization"], "hf_quant_config.json");
  }
  if (const auto q = quantization_config(config_json)) {
    const std::string method = text_of(*q, "quant_method");
    if (method == "modelopt") return from_modelopt(*q, "config.json quant_method \"modelopt\",");
    if (method == "fp8") return from_fp8_config(*q);
    if (method == "compressed-tensors") return from_compressed_tensors(*q);
    if (method == "fbgemm_fp8") {  // Llama 3.1 405B FP8: weight_scale [out, 1] F32
      QuantizedSource s;
      s.layout = input_layout_named("fbgemm-fp8");
      s.options.granularity = Granularity::row();
      s.described_by = "config.json quant_method \"fbgemm_fp8\"";
      return s;
    }
    if (method == "mxfp4") {  // gpt-oss: the experts' *_blocks / *_scales
      QuantizedSource s;
      s.layout = input_layout_named("gpt-oss-mxfp4");
      s.described_by = "config.json quant_method \"mxfp4\" (gpt-oss experts)";
      return s;
    }
    refuse("config.json: quantization_config.quant_method is " + quote(method.empty() ? "?" : method));
  }
  return std::nullopt;
}

namespace {

std::optional<QuantizedSource> read_layout(const Model& model) {
  std::optional<std::string> hf_quant;
  if (model.is_directory() && std::filesystem::exists(model.path() / "hf_quant_config.json"))
    hf_quant = read_text_file(model.path() / "hf_quant_config.json", 1 << 20);
  if (auto s = layout_from_texts(model.shards().front().metadata(), model.config_json(), hf_quant)) return s;
  for (const ModelTensor& t : model.tensors())
    if (t.info->dtype == DType::kF8_E4M3 || t.info->dtype == DType::kF8_E5M2 || t.info->dtype == DType::kF8_E8M0)
      throw PipelineError("tensor " + quote(t.info->name) + " is " + std::string(dtype_name(t.info->dtype)) +
                          " and config.json has no quantization_config: the layout of its scales is unknown");
  return std::nullopt;
}

}  // namespace

std::optional<QuantizedSource> quantized_source(const Model& model) {
  std::optional<QuantizedSource> s = read_layout(model);
  if (s) s->model_dtype = model_dtype(model);
  return s;
}

std::optional<SourceModule> source_module(const QuantizedSource& s, const Model& model, const ModelTensor& t) {
  const std::string& name = t.info->name;
  const auto dot = name.rfind('.');
  if (dot == std::string::npos) return std::nullopt;
  SourceModule m;
  // "<module>.weight" and the like; gpt-oss's experts are "<module>_blocks"
  const bool blocks = name.ends_with("_blocks");
  m.module = blocks ? name.substr(0, name.size() - 7) : name.substr(0, dot);
  WeightRef probe;
  probe.module = m.module;
  probe.name = m.module + ".weight";
  probe.dtype = DType::kF32;
  // W's shape: the one whose planned codes tensor is the stored one.
  const auto& st = t.info->shape;
  std::vector<std::vector<std::uint64_t>> shapes;
  if (st.size() == 2) shapes = {{st[0], st[1]}, {st[0], st[1] * 2}};
  if (st.size() == 3) shapes = {{st[0], st[1], st[2]}, {st[0], st[1], st[2] * 2}};  // experts (trn3-mx)
  if (st.size() == 4 && s.in_features.count(m.module)) shapes = {{st[2], s.in_features.at(m.module)}};
  if (st.size() == 4 && blocks) shapes = {{st[0], st[1], st[2] * 32}};  // E experts [N, K]
  for (const auto& shape : shapes) {
    probe.shape = shape;
    const auto specs = s.layout->plan(probe, s.options);
    if (specs[0].name != name || specs[0].dtype != t.info->dtype || specs[0].shape != st) continue;
    m.shape = shape;
    m.tensors.push_back(&t);
    for (std::size_t i = 1; i < specs.size(); ++i) {
      const ModelTensor* c = model.find(specs[i].name);
      if (c == nullptr)
        throw PipelineError("tensor " + quote(name) + " is " + std::string(dtype_name(t.info->dtype)) + " codes of " +
                            std::string(s.layout->name()) + " (" + s.described_by + ") but " + quote(specs[i].name) +
                            " is missing: its values cannot be read");
      m.tensors.push_back(c);
    }
    if (const ModelTensor* in = model.find(m.module + ".input_scale")) {
      // ModelOpt's FP8 and NVFP4 quantize activations by a static scale; the weight converts without it
      if (!s.layout->name().starts_with("modelopt-"))
        throw PipelineError("tensor " + quote(m.module + ".input_scale") + ": static activation scales are not converted");
      m.tensors.push_back(in);
    }
    // ModelOpt's FP8 KV cache (kv_cache_quant_algo "FP8") keeps its scales on k_proj and v_proj;
    // the target layouts hold no KV-cache quantization, so they go with the weight too
    if (s.layout->name().starts_with("modelopt-"))
      for (const char* kv : {".k_scale", ".v_scale"})
        if (const ModelTensor* t = model.find(m.module + kv)) m.tensors.push_back(t);
    return m;
  }
  // A codes-like tensor that matches no shape of the layout is the layout's error, not a kept tensor.
  if (name.ends_with(".weight") && (t.info->dtype == DType::kF8_E4M3 || t.info->dtype == DType::kF8_E5M2))
    throw PipelineError("tensor " + quote(name) + " is " + std::string(dtype_name(t.info->dtype)) +
                        " but not a weight of layout " + std::string(s.layout->name()) + " (" + s.described_by + ")");
  return std::nullopt;
}

SourceModules source_modules(const QuantizedSource& source, const Model& model) {
  SourceModules out;
  for (const ModelTensor& t : model.tensors())
    if (auto m = source_module(source, model, t)) {
      for (const ModelTensor* c : m->tensors) out.tensors.insert(c->info->name);
      out.by_codes.emplace(t.info->name, std::move(*m));
    }
  return out;
}

DequantView read_source(const QuantizedSource& s, const Model& model, const SourceModule& m) {
  const TensorLookup lookup = [&](const std::string& name) -> StoredTensor {
    const ModelTensor* t = model.find(name);
    if (t == nullptr) return {};
    return {t->info, model.bytes(*t)};
  };
  DequantView v = s.layout->read_back(m.module, m.shape, lookup, s.options);
  if (s.pow2_scales && !v.mx)
    for (std::size_t b = 0; b < v.scale_inv.size(); ++b) {
      int e = 0;
      const float f = v.scale_inv[b];
      if (!(f > 0) || !std::isfinite(f) || std::frexp(f, &e) != 0.5f)
        throw PipelineError("tensor " + quote(m.tensors[1]->info->name) + ": scale " + std::to_string(b) + " is " +
                            float_text(f) + ", not a power of two, where " + s.described_by + " promises them");
    }
  return v;
}

}  // namespace fp8q::checkpoint::reencode

namespace fp8q::checkpoint {

CheckpointLayout describe_checkpoint(const Model& model) {
  CheckpointLayout d;
  const auto source = reencode::quantized_source(model);
  std::map<std::string, std::string> role;
  if (source) {
    d.layout = std::string(source->layout->name());
    d.described_by = source->described_by;
    for (const auto& [codes, m] : reencode::source_modules(*source, model).by_codes) {
      std::string dims;
      for (const auto d : m.shape) dims += (dims.empty() ? "" : ", ") + std::to_string(d);
      role[codes] = "codes of " + m.module + (m.shape.size() == 3 ? ", experts W [" : ", W [") + dims + "]";
      for (std::size_t i = 1; i < m.tensors.size(); ++i) role[m.tensors[i]->info->name] = "scales of " + m.module;
    }
  }
  for (const ModelTensor& t : model.tensors()) {
    const auto r = role.find(t.info->name);
    d.roles.emplace_back(t.info->name, r != role.end() ? r->second : std::string("high precision"));
  }
  return d;
}

}  // namespace fp8q::checkpoint
