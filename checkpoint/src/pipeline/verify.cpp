// verify_checkpoint(): OUT_DIR dequantized and compared with IN (pipeline.hpp).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "fp8q/checkpoint/pipeline.hpp"
#include "fp8q/numerics/convert.hpp"
#include "layouts/common.hpp"
#include "pipeline/shared.hpp"
#include "reencode/reencode.hpp"
#include "reencode/source.hpp"
#include "safetensors/text.hpp"

namespace fp8q::checkpoint {
using detail::quote;

// A quantized weight measured below this SQNR does not encode IN's values: every layout keeps
// FP8 elements (25-35 dB on real weights, ~31 dB on the example model), an all-zero or garbled
// code section measures ~0 dB, a wrong scale far below 0; non-finite values measure NaN or -Inf.
namespace {
constexpr double kMinSqnrDb = 10.0;

// config.json's quantization_config against the one quantize writes for the tensors stored:
// the loaders read the scheme, and which modules are not converted, from it alone.
std::vector<std::string> config_problems(const Layout& layout, const ConfigContext& ctx,
                                         const std::optional<std::string>& config_json, const std::filesystem::path& dir) {
  using Json = nlohmann::json;
  const std::string where = (dir / "config.json").string();
  if (!config_json) return {dir.string() + ": no config.json (the loaders read quantization_config from it)"};
  const Json c = Json::parse(*config_json, nullptr, false);
  if (c.is_discarded()) return {where + " is not valid JSON"};
  if (!c.is_object() || !c.contains("quantization_config") || !c["quantization_config"].is_object())
    return {where + " has no quantization_config object"};
  const Json& got = c["quantization_config"];
  const Json want = Json::parse(layout.quantization_config(ctx));
  std::vector<std::string> problems;
  for (const auto& [key, w] : want.items()) {
    const Json g = got.contains(key) ? got[key] : Json();
    if (g == w) continue;
    if ((key == "ignore" || key == "modules_to_not_convert") && g.is_array()) {
      std::set<std::string> listed;
      for (const auto& m : g)
        if (m.is_string()) listed.insert(m.get<std::string>());
      for (const auto& m : w)
        if (listed.erase(m.get<std::string>()) == 0)
          problems.push_back(where + ": quantization_config." + key + " does not list " + quote(m.get<std::string>()) +
                             ", which is not quantized: the loader would expect its quantized weight and scales");
      for (const auto& m : listed)
        problems.push_back(where + ": quantization_config." + key + " lists " + quote(m) +
                           (std::binary_search(ctx.quantized_modules.begin(), ctx.quantized_modules.end(), m)
                                ? ", which is stored quantized: the loader would read its codes as weights"
                                : ", which is no module of the checkpoint"));
      continue;
    }
    std::string shown = got.contains(key) ? g.dump() : std::string("absent");
    if (shown.size() > 200) shown = shown.substr(0, 200) + "...";
    problems.push_back(where + ": quantization_config." + key + " is " + shown + "; layout " + std::string(layout.name()) +
                       " writes " + w.dump() + " for the tensors stored");
  }
  for (const auto& [key, g] : got.items())
    if (!want.contains(key))
      problems.push_back(where + ": quantization_config." + key + " is not a key layout " + std::string(layout.name()) +
                         " writes (a loader may refuse or misread it)");
  return problems;
}

}  // namespace

VerifyResult verify_checkpoint(const std::filesystem::path& out_dir, const std::filesystem::path& in, int threads) {
  const auto start = std::chrono::steady_clock::now();
  if (threads < 1) throw PipelineError("--threads: must be at least 1, got " + std::to_string(threads));
  const Model out = Model::open(out_dir);
  const Model src = Model::open(in);
  VerifyResult r;
  const auto& meta = out.shards().front().metadata();
  const auto it = meta.find(std::string(pipeline::kMetaLayout));
  if (it == meta.end())
    throw PipelineError(out.shards().front().path().string() + ": __metadata__ has no " +
                        std::string(pipeline::kMetaLayout) + " (not written by fp8q quantize)");
  const Layout* layout = layout_named(it->second);
  if (layout == nullptr) throw PipelineError("__metadata__ " + std::string(pipeline::kMetaLayout) + " = " + quote(it->second) + " is not a layout");
  r.layout = it->second;
  LayoutOptions lo = pipeline::options_from_metadata(meta);
  lo.threads = threads;

  const TensorLookup lookup = [&](const std::string& name) -> StoredTensor {
    const ModelTensor* t = out.find(name);
    if (t == nullptr) return {};
    return {t->info, out.bytes(*t)};
  };
  std::set<std::string> accounted;
  ConfigContext ctx;  // what quantize would have written into config.json for these tensors
  ctx.options = lo;
  // A quantized IN (docs/checkpoints.md, "Quantized inputs"): its weights' exact values stand
  // for the original's, and its scale tensors are accounted with their weights.
  const auto source = reencode::quantized_source(src);
  const reencode::SourceModules found = source ? reencode::source_modules(*source, src) : reencode::SourceModules{};
  const auto& modules = found.by_codes;
  const std::set<std::string>& consumed = found.tensors;
  for (const ModelTensor& t : src.tensors()) {
    const TensorInfo& info = *t.info;
    TensorReport rep;
    rep.name = info.name;
    rep.dtype = info.dtype;
    rep.shape = info.shape;
    rep.in_bytes = info.byte_size();
    if (const auto m = modules.find(info.name); m != modules.end()) {
      const reencode::SourceModule& sm = m->second;
      rep.quantized = true;
      ctx.quantized_modules.push_back(sm.module);
      ctx.quantized_shapes[sm.module] = sm.shape;
      try {
        std::uint64_t rounded = 0;
        const std::vector<float> values =
            reencode::fp32_values(reencode::read_source(*source, src, sm), threads, rounded);
        const DequantView v = layout->read_back(sm.module, sm.shape, lookup, lo);
        rep.stats = measure_error(std::as_bytes(std::span<const float>(values)), DType::kF32, v, threads, lo.isa);
        if (rep.stats.count > 0 && !(rep.stats.sqnr_db() >= kMinSqnrDb))
          r.problems.push_back("tensor " + quote(info.name) + ": dequantized, it measures below " +
                               std::to_string(static_cast<int>(kMinSqnrDb)) + " dB SQNR against the input's values");
      } catch (const FormatError& e) {
        r.problems.push_back(std::string(e.what()));
      } catch (const std::invalid_argument& e) {
        r.problems.push_back("tensor " + quote(info.name) + ": " + e.what());
      }
      WeightRef probe;
      probe.name = sm.module + ".weight";
      probe.module = sm.module;
      probe.dtype = DType::kF32;
      probe.shape = sm.shape;
      for (const TensorSpec& spec : layout->plan(probe, lo))
        if (out.find(spec.name) != nullptr) accounted.insert(spec.name);
      for (const auto& c : layout->companion_names(sm.module))
        if (out.find(c) != nullptr) accounted.insert(c);
      r.summary.tensors++;
      r.summary.quantized++;
      r.summary.in_bytes += rep.in_bytes;
      r.summary.stats.merge(rep.stats);
      r.tensors.push_back(std::move(rep));
      continue;
    }
    if (consumed.count(info.name)) continue;  // a scale of a quantized IN weight
    const bool weight2d = info.shape.size() == 2 && info.name.ends_with(".weight") &&
                          (info.dtype == DType::kF32 || info.dtype == DType::kBF16 || info.dtype == DType::kF16);
    const std::string module = weight2d ? info.name.substr(0, info.name.size() - 7) : std::string();
    const auto companions = weight2d ? layout->companion_names(module) : std::vector<std::string>{};
    if (weight2d && out.find(companions.front()) != nullptr) {
      rep.quantized = true;
      ctx.quantized_modules.push_back(module);
      ctx.quantized_shapes[module] = info.shape;
      if (auto why = layout->cannot_quantize(info.shape, lo))
        r.problems.push_back("tensor " + quote(info.name) + " is stored quantized, but " + *why +
                             ": layout " + r.layout + " keeps such a weight in high precision");
      try {
        const DequantView v = layout->read_back(module, info.shape, lookup, lo);
        rep.stats = measure_error(src.bytes(t), info.dtype, v, threads, lo.isa);
        const double sqnr = rep.stats.sqnr_db();
        if (rep.stats.count > 0 && !(sqnr >= kMinSqnrDb)) {  // NaN too
          char db[32];
          std::snprintf(db, sizeof db, "%.2f", sqnr);
          r.problems.push_back("tensor " + quote(info.name) + ": dequantized, it measures " + db +
                               " dB SQNR against the input (below " + std::to_string(static_cast<int>(kMinSqnrDb)) +
                               " dB: its codes or scales do not encode the input's values)");
        }
      } catch (const FormatError& e) {
        r.problems.push_back(std::string(e.what()));
      } catch (const std::invalid_argument& e) {
        r.problems.push_back("tensor " + quote(info.name) + ": " + e.what());
      }
      accounted.insert(info.name);
      for (const auto& c : companions)
        if (out.find(c) != nullptr) accounted.insert(c);
      // a static activation scale: one positive finite value of the weight's dtype
      const std::string input_scale = module + ".input_scale";
      if (out.find(input_scale) != nullptr) {
        ctx.static_input_scales = true;
        try {
          const StoredTensor s = layouts::require(lookup, input_scale, info.dtype, {1});
          const float v = layouts::decode_scales(s.bytes, info.dtype)[0];
          if (!is_finite_positive(v))
            r.problems.push_back("tensor " + quote(input_scale) + " is " + float_text(v) +
                                 ": an input scale must be finite and positive");
        } catch (const FormatError& e) {
          r.problems.push_back(e.what());
        }
      }
    } else {
      rep.reason = "kept";
      if (info.shape.size() == 2 && info.name.ends_with(".weight"))
        ctx.kept_linear_modules.push_back(info.name.substr(0, info.name.size() - 7));
      const ModelTensor* o = out.find(info.name);
      if (o == nullptr) {
        r.problems.push_back("tensor " + quote(info.name) + " of the input is missing from the output");
      } else if (o->info->dtype != info.dtype || o->info->shape != info.shape) {
        r.problems.push_back("tensor " + quote(info.name) + " was not quantized but has changed dtype or shape");
      } else {
        const auto a = src.bytes(t), b = out.bytes(*o);
        if (a.size() != b.size() || (!a.empty() && std::memcmp(a.data(), b.data(), a.size()) != 0))
          r.problems.push_back("tensor " + quote(info.name) + " was not quantized but its bytes differ from the input");
      }
      accounted.insert(info.name);
    }
    r.summary.tensors++;
    (rep.quantized ? r.summary.quantized : r.summary.kept)++;
    r.summary.in_bytes += rep.in_bytes;
    r.summary.stats.merge(rep.stats);
    r.tensors.push_back(std::move(rep));
  }
  for (const ModelTensor& t : out.tensors())
    if (accounted.count(t.info->name) == 0)
      r.problems.push_back("tensor " + quote(t.info->name) + " of the output has no counterpart in the input");
  // a fused group's global scales (docs/checkpoints.md, "Fused layers"): vLLM loads the largest
  for (const auto& group : pipeline::fused_groups(ctx.quantized_modules)) {
    std::vector<std::pair<std::string, float>> scales;
    for (const std::string& m : group) {
      const std::string name = m + ".weight_global_scale";
      const StoredTensor t = lookup(name);
      if (t.info != nullptr && t.info->dtype == DType::kF32 && t.bytes.size() == 4)
        scales.emplace_back(name, layouts::decode_scales(t.bytes, DType::kF32)[0]);
    }
    if (scales.size() != group.size()) continue;  // no global scales (or a problem reported above)
    if (std::all_of(scales.begin(), scales.end(), [&](const auto& s) { return bits_of(s.second) == bits_of(scales[0].second); }))
      continue;
    std::string listed;
    for (const auto& [name, v] : scales) listed += (listed.empty() ? "" : ", ") + quote(name) + " " + float_text(v);
    r.problems.push_back("fused layers hold different global scales (" + listed + "): vLLM loads one for the fused "
                         "layer, the largest, and reads the others' values at the wrong magnitude");
  }
  pipeline::complete_config_context(ctx);
  for (auto& p : config_problems(*layout, ctx, out.config_json(), out_dir)) r.problems.push_back(std::move(p));
  r.summary.out_bytes = out.total_bytes();
  r.summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace fp8q::checkpoint
