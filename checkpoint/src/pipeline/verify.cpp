// verify_checkpoint(): OUT_DIR dequantized and compared with IN (pipeline.hpp).
#include <chrono>
#include <cstdio>
#include <cstring>
#include <set>

#include <nlohmann/json.hpp>

#include "fp8q/checkpoint/pipeline.hpp"
#include "fp8q/numerics/convert.hpp"
#include "layouts/common.hpp"
#include "pipeline/shared.hpp"
#include "safetensors/text.hpp"

namespace fp8q::checkpoint {
using detail::quote;

// A quantized weight measured below this SQNR does not encode IN's values: every layout keeps
// FP8 elements (25-35 dB on real weights, ~31 dB on the example model), an all-zero or garbled
// code section measures ~0 dB, a wrong scale far below 0; non-finite values measure NaN or -Inf.
constexpr double kMinSqnrDb = 10.0;


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
  for (const ModelTensor& t : src.tensors()) {
    const TensorInfo& info = *t.info;
    TensorReport rep;
    rep.name = info.name;
    rep.dtype = info.dtype;
    rep.shape = info.shape;
    rep.in_bytes = info.byte_size();
    const bool weight2d = info.shape.size() == 2 && info.name.ends_with(".weight") &&
                          (info.dtype == DType::kF32 || info.dtype == DType::kBF16 || info.dtype == DType::kF16);
    const std::string module = weight2d ? info.name.substr(0, info.name.size() - 7) : std::string();
    const auto companions = weight2d ? layout->companion_names(module) : std::vector<std::string>{};
    if (weight2d && out.find(companions.front()) != nullptr) {
      rep.quantized = true;
      try {
        const DequantView v = layout->read_back(module, info.shape, lookup, lo);
        rep.stats = measure_error(src.bytes(t), info.dtype, v, threads);
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
  // the loaders read the quantization from config.json, not from the shards' metadata
  const std::string want_method = nlohmann::json::parse(layout->quantization_config(ConfigContext{}))["quant_method"];
  if (!out.config_json()) {
    r.problems.push_back(out_dir.string() + ": no config.json (the loaders read quantization_config from it)");
  } else {
    const auto c = nlohmann::json::parse(*out.config_json());
    if (!c.is_object() || !c.contains("quantization_config") || !c["quantization_config"].is_object()) {
      r.problems.push_back(out_dir.string() + "/config.json has no quantization_config object");
    } else {
      const auto& q = c["quantization_config"];
      const std::string method = q.contains("quant_method") ? q["quant_method"].dump() : std::string("absent");
      if (method != nlohmann::json(want_method).dump())
        r.problems.push_back(out_dir.string() + "/config.json: quantization_config.quant_method is " + method +
                             "; layout " + r.layout + " writes \"" + want_method + "\"");
    }
  }
  r.summary.out_bytes = out.total_bytes();
  r.summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace fp8q::checkpoint
