// quantize_checkpoint()'s stream (pipeline/quantize_steps.hpp): each shard's weights quantized
// by the layout while the previous weight's output is written and measured.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fp8q/checkpoint/error_stats.hpp"
#include "fp8q/checkpoint/safetensors.hpp"
#include "fp8q/checkpoint/stop.hpp"
#include "fp8q/numerics/convert.hpp"
#include "pipeline/error_kernels.hpp"
#include "pipeline/quantize_steps.hpp"
#include "pipeline/shared.hpp"
#include "pipeline/write_behind.hpp"
#include "reencode/reencode.hpp"
#include "safetensors/text.hpp"

namespace fp8q::checkpoint::pipeline {
namespace fs = std::filesystem;
using detail::quote;

namespace {

std::string describe_nonfinite(std::span<const std::byte> data, DType dtype, std::uint64_t i) {
  std::uint32_t bits = 0;
  const std::size_t w = dtype_bytes(dtype);
  std::memcpy(&bits, data.data() + i * w, w);
  const float v = dtype == DType::kF32 ? float_of(bits) : decode_f32(bits, dtype == DType::kBF16 ? kBF16 : kF16);
  return std::isnan(v) ? "NaN" : (v > 0 ? "+Inf" : "-Inf");
}

// PipelineError naming the first NaN / Inf element of a weight, if it has one.
void throw_if_nonfinite(const TensorInfo& info, std::span<const std::byte> data, const LayoutOptions& o) {
  if (auto bad = first_nonfinite(data, info.dtype, o.threads, o.isa)) {
    const std::uint64_t cols = info.shape[1];
    throw PipelineError("tensor " + quote(info.name) + ": element " + std::to_string(*bad) + " (row " +
                        std::to_string(*bad / cols) + ", column " + std::to_string(*bad % cols) + ") is " +
                        describe_nonfinite(data, info.dtype, *bad) + "; --allow-nonfinite passes NaN/Inf weights through");
  }
}

}  // namespace

void stream_shards(const Model& model, const std::optional<reencode::QuantizedSource>& source,
                   const CheckedOptions& checked, const QuantizeCheckpointOptions& opt,
                   QuantizePlan& plan, const fs::path& dir, const ProgressFn& progress, QuantizeResult& result,
                   OJson& index_map) {
  const Layout* layout = checked.layout;
  const int threads = checked.threads;
  std::vector<Item>& items = plan.items;
  const auto& shards = plan.shards;
  Progress prog;
  prog.tensors_total = items.size();
  prog.bytes_total = model.total_bytes();
  const auto meta = layout ? shard_metadata(*layout, opt.layout_options) : std::map<std::string, std::string>{{"format", "pt"}};
  // what the weights become, for messages: the layout, or the dtype they are dequantized to
  const std::string target = layout ? std::string(layout->name()) : std::string(dtype_name(*checked.dequantize_to));
  for (std::size_t s = 0; s < shards.size(); ++s) {
    const std::string file = shard_name(s, shards.size());
    std::vector<TensorSpec> specs;
    for (std::size_t i = shards[s].first; i < shards[s].second; ++i)
      for (const auto& sp : items[i].specs) specs.push_back(sp);
    Writer writer(dir / file, specs, meta);
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
    // A quantized input's conversion takes several times its job's time and holds about 9
    // bytes a value: it runs on every thread beside the previous weight's job, which then only
    // writes (its error figures are measured before, and its fp32 copy released).
    LayoutOptions convert_options = opt.layout_options;
    convert_options.threads = threads;
    struct Pending {
      Item* item = nullptr;
      TensorReport rep;
      QuantizedWeight q;
      TensorInfo measured;              // what the error figures compare against: the input
      std::span<const std::byte> data;  // weight, or a quantized input's values in fp32
      std::vector<float> decoded;
      std::unique_ptr<detail::ErrorMeasurement> measure;
      std::vector<detail::ErrorMeasurement::Scratch> scratch;
    };
    std::optional<Pending> pending;
    JobInFlight flight;
    auto record = [&](const Item& it, TensorReport rep) {
      model.release(*it.tensor);
      for (const auto& sp : it.specs) index_map[sp.name] = file;
      result.summary.tensors++;
      (rep.quantized ? result.summary.quantized : result.summary.kept)++;
      if (rep.conversion) {
        result.summary.converted++;
        result.summary.converted_exact += rep.conversion->exact();
      }
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
        if (!opt.allow_nonfinite && p.rep.stats.nonfinite > 0) throw_if_nonfinite(p.measured, p.data, opt.layout_options);
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
      TensorInfo measured = info;
      std::span<const std::byte> measured_data = data;
      std::vector<float> decoded;
      QuantizedWeight q;
      std::uint64_t v_rows = 0, v_cols = 0;
      if (it.source) {
        // A quantized input's weight: its exact values into the layout (reencode.hpp).
        try {
          const DequantView v = reencode::read_source(*source, model, *it.source);
          v_rows = v.rows;
          v_cols = v.cols;
          if (checked.dequantize_to) {
            reencode::Dequantized d = reencode::dequantize(v, *checked.dequantize_to, convert_options.threads, convert_options.isa);
            if (d.first_nonfinite && !opt.allow_nonfinite)
              throw PipelineError("tensor " + quote(info.name) + ": element " + std::to_string(*d.first_nonfinite) +
                                  " (row " + std::to_string(*d.first_nonfinite / v.cols) + ", column " +
                                  std::to_string(*d.first_nonfinite % v.cols) + ") is NaN or Inf in " + target +
                                  "; --allow-nonfinite writes it");
            rep.conversion = d.report;
            if (it.source->experts()) {
              const auto& s = it.source->shape;
              d.bytes = reencode::transpose_experts(d.bytes, s[0], s[1], s[2], dtype_bytes(*checked.dequantize_to));
            }
            q.tensors.push_back({it.specs[0], std::move(d.bytes)});
          } else {
            reencode::Reencoded r = reencode::reencode(v, *layout, it.weight, convert_options);
            rep.conversion = r.report;
            q = std::move(r.q);
            decoded = std::move(r.values);
          }
          rep.conversion->from = std::string(source->layout->name());
          if (opt.require_exact && !rep.conversion->exact()) {
            char d[32];
            std::snprintf(d, sizeof d, "%.6g", rep.conversion->max_change);
            throw PipelineError("--require-exact: tensor " + quote(info.name) + " (" + rep.conversion->from + " -> " +
                                target + "): " + std::to_string(rep.conversion->changed) + " of " +
                                std::to_string(v.rows * v.cols) + " values would change (the largest by " + d +
                                "); nothing was written");
          }
        } catch (const std::invalid_argument& e) {
          finish_pending();
          throw PipelineError("tensor " + quote(info.name) + ": " + e.what());
        } catch (const NanError& e) {
          finish_pending();
          throw PipelineError("tensor " + quote(info.name) + ": " + e.what());
        } catch (...) {
          finish_pending();
          throw;
        }
        for (const ModelTensor* t : it.source->tensors)
          if (t != it.tensor) rep.in_bytes += t->info->byte_size();
        measured.name = it.weight.name;
        measured.dtype = DType::kF32;
        measured.shape = {v_rows, v_cols};  // W as the view's rows (experts: E * out rows)
        measured_data = std::as_bytes(std::span<const float>(decoded));
      }
      // NaN / Inf in the weight is an error (unless allowed), reported with its first
      // index. Measuring reads every element anyway and counts non-finite ones, so with
      // measure on the separate scan runs only when that count says there is one; a layout
      // that fails on the weight gets the scan first, so the error is the same either way.
      const bool check_finite = !opt.allow_nonfinite;
      try {
        if (check_finite && !opt.measure && !checked.dequantize_to) throw_if_nonfinite(measured, measured_data, quantize_options);
        it.weight.data = measured_data;
        try {
          if (!it.source) q = layout->quantize(it.weight, quantize_options);
        } catch (const std::invalid_argument& e) {
          if (check_finite) throw_if_nonfinite(info, data, quantize_options);
          throw PipelineError("tensor " + quote(info.name) + ": " + e.what());
        } catch (const NanError& e) {
          if (check_finite) throw_if_nonfinite(info, data, quantize_options);
          throw PipelineError("tensor " + quote(info.name) + ": " + e.what());
        }
        if (q.tensors.size() != it.specs.size()) throw std::logic_error(target + ": plan and quantize disagree");
        for (std::size_t k = 0; k < q.tensors.size(); ++k) {
          const auto& got = q.tensors[k];
          if (got.spec.name != it.specs[k].name || got.spec.dtype != it.specs[k].dtype || got.spec.shape != it.specs[k].shape ||
              got.bytes.size() != spec_bytes(it.specs[k]))
            throw std::logic_error(target + ": tensor " + got.spec.name + " differs from its plan");
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
      p.measured = std::move(measured);
      p.decoded = std::move(decoded);
      p.data = p.decoded.empty() ? measured_data : std::as_bytes(std::span<const float>(p.decoded));
      std::vector<std::span<const std::byte>> outputs;
      for (const auto& t : p.q.tensors) outputs.emplace_back(t.bytes);
      std::size_t chunks = 0;
      WriteJob::Work work;
      if (opt.measure && it.source) {  // measured now, so that only the output waits for the job
        p.rep.stats = measure_error(p.data, p.measured.dtype, p.q.view, threads, opt.layout_options.isa);
        if (!opt.allow_nonfinite && p.rep.stats.nonfinite > 0) throw_if_nonfinite(p.measured, p.data, opt.layout_options);
        p.decoded = {};
        p.data = {};
        p.q.view = {};
      } else if (opt.measure) {
        p.measure = std::make_unique<detail::ErrorMeasurement>(p.data, p.measured.dtype, p.q.view,
                                                                 resolve_isa(opt.layout_options.isa, "LayoutOptions::isa"));
        p.scratch.resize(static_cast<std::size_t>(helpers) + 1);
        chunks = p.measure->chunks();
        work = [m = p.measure.get(), sc = p.scratch.data()](std::size_t k, std::size_t w) { m->measure_chunk(k, sc[w]); };
      }
      flight.start(std::make_unique<WriteJob>(writer, std::move(outputs), chunks, std::move(work)), helpers);
    }
    finish_pending();
    writer.commit();
    result.summary.files.push_back(file);
  }
}

}  // namespace fp8q::checkpoint::pipeline
