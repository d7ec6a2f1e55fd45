// quantize_checkpoint(): the streaming pipeline of pipeline.hpp, step by step.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <system_error>

#include "fp8q/calib/calibrate.hpp"
#include "fp8q/checkpoint/pipeline.hpp"
#include "fp8q/checkpoint/stop.hpp"
#include "fp8q/numerics/bulk.hpp"
#include "fp8q/numerics/convert.hpp"
#include "pipeline/error_kernels.hpp"
#include "pipeline/output_dir.hpp"
#include "pipeline/shared.hpp"
#include "pipeline/write_behind.hpp"
#include "safetensors/text.hpp"

namespace fp8q::checkpoint {
namespace fs = std::filesystem;
using detail::quote;
using OJson = nlohmann::ordered_json;

namespace pipeline {

std::map<std::string, std::string> shard_metadata(const Layout& layout, const LayoutOptions& o) {
  std::map<std::string, std::string> m{{"format", "pt"}, {std::string(kMetaLayout), std::string(layout.name())}};
  if (o.strategy) m[std::string(kMetaStrategy)] = std::string(strategy_name(*o.strategy));
  if (o.pack) m[std::string(kMetaPack)] = std::string(trn3::k_layout_name(*o.pack));
  m["fp8q.weight_format"] = layout.name() == "trn2" ? "e4m3" : "e4m3fn";
  return m;
}

LayoutOptions options_from_metadata(const std::map<std::string, std::string>& m) {
  LayoutOptions o;
  if (auto it = m.find(std::string(kMetaStrategy)); it != m.end()) {
    o.strategy = parse_strategy(it->second);
    if (!o.strategy) throw FormatError("__metadata__ " + std::string(kMetaStrategy) + " = " + quote(it->second) + " is not a strategy");
  }
  if (auto it = m.find(std::string(kMetaPack)); it != m.end()) {
    o.pack = trn3::parse_k_layout(it->second);
    if (!o.pack) throw FormatError("__metadata__ " + std::string(kMetaPack) + " = " + quote(it->second) + " is not wrapX or 1x32");
  }
  return o;
}

void complete_config_context(ConfigContext& c) {
  const bool lm_head_listed = std::any_of(c.kept_linear_modules.begin(), c.kept_linear_modules.end(),
                                          [](const std::string& m) { return m == "lm_head" || m.ends_with(".lm_head"); });
  if (!lm_head_listed) c.kept_linear_modules.push_back("lm_head");
  std::sort(c.quantized_modules.begin(), c.quantized_modules.end());
  std::sort(c.kept_linear_modules.begin(), c.kept_linear_modules.end());
}

}  // namespace pipeline

namespace {

std::string shard_name(std::size_t i, std::size_t n) {
  if (n == 1) return std::string(kSingleFileName);
  char buf[64];
  std::snprintf(buf, sizeof buf, "model-%05zu-of-%05zu.safetensors", i + 1, n);
  return buf;
}

std::uint64_t spec_bytes(const TensorSpec& s) {
  std::uint64_t n = dtype_bytes(s.dtype);
  for (auto d : s.shape) n *= d;
  return n;
}

bool is_weight_file(const fs::path& p) {
  static const std::set<std::string> ext = {".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".h5", ".msgpack", ".gguf", ".onnx"};
  return ext.count(p.extension().string()) != 0;
}

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

std::string describe_nonfinite(std::span<const std::byte> data, DType dtype, std::uint64_t i) {
  std::uint32_t bits = 0;
  const std::size_t w = dtype_bytes(dtype);
  std::memcpy(&bits, data.data() + i * w, w);
  const float v = dtype == DType::kF32 ? float_of(bits) : decode_f32(bits, dtype == DType::kBF16 ? kBF16 : kF16);
  return std::isnan(v) ? "NaN" : (v > 0 ? "+Inf" : "-Inf");
}

// PipelineError naming the first NaN / Inf element of a weight, if it has one.
void throw_if_nonfinite(const TensorInfo& info, std::span<const std::byte> data, int threads) {
  if (auto bad = first_nonfinite(data, info.dtype, threads)) {
    const std::uint64_t cols = info.shape[1];
    throw PipelineError("tensor " + quote(info.name) + ": element " + std::to_string(*bad) + " (row " +
                        std::to_string(*bad / cols) + ", column " + std::to_string(*bad % cols) + ") is " +
                        describe_nonfinite(data, info.dtype, *bad) + "; --allow-nonfinite passes NaN/Inf weights through");
  }
}

struct Item {
  const ModelTensor* tensor = nullptr;
  std::optional<std::string> keep;
  WeightRef weight;
  std::vector<TensorSpec> specs;
  std::uint64_t out_bytes = 0;
};

// Copies one of IN's other files into the staging directory, with its permissions. Not
// fs::copy_file: libstdc++ 12 makes one sendfile(2) call and reports a short count as EIO, so
// a disk that filled part way was "Input/output error", never ENOSPC.
void copy_extra_file(const fs::path& from, const fs::path& to) {
  const int in = ::open(from.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st {};
  if (in < 0 || ::fstat(in, &st) != 0) {
    const int err = errno;
    if (in >= 0) ::close(in);
    throw std::system_error(err, std::generic_category(), "reading " + from.string());
  }
  const int out = ::open(to.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  int err = out < 0 ? errno : 0;
  bool reading = false;  // whether `err` is the input's
  std::vector<char> buf(std::size_t{1} << 20);
  for (ssize_t got = 1; err == 0 && got != 0;) {
    got = ::read(in, buf.data(), buf.size());
    if (got < 0) {
      if (errno != EINTR) err = errno, reading = true;
      continue;
    }
    for (ssize_t done = 0; err == 0 && done < got;) {
      const ssize_t w = ::write(out, buf.data() + done, static_cast<std::size_t>(got - done));
      if (w < 0) {
        if (errno != EINTR) err = errno;
        continue;
      }
      done += w;
    }
  }
  if (err == 0 && ::fchmod(out, st.st_mode & 07777) != 0) err = errno;
  ::close(in);
  if (out >= 0 && ::close(out) != 0 && err == 0) err = errno;
  if (err != 0)
    throw std::system_error(err, std::generic_category(), reading ? "reading " + from.string() : "writing " + to.string());
}

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

// quantize_checkpoint() less OutputError; sets `building` to OUT_DIR as its staging begins.
QuantizeResult quantize_into(const fs::path& in, const fs::path& out_arg, const QuantizeCheckpointOptions& opt,
                             const ProgressFn& progress, fs::path& building) {
  const auto start = std::chrono::steady_clock::now();
  // "out/q1/" names the directory out/q1: without the trailing separators its parent (where
  // the staging directory goes) is out, not out/q1 itself
  fs::path out_dir = out_arg;
  while (!out_dir.has_filename() && out_dir.has_relative_path()) out_dir = out_dir.parent_path();
  // ---- options ----
  const Layout* layout = layout_named(opt.layout);
  if (layout == nullptr) {
    std::string names;
    for (auto n : layout_names()) names += " " + std::string(n);
    throw PipelineError("--layout: " + quote(opt.layout) + " is not one of" + names);
  }
  try {
    layout->check_options(opt.layout_options);
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

  // ---- input, output checks ----
  if (out_dir.filename() == "." || out_dir.filename() == "..")
    throw PipelineError("output directory " + out_arg.string() + " names an existing directory by '" +
                        out_dir.filename().string() + "'; give the new directory's own name");
  const Model model = Model::open(in);
  // An input that is already quantized would come out with its codes read as high-precision
  // weights: its quantization_config replaced, its FP8 weights listed as not converted.
  if (model.config_json()) {
    const OJson c = OJson::parse(*model.config_json());
    if (c.is_object() && c.contains("quantization_config")) {
      const OJson& q = c["quantization_config"];
      const std::string method = q.is_object() && q.contains("quant_method") && q["quant_method"].is_string()
                                     ? q["quant_method"].get<std::string>()
                                     : std::string("?");
      throw PipelineError(in.string() + ": config.json already has a quantization_config (quant_method " +
                          quote(method) + "): the input is already quantized; quantize its high-precision original");
    }
  }
  for (const ModelTensor& t : model.tensors())
    if (t.info->shape.size() == 2 && t.info->name.ends_with(".weight") &&
        (t.info->dtype == DType::kF8_E4M3 || t.info->dtype == DType::kF8_E5M2))
      throw PipelineError("tensor " + quote(t.info->name) + " is " + std::string(dtype_name(t.info->dtype)) +
                          ": the input is already quantized; quantize its high-precision original");
  const fs::path parent = out_dir.parent_path().empty() ? fs::path(".") : out_dir.parent_path();
  if (!fs::is_directory(parent)) throw PipelineError("output directory " + out_dir.string() + ": " + parent.string() + " is not a directory");
  check_no_overlap(in, out_dir);
  if (fs::exists(fs::symlink_status(out_dir)) && !opt.force)
    throw PipelineError("output directory " + out_dir.string() + " exists; --force replaces it");

  // ---- plan ----
  std::vector<Item> items;
  items.reserve(model.tensors().size());
  std::map<std::string, std::string> produced_by;  // output name -> input tensor
  ConfigContext ctx;
  ctx.options = opt.layout_options;
  for (const ModelTensor& t : model.tensors()) {
    Item it;
    it.tensor = &t;
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
    if (!it.keep) it.specs = layout->plan(it.weight, opt.layout_options);
    for (const auto& s : it.specs) {
      const auto [pos, fresh] = produced_by.emplace(s.name, it.tensor->info->name);
      if (!fresh)
        throw PipelineError("output tensor " + quote(s.name) + " would be written for both " + quote(pos->second) +
                            " and " + quote(it.tensor->info->name));
      it.out_bytes += spec_bytes(s);
    }
  }
  pipeline::complete_config_context(ctx);

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

  // ---- stream ----
  building = out_dir;
  pipeline::StagingDir staging(out_dir);
  QuantizeResult result;
  Progress prog;
  prog.tensors_total = items.size();
  prog.bytes_total = model.total_bytes();
  const auto meta = pipeline::shard_metadata(*layout, opt.layout_options);
  OJson index_map = OJson::object();
  std::uint64_t total_out = 0;
  for (std::size_t s = 0; s < shards.size(); ++s) {
    const std::string file = shard_name(s, shards.size());
    std::vector<TensorSpec> specs;
    for (std::size_t i = shards[s].first; i < shards[s].second; ++i)
      for (const auto& sp : items[i].specs) specs.push_back(sp);
    Writer writer(staging.path() / file, specs, meta);
    // Weight i's output is written and its error measured (a WriteJob) while weight i + 1 is
    // quantized: `helpers` = threads / 2 threads start on the job at once, the layout
    // quantizes with the other threads - helpers, and the calling thread then joins the job
    // (finish_pending) before the next weight's job starts. Layouts and the error figures
    // give the same bits for any thread count, so the file does not depend on the split. The
    // weight's report, NaN/Inf check and page release follow its job, in input order; an
    // error while quantizing weight i + 1 is thrown only after weight i's job and checks (so
    // it is the error of the first bad weight, as without the overlap).
    // `pending` and `flight` are declared after the writer, and `flight` last, so that on an
    // error its threads are stopped and joined before the data they use and the writer go.
    const int helpers = threads / 2;
    LayoutOptions quantize_options = opt.layout_options;
    quantize_options.threads = threads - helpers;
    struct Pending {
      Item* item = nullptr;
      TensorReport rep;
      QuantizedWeight q;
      std::unique_ptr<detail::ErrorMeasurement> measure;
      std::vector<detail::ErrorMeasurement::Scratch> scratch;
    };
    std::optional<Pending> pending;
    pipeline::JobInFlight flight;
    auto record = [&](const Item& it, TensorReport rep) {
      model.release(*it.tensor);
      for (const auto& sp : it.specs) index_map[sp.name] = file;
      result.summary.tensors++;
      (rep.quantized ? result.summary.quantized : result.summary.kept)++;
      result.summary.in_bytes += rep.in_bytes;
      result.summary.out_bytes += rep.out_bytes;
      result.summary.stats.merge(rep.stats);
      result.tensors.push_back(std::move(rep));
      prog.tensors_done++;
      prog.bytes_done += it.tensor->info->byte_size();
      prog.last = &result.tensors.back();
      if (progress) progress(prog);
    };
    // Completes the weight in flight: its job (rethrowing a write error), its figures and
    // NaN/Inf check, then its report.
    auto finish_pending = [&] {
      if (!pending) return;
      flight.finish();
      Pending& p = *pending;
      if (p.measure) {
        p.rep.stats = p.measure->total();
        if (!opt.allow_nonfinite && p.rep.stats.nonfinite > 0)
          throw_if_nonfinite(*p.item->tensor->info, model.bytes(*p.item->tensor), threads);
      }
      p.item->weight.data = {};
      record(*p.item, std::move(p.rep));
      pending.reset();  // its buffers go before the next weight's job is made
    };
    for (std::size_t i = shards[s].first; i < shards[s].second; ++i) {
      throw_if_stop_requested();  // the staging directory is removed as Stopped unwinds
      Item& it = items[i];
      const TensorInfo& info = *it.tensor->info;
      const auto data = model.bytes(*it.tensor);
      TensorReport rep;
      rep.name = info.name;
      rep.dtype = info.dtype;
      rep.shape = info.shape;
      rep.in_bytes = info.byte_size();
      rep.out_bytes = it.out_bytes;
      for (const auto& sp : it.specs) rep.outputs.push_back(sp.name);
      if (it.keep) {
        rep.reason = *it.keep;
        finish_pending();  // in order, and before the input pages go
        writer.write(data);
        record(it, std::move(rep));
        continue;
      }
      rep.quantized = true;
      // NaN / Inf in the weight is an error (unless allowed), reported with its first
      // index. Measuring reads every element anyway and counts non-finite ones, so with
      // measure on the separate scan runs only when that count says there is one; a layout
      // that fails on the weight gets the scan first, so the error is the same either way.
      const bool check_finite = !opt.allow_nonfinite;
      QuantizedWeight q;
      try {
        if (check_finite && !opt.measure) throw_if_nonfinite(info, data, quantize_options.threads);
        it.weight.data = data;
        try {
          q = layout->quantize(it.weight, quantize_options);
        } catch (const std::invalid_argument& e) {
          if (check_finite) throw_if_nonfinite(info, data, quantize_options.threads);
          throw PipelineError("tensor " + quote(info.name) + ": " + e.what());
        } catch (const NanError& e) {
          if (check_finite) throw_if_nonfinite(info, data, quantize_options.threads);
          throw PipelineError("tensor " + quote(info.name) + ": " + e.what());
        }
        if (q.tensors.size() != it.specs.size()) throw std::logic_error("layout " + std::string(layout->name()) + ": plan and quantize disagree");
        for (std::size_t k = 0; k < q.tensors.size(); ++k) {
          const auto& got = q.tensors[k];
          if (got.spec.name != it.specs[k].name || got.spec.dtype != it.specs[k].dtype || got.spec.shape != it.specs[k].shape ||
              got.bytes.size() != spec_bytes(it.specs[k]))
            throw std::logic_error("layout " + std::string(layout->name()) + ": tensor " + got.spec.name + " differs from its plan");
        }
      } catch (...) {
        finish_pending();  // the previous weight's error, if it has one, comes first
        throw;
      }
      finish_pending();
      pending.emplace();
      Pending& p = *pending;
      p.item = &it;
      p.rep = std::move(rep);
      p.q = std::move(q);
      std::vector<std::span<const std::byte>> outputs;
      for (const auto& t : p.q.tensors) outputs.emplace_back(t.bytes);
      std::size_t chunks = 0;
      pipeline::WriteJob::Work work;
      if (opt.measure) {
        p.measure = std::make_unique<detail::ErrorMeasurement>(data, info.dtype, p.q.view, active_isa());
        p.scratch.resize(static_cast<std::size_t>(helpers) + 1);
        chunks = p.measure->chunks();
        work = [m = p.measure.get(), sc = p.scratch.data()](std::size_t k, std::size_t w) { m->measure_chunk(k, sc[w]); };
      }
      flight.start(std::make_unique<pipeline::WriteJob>(writer, std::move(outputs), chunks, std::move(work)), helpers);
    }
    finish_pending();
    writer.commit();
    total_out += writer.bytes_written() ;
    result.summary.files.push_back(file);
  }

  // ---- index, config, other files ----
  auto write_text = [&](const std::string& name, const std::string& text) {
    std::ofstream f(staging.path() / name, std::ios::binary);
    f << text;
    f.close();
    if (!f) throw std::system_error(errno, std::generic_category(), (staging.path() / name).string() + ": cannot write");
    result.summary.files.push_back(name);
  };
  if (shards.size() > 1) {
    OJson index;
    std::uint64_t data_bytes = 0;
    for (const auto& it : items) data_bytes += it.out_bytes;
    index["metadata"] = {{"total_size", data_bytes}};
    // weight_map sorted by tensor name, as Transformers writes it
    OJson sorted = OJson::object();
    std::map<std::string, std::string> by_name;
    for (auto& [k, v] : index_map.items()) by_name[k] = v.get<std::string>();
    for (auto& [k, v] : by_name) sorted[k] = v;
    index["weight_map"] = sorted;
    write_text(std::string(kIndexFileName), index.dump(2) + "\n");
  }
  OJson config = model.config_json() ? OJson::parse(*model.config_json()) : OJson::object();
  config["quantization_config"] = OJson::parse(layout->quantization_config(ctx));
  write_text(std::string(kConfigFileName), config.dump(2) + "\n");
  if (model.is_directory()) {
    std::vector<fs::path> extra;
    for (const auto& entry : fs::directory_iterator(in)) {
      const std::string name = entry.path().filename().string();
      // other weights' indexes (pytorch_model.bin.index.json) name files that are not copied
      if (name == kConfigFileName || name.ends_with(".index.json") || name.starts_with(".") || is_weight_file(entry.path()))
        continue;
      if (!entry.is_regular_file()) continue;
      if (!resolves_into_model(in, entry.path())) continue;  // a link out of the model: not copied
      extra.push_back(entry.path());
    }
    std::sort(extra.begin(), extra.end());
    for (const auto& p : extra) {
      copy_extra_file(p, staging.path() / p.filename());
      result.summary.files.push_back(p.filename().string());
    }
  }
  (void)total_out;
  staging.commit();
  result.summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace

QuantizeResult quantize_checkpoint(const fs::path& in, const fs::path& out_arg, const QuantizeCheckpointOptions& opt,
                                   const ProgressFn& progress) {
  fs::path building;  // empty until the staging directory is being made
  try {
    return quantize_into(in, out_arg, opt, progress, building);
  } catch (const std::system_error& e) {
    if (building.empty()) throw;
    throw OutputError(building, e);
  }
}

}  // namespace fp8q::checkpoint
