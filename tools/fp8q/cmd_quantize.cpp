// fp8q quantize IN OUT_DIR --layout L [--granularity tensor|row|block128x128] [--pack wrapX|1x32]
//                [--like fp8q|compressed-tensors|modelopt]
//                [--ignore REGEX]... [--calib-data FILE --calib-method M] [--threads N]
//                [--max-shard-size BYTES] [--allow-nonfinite] [--require-exact] [--force] [--json]
//   IN may be quantized already (docs/checkpoints.md, "Quantized inputs"): its weights are converted.
// fp8q dequantize IN OUT_DIR [--dtype bf16|f16|f32] [--threads N] [--max-shard-size BYTES]
//                [--allow-nonfinite] [--require-exact] [--force] [--json]
//   A quantized IN in high precision (docs/checkpoints.md, "Dequantized outputs").
// fp8q verify OUT_DIR --against IN [--threads N] [--json]
// fp8q inspect FILE|DIR [--json]      (with the layout quantize reads it as, and each tensor's role)
// A checkpoint (a .safetensors file or a Hugging Face model directory) into an FP8/MXFP8
// layout (checkpoint/pipeline.hpp), and the checks around it. Progress goes to stderr (a bar
// on a terminal, one line per tensor otherwise); the report goes to stdout.
#include <unistd.h>

#include <algorithm>
#include <map>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "fp8q/checkpoint/pipeline.hpp"
#include "args.hpp"
#include "verbs.hpp"

namespace fp8q::cli {
namespace {

namespace ck = fp8q::checkpoint;
using Json = nlohmann::ordered_json;

// JSON for the terminal. File and tensor names can be any bytes, and nlohmann throws on one
// that is not UTF-8, which would fail a verb after its output was committed: such bytes are
// printed as U+FFFD instead.
std::string json_text(const Json& j) { return j.dump(2, ' ', false, Json::error_handler_t::replace); }

std::string shape_text(const std::vector<std::uint64_t>& s) {
  std::string t = "[";
  for (std::size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + "]";
}

std::string bytes_text(double b) {
  const char* unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) b /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.2f %s", b, unit[u]);
  return buf;
}

Json number_or_string(double v) {  // JSON has no Inf: +Inf SQNR (no error at all) as "inf"
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (std::isnan(v)) return "nan";
  return v;
}

Json stats_json(const ck::ErrorStats& s) {
  return Json{{"sqnr_db", number_or_string(s.sqnr_db())},
              {"max_abs_error", s.max_abs_error},
              {"relative_error", s.relative_error()},
              {"fraction_saturated", s.fraction_saturated()},
              {"elements", s.count},
              {"nonfinite", s.nonfinite}};
}

bool dequantized(const ck::TensorReport& t) { return t.conversion && t.conversion->path == "dequantized"; }
bool any_dequantized(const std::vector<ck::TensorReport>& tensors) {
  return std::any_of(tensors.begin(), tensors.end(), [](const ck::TensorReport& t) { return dequantized(t); });
}

Json report_json(const std::vector<ck::TensorReport>& tensors, const ck::Summary& sum) {
  Json list = Json::array();
  for (const auto& t : tensors) {
    Json j{{"name", t.name}, {"dtype", std::string(ck::dtype_name(t.dtype))}, {"shape", t.shape},
           {"quantized", t.quantized}};
    if (t.quantized) {
      if (!dequantized(t)) j["error"] = stats_json(t.stats);  // a dequantized weight's measure is its conversion
      j["outputs"] = t.outputs;
      if (const auto& c = t.conversion)
        j["conversion"] = Json{{"from", c->from},       {"path", c->path},
                               {"exact", c->exact()},   {"changed", c->changed},
                               {"max_change", number_or_string(c->max_change)}, {"fp32_rounded", c->fp32_rounded}};
    } else {
      j["reason"] = t.reason;
    }
    list.push_back(j);
  }
  Json s{{"tensors", sum.tensors},   {"quantized", sum.quantized}, {"kept", sum.kept},
         {"in_bytes", sum.in_bytes}, {"out_bytes", sum.out_bytes}, {"seconds", sum.seconds}};
  if (!any_dequantized(tensors)) s["error"] = stats_json(sum.stats);
  if (sum.converted) {
    s["converted"] = sum.converted;
    s["converted_exact"] = sum.converted_exact;
  }
  if (!sum.files.empty()) s["files"] = sum.files;
  return Json{{"tensors", list}, {"summary", s}};
}

void print_conversion(const ck::Conversion& c) {
  if (c.exact())
    std::printf("    from %s: %s, every value exact\n", c.from.c_str(), c.path.c_str());
  else
    std::printf("    from %s: %s, %llu values changed (the largest by %.4g)\n", c.from.c_str(), c.path.c_str(),
                static_cast<unsigned long long>(c.changed), c.max_change);
}

void print_report(const std::vector<ck::TensorReport>& tensors, const ck::Summary& sum) {
  if (any_dequantized(tensors))
    std::printf("%-56s %-6s %-16s\n", "tensor", "dtype", "shape");
  else
    std::printf("%-56s %-6s %-16s %9s %11s %10s %9s\n", "tensor", "dtype", "shape", "SQNR dB", "max |err|", "rel err",
                "saturated");
  for (const auto& t : tensors) {
    const std::string name = t.name.size() > 56 ? "..." + t.name.substr(t.name.size() - 53) : t.name;
    if (t.quantized && dequantized(t)) {  // no error figures: the change is the measure
      std::printf("%-56s %-6s %-16s dequantized\n", name.c_str(), std::string(ck::dtype_name(t.dtype)).c_str(),
                  shape_text(t.shape).c_str());
      print_conversion(*t.conversion);
    } else if (t.quantized) {
      std::printf("%-56s %-6s %-16s %9.2f %11.4g %10.4g %9.2e\n", name.c_str(), std::string(ck::dtype_name(t.dtype)).c_str(),
                  shape_text(t.shape).c_str(), t.stats.sqnr_db(), t.stats.max_abs_error, t.stats.relative_error(),
                  t.stats.fraction_saturated());
      if (t.conversion) print_conversion(*t.conversion);
    } else {
      const bool why = !t.reason.empty() && t.reason != "kept";  // verify's reports say only "kept"
      std::printf("%-56s %-6s %-16s kept%s%s%s\n", name.c_str(), std::string(ck::dtype_name(t.dtype)).c_str(),
                  shape_text(t.shape).c_str(), why ? " (" : "", why ? t.reason.c_str() : "", why ? ")" : "");
    }
  }
  // A quantized weight takes more bytes than its original only where a packed layout pads it to
  // whole tiles (trn3-mx --pack: K to multiples of 512; docs/checkpoints.md).
  char change[160];
  if (sum.out_bytes <= sum.in_bytes) {
    std::snprintf(change, sizeof change, "%.2fx smaller",
                  sum.out_bytes ? static_cast<double>(sum.in_bytes) / static_cast<double>(sum.out_bytes) : 0.0);
  } else {
    std::size_t grew = 0;
    for (const auto& t : tensors) grew += t.quantized && !t.conversion && t.out_bytes > t.in_bytes ? 1 : 0;
    const double ratio = static_cast<double>(sum.out_bytes) / static_cast<double>(std::max<std::uint64_t>(sum.in_bytes, 1));
    if (grew > 0)
      std::snprintf(change, sizeof change, "%.2fx larger: %zu quantized weight%s padded to the layout's whole tiles",
                    ratio, grew, grew == 1 ? " is" : "s are");
    else
      std::snprintf(change, sizeof change, "%.2fx larger", ratio);
  }
  std::printf("\n%zu tensors: %zu %s, %zu kept; %s -> %s (%s) in %.2f s\n", sum.tensors, sum.quantized,
              any_dequantized(tensors) ? "dequantized" : "quantized", sum.kept,
              bytes_text(static_cast<double>(sum.in_bytes)).c_str(), bytes_text(static_cast<double>(sum.out_bytes)).c_str(),
              change, sum.seconds);
  if (sum.converted)
    std::printf("converted %zu weights of a quantized input: %zu with every value exact, %zu with changed values\n",
                sum.converted, sum.converted_exact, sum.converted - sum.converted_exact);
  if (sum.quantized && sum.stats.count > 0)
    std::printf("quantized weights overall: SQNR %.2f dB, max |err| %.4g, relative error %.4g, saturated %.2e\n",
                sum.stats.sqnr_db(), sum.stats.max_abs_error, sum.stats.relative_error(), sum.stats.fraction_saturated());
}

// ---- progress ----
class ProgressPrinter {
 public:
  explicit ProgressPrinter(bool quiet) : tty_(::isatty(2) != 0), quiet_(quiet) { start_ = std::chrono::steady_clock::now(); }
  void operator()(const ck::Progress& p) {
    const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    const double rate = t > 0 ? static_cast<double>(p.bytes_done) / t : 0;
    const double eta = rate > 0 ? static_cast<double>(p.bytes_total - p.bytes_done) / rate : 0;
    if (tty_) {
      const int width = 30;
      const int fill = p.bytes_total ? static_cast<int>(width * static_cast<double>(p.bytes_done) / p.bytes_total) : width;
      std::string bar(static_cast<std::size_t>(fill), '=');
      bar.resize(width, ' ');
      std::fprintf(stderr, "\r[%s] %zu/%zu tensors  %s/%s  %s/s  ETA %.0f s   ", bar.c_str(), p.tensors_done,
                   p.tensors_total, bytes_text(static_cast<double>(p.bytes_done)).c_str(),
                   bytes_text(static_cast<double>(p.bytes_total)).c_str(), bytes_text(rate).c_str(), eta);
      if (p.tensors_done == p.tensors_total) std::fprintf(stderr, "\n");
    } else if (!quiet_ && p.last != nullptr) {
      if (dequantized(*p.last))
        std::fprintf(stderr, "[%zu/%zu] %s: dequantized\n", p.tensors_done, p.tensors_total, p.last->name.c_str());
      else if (p.last->quantized)
        std::fprintf(stderr, "[%zu/%zu] %s: quantized, SQNR %.2f dB\n", p.tensors_done, p.tensors_total,
                     p.last->name.c_str(), p.last->stats.sqnr_db());
      else
        std::fprintf(stderr, "[%zu/%zu] %s: kept (%s)\n", p.tensors_done, p.tensors_total, p.last->name.c_str(),
                     p.last->reason.c_str());
    }
  }

 private:
  bool tty_, quiet_;
  std::chrono::steady_clock::time_point start_;
};

// ---- quantize ----
struct QuantizeArgs {
  std::string in, out, layout, granularity, strategy, pack, elem, like, calib_data, calib_method;
  std::vector<std::string> ignore;
  int threads = 1;
  std::uint64_t max_shard = 5'000'000'000;
  bool force = false, json = false, allow_nonfinite = false, require_exact = false;
};

void run_quantize(const QuantizeArgs& a) {
  ck::QuantizeCheckpointOptions o;
  o.layout = a.layout;
  if (!a.granularity.empty()) {
    o.layout_options.granularity = parse_granularity(a.granularity);
    if (!o.layout_options.granularity)
      throw UsageError("--granularity: '" + a.granularity + "' is not one of tensor row block128x128");
  }
  if (!a.strategy.empty()) {
    o.layout_options.granularity = ck::parse_ct_strategy(a.strategy);
    if (!o.layout_options.granularity) throw UsageError("--strategy: '" + a.strategy + "' is not one of tensor channel block");
  }
  if (!a.pack.empty() && a.pack != "none") {
    o.layout_options.pack = trn3::parse_k_layout(a.pack);
    if (!o.layout_options.pack) throw UsageError("--pack: '" + a.pack + "' is not one of none wrapX 1x32");
  }
  if (!a.elem.empty()) {
    o.layout_options.element = element_format(a.elem);
    if (!o.layout_options.element) throw UsageError("--elem: '" + a.elem + "' is not an element format (trn3-mx: e4m3fn e2m1)");
  }
  if (!a.like.empty()) {
    const auto p = parse_producer(a.like);
    if (!p) throw UsageError("--like: '" + a.like + "' is not one of fp8q compressed-tensors modelopt modelopt-cuda");
    o.layout_options.like = *p;
  }
  o.layout_options.threads = a.threads;
  o.ignore = a.ignore;
  if (!a.calib_method.empty() && a.calib_data.empty()) throw UsageError("--calib-method needs --calib-data");
  if (!a.calib_data.empty()) {
    o.calib_data = a.calib_data;
    o.calib_method = a.calib_method.empty() ? "max" : a.calib_method;
  }
  o.force = a.force;
  o.allow_nonfinite = a.allow_nonfinite;
  o.require_exact = a.require_exact;
  o.max_shard_bytes = a.max_shard;
  ProgressPrinter printer(a.json);
  const auto r = ck::quantize_checkpoint(a.in, a.out, o, [&](const ck::Progress& p) { printer(p); });
  if (a.json) {
    Json j = report_json(r.tensors, r.summary);
    j["layout"] = a.layout;
    j["output"] = a.out;
    std::printf("%s\n", json_text(j).c_str());
  } else {
    print_report(r.tensors, r.summary);
    std::printf("wrote %s (layout %s)\n", a.out.c_str(), a.layout.c_str());
  }
}

// ---- dequantize ----
struct DequantizeArgs {
  std::string in, out, dtype;
  int threads = 1;
  std::uint64_t max_shard = 5'000'000'000;
  bool force = false, json = false, allow_nonfinite = false, require_exact = false;
};

void run_dequantize(const DequantizeArgs& a) {
  ck::DequantizeCheckpointOptions o;
  if (!a.dtype.empty()) {
    const std::map<std::string, ck::DType> names{{"bf16", ck::DType::kBF16}, {"f16", ck::DType::kF16}, {"f32", ck::DType::kF32}};
    const auto it = names.find(a.dtype);
    if (it == names.end()) throw UsageError("--dtype: '" + a.dtype + "' is not one of bf16 f16 f32");
    o.dtype = it->second;
  }
  o.threads = a.threads;
  o.force = a.force;
  o.allow_nonfinite = a.allow_nonfinite;
  o.require_exact = a.require_exact;
  o.max_shard_bytes = a.max_shard;
  ProgressPrinter printer(a.json);
  const auto r = ck::dequantize_checkpoint(a.in, a.out, o, [&](const ck::Progress& p) { printer(p); });
  if (a.json) {
    Json j = report_json(r.tensors, r.summary);
    j["output"] = a.out;
    std::printf("%s\n", json_text(j).c_str());
  } else {
    print_report(r.tensors, r.summary);
    std::printf("wrote %s (dequantized)\n", a.out.c_str());
  }
}

// ---- verify ----
struct VerifyArgs {
  std::string out, in;
  int threads = 1;
  bool json = false;
};

void run_verify(const VerifyArgs& a) {
  const auto r = ck::verify_checkpoint(a.out, a.in, a.threads);
  if (a.json) {
    Json j = report_json(r.tensors, r.summary);
    j["layout"] = r.layout;
    j["problems"] = r.problems;
    j["ok"] = r.problems.empty();
    std::printf("%s\n", json_text(j).c_str());
  } else {
    std::printf("layout %s\n", r.layout.c_str());
    print_report(r.tensors, r.summary);
    for (const auto& p : r.problems) std::printf("PROBLEM: %s\n", p.c_str());
    std::printf("%s\n", r.problems.empty() ? "verify: OK" : "verify: FAILED");
  }
  std::fflush(stdout);
  if (!r.problems.empty()) std::exit(1);
}

// ---- inspect ----
struct InspectArgs {
  std::string path;
  bool json = false;
};

void run_inspect(const InspectArgs& a) {
  const ck::Model m = ck::Model::open(a.path);
  Json qc = nullptr;
  if (m.config_json()) {
    const Json config = Json::parse(*m.config_json());
    if (config.contains("quantization_config")) qc = config["quantization_config"];
  }
  // The layout as quantize reads it; a quantized checkpoint it cannot read is still listed.
  ck::CheckpointLayout layout;
  std::string unreadable;
  try {
    layout = ck::describe_checkpoint(m);
  } catch (const ck::PipelineError& e) {
    unreadable = e.what();
  }
  std::map<std::string, std::string> role(layout.roles.begin(), layout.roles.end());
  if (a.json) {
    Json list = Json::array();
    for (const auto& t : m.tensors()) {
      Json j{{"name", t.info->name},
             {"dtype", std::string(ck::dtype_name(t.info->dtype))},
             {"shape", t.info->shape},
             {"bytes", t.info->byte_size()},
             {"file", m.shards()[t.shard].path().filename().string()}};
      if (unreadable.empty()) j["role"] = role[t.info->name];
      list.push_back(j);
    }
    Json files = Json::array();
    for (const auto& s : m.shards()) files.push_back(s.path().filename().string());
    Json meta = Json::object();
    for (const auto& [k, v] : m.shards().front().metadata()) meta[k] = v;
    Json read_as = unreadable.empty() ? Json{{"layout", layout.layout.empty() ? Json(nullptr) : Json(layout.layout)},
                                             {"described_by", layout.described_by}}
                                       : Json{{"error", unreadable}};
    std::printf("%s\n", json_text(Json{{"path", a.path}, {"files", files}, {"metadata", meta}, {"quantization_config", qc},
                                       {"read_as", read_as}, {"tensors", list}, {"total_bytes", m.total_bytes()}})
                           .c_str());
    return;
  }
  std::printf("%s: %zu file(s), %zu tensors, %s\n", a.path.c_str(), m.shards().size(), m.tensors().size(),
              bytes_text(static_cast<double>(m.total_bytes())).c_str());
  for (const auto& [k, v] : m.shards().front().metadata()) std::printf("  metadata %s = %s\n", k.c_str(), v.c_str());
  if (!unreadable.empty())
    std::printf("read as: not readable by fp8q quantize: %s\n", unreadable.c_str());
  else if (layout.layout.empty())
    std::printf("read as: not quantized\n");
  else
    std::printf("read as: layout %s (%s)\n", layout.layout.c_str(), layout.described_by.c_str());
  std::printf("%-64s %-8s %-22s %s%s\n", "tensor", "dtype", "shape", m.shards().size() > 1 ? "file  " : "",
              unreadable.empty() ? "role" : "");
  for (const auto& t : m.tensors())
    std::printf("%-64s %-8s %-22s %s%s\n", t.info->name.c_str(), std::string(ck::dtype_name(t.info->dtype)).c_str(),
                shape_text(t.info->shape).c_str(),
                m.shards().size() > 1 ? (m.shards()[t.shard].path().filename().string() + "  ").c_str() : "",
                role[t.info->name].c_str());
  std::printf("quantization_config: %s\n", qc.is_null() ? "none" : json_text(qc).c_str());
}

}  // namespace

void add_quantize(CLI::App& app) {
  auto q = std::make_shared<QuantizeArgs>();
  auto* qc = app.add_subcommand("quantize", "Quantize a checkpoint (.safetensors or model directory) into an FP8/MXFP8 layout, or convert a quantized one");
  qc->add_option("IN", q->in, "Input .safetensors file or Hugging Face model directory")->required();
  qc->add_option("OUT_DIR", q->out, "Output directory (created; replaced only with --force)")->required();
  qc->add_option("--layout", q->layout, "hf-fp8 ct-fp8 ct-mxfp8 ct-mxfp4 ct-nvfp4 trn2 trn3-mx")->required();
  auto* g = qc->add_option("--granularity", q->granularity, "ct-fp8 / trn2 weight scales: tensor row block128x128 (default row)");
  qc->add_option("--strategy", q->strategy, "Alias of --granularity in compressed-tensors' words: tensor channel block")
      ->excludes(g);
  qc->add_option("--pack", q->pack, "trn3-mx: pre-pack for nc_matmul_mx: none wrapX 1x32 (default none)");
  qc->add_option("--elem", q->elem, "trn3-mx: element format, e4m3fn (MXFP8, default) or e2m1 (MXFP4)");
  qc->add_option("--like", q->like,
                 "Reproduce a producer's quantizer bit for bit: fp8q (default: one rounding) or compressed-tensors "
                 "(modelopt: through the Python and C++ APIs, fp8q does not write its layout)");
  qc->add_option("--ignore", q->ignore, "Also keep tensors whose name matches this regex (repeatable)");
  qc->add_option("--calib-data", q->calib_data, "ct-fp8 static input scales: safetensors with <module>.input samples");
  qc->add_option("--calib-method", q->calib_method, "max percentile mse entropy (default max)");
  qc->add_option("--threads", q->threads, "Worker threads (the output does not depend on it)")->capture_default_str();
  qc->add_option("--max-shard-size", q->max_shard, "Largest output shard in bytes")->capture_default_str();
  qc->add_flag("--allow-nonfinite", q->allow_nonfinite, "Pass NaN/Inf weights through instead of failing");
  qc->add_flag("--require-exact", q->require_exact,
               "A quantized IN: fail (exit 2, nothing written) where a converted value would change");
  qc->add_flag("--force", q->force, "Replace an existing OUT_DIR");
  qc->add_flag("--json", q->json, "Report as JSON on stdout");
  qc->callback([q] {
    try {
      run_quantize(*q);
    } catch (const ck::PipelineError& e) {
      throw UsageError(e.what());
    }
  });

  auto d = std::make_shared<DequantizeArgs>();
  auto* dc = app.add_subcommand("dequantize", "Write a quantized checkpoint's weights in high precision, each value rounded once");
  dc->add_option("IN", d->in, "Quantized .safetensors file or model directory (any layout quantize reads)")->required();
  dc->add_option("OUT_DIR", d->out, "Output directory (created; replaced only with --force)")->required();
  dc->add_option("--dtype", d->dtype, "bf16 f16 f32 (default: the model's torch_dtype)");
  dc->add_option("--threads", d->threads, "Worker threads (the output does not depend on it)")->capture_default_str();
  dc->add_option("--max-shard-size", d->max_shard, "Largest output shard in bytes")->capture_default_str();
  dc->add_flag("--allow-nonfinite", d->allow_nonfinite, "Write NaN/Inf values instead of failing");
  dc->add_flag("--require-exact", d->require_exact, "Fail (exit 2, nothing written) where a value would change");
  dc->add_flag("--force", d->force, "Replace an existing OUT_DIR");
  dc->add_flag("--json", d->json, "Report as JSON on stdout");
  dc->callback([d] {
    try {
      run_dequantize(*d);
    } catch (const ck::PipelineError& e) {
      throw UsageError(e.what());
    }
  });

  auto v = std::make_shared<VerifyArgs>();
  auto* vc = app.add_subcommand("verify", "Dequantize a quantized checkpoint and report its errors against the original");
  vc->add_option("OUT_DIR", v->out, "Directory written by fp8q quantize")->required();
  vc->add_option("--against", v->in, "The original checkpoint")->required();
  vc->add_option("--threads", v->threads, "Worker threads")->capture_default_str();
  vc->add_flag("--json", v->json, "Report as JSON on stdout");
  vc->callback([v] { run_verify(*v); });

  auto i = std::make_shared<InspectArgs>();
  auto* ic = app.add_subcommand("inspect", "List a checkpoint's tensors, dtypes, shapes and quantization config");
  ic->add_option("PATH", i->path, ".safetensors file or model directory")->required();
  ic->add_flag("--json", i->json, "As JSON");
  ic->callback([i] { run_inspect(*i); });
}

}  // namespace fp8q::cli
