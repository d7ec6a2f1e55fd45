// fp8q calibrate IN.safetensors --method max|percentile|mse|entropy --format e4m3fn|e4m3|e5m2
//                [--percentile P] [--granularity tensor|row] [--pow2] [--margin N] [--threads N] [--json]
// Observes every floating tensor of IN (each a set of samples of one activation, or a weight)
// and prints, per tensor or per row of its 2-D view, the calibrated amax, scale_inv, and the
// quantization MSE and SQNR over the samples (calib/calibrate.hpp). NaN and Inf are counted
// and reported, never part of the statistics.
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "args.hpp"
#include "fp8q/calib/calibrate.hpp"
#include "fp8q/checkpoint/safetensors.hpp"
#include "fp8q/quant/granularity.hpp"
#include "verbs.hpp"

namespace fp8q::cli {
namespace {

namespace ck = fp8q::checkpoint;

struct CalibrateArgs {
  std::string in, method, format, granularity = "tensor";
  double percentile = 99.99;
  bool pow2 = false, json = false;
  int margin = 0, threads = 1;
};

// JSON has no Inf: an SQNR of +Inf (no error at all) is written as null.
nlohmann::json number(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

nlohmann::json entry(const calib::ChannelCalibration& c) {
  return {{"amax", c.amax},
          {"scale_inv", c.scale_inv},
          {"mse", c.mse},
          {"sqnr_db", number(c.sqnr_db)},
          {"observed_amax", c.observed_amax},
          {"samples", c.count},
          {"nan", c.non_finite.nan},
          {"pos_inf", c.non_finite.pos_inf},
          {"neg_inf", c.non_finite.neg_inf}};
}

void print_line(const std::string& name, const calib::ChannelCalibration& c) {
  std::printf("%-40s %13.6g %13.6g %12.4g %9.2f", name.c_str(), c.amax, c.scale_inv, c.mse, c.sqnr_db);
  if (c.non_finite.total() != 0)
    std::printf("  (%llu NaN, %llu +Inf, %llu -Inf not counted)", static_cast<unsigned long long>(c.non_finite.nan),
                static_cast<unsigned long long>(c.non_finite.pos_inf),
                static_cast<unsigned long long>(c.non_finite.neg_inf));
  std::printf("\n");
}

void run(const CalibrateArgs& a) {
  calib::CalibrationSpec spec;
  const auto method = calib::parse_method(a.method);
  if (!method) throw UsageError("--method: '" + a.method + "' is not one of max percentile mse entropy");
  spec.method = *method;
  const Format& target = format_arg(a.format, "--format");
  if (target.bits() > 8 || !target.is_signed || !target.has_zero())
    throw UsageError("--format: " + a.format + " is not an element format to calibrate for");
  spec.format = *parse_format(a.format);
  if (!(a.percentile > 0 && a.percentile <= 100))
    throw UsageError("--percentile: must be in (0, 100], got " + std::to_string(a.percentile));
  spec.calibrator.percentile = a.percentile;
  spec.calibrator.scale.power_of_two = a.pow2;
  if (a.margin < -127 || a.margin > 127) throw UsageError("--margin: must be in [-127, 127], got " + std::to_string(a.margin));
  spec.calibrator.scale.margin = a.margin;
  const auto g = parse_granularity(a.granularity);
  if (g != Granularity::tensor() && g != Granularity::row())
    throw UsageError("--granularity: '" + a.granularity + "' is not one of tensor row");
  spec.granularity = *g;
  if (a.threads < 1) throw UsageError("--threads: must be at least 1, got " + std::to_string(a.threads));
  spec.threads = a.threads;

  const ck::Reader in(a.in);
  nlohmann::json out = nlohmann::json::object();
  if (!a.json)
    std::printf("method %s, format %s, granularity %s\n%-40s %13s %13s %12s %9s\n", a.method.c_str(), a.format.c_str(),
                a.granularity.c_str(), "tensor", "amax", "scale_inv", "mse", "sqnr dB");
  bool any = false;
  for (const ck::TensorInfo& t : in.tensors()) {
    const Format* from = ck::floating_format(t.dtype);
    if (from == nullptr) continue;
    any = true;
    const MatrixShape m = matrix_shape(t.shape);
    const calib::ChannelLayout rows{1, m.rows, m.cols};
    std::vector<calib::ChannelCalibration> result;
    try {
      result = calib::calibrate(in.bytes(t), *from, spec, rows);
    } catch (const std::invalid_argument& e) {
      throw UsageError("tensor '" + t.name + "': " + e.what());
    }
    if (a.json) {
      if (spec.granularity == Granularity::tensor()) {
        out[t.name] = entry(result.front());
      } else {
        nlohmann::json list = nlohmann::json::array();
        for (const auto& c : result) list.push_back(entry(c));
        out[t.name] = {{"rows", list}};
      }
    } else if (spec.granularity == Granularity::tensor()) {
      print_line(t.name, result.front());
    } else {
      for (std::size_t r = 0; r < result.size(); ++r) print_line(t.name + "[" + std::to_string(r) + "]", result[r]);
    }
  }
  if (!any) throw UsageError("input '" + a.in + "' has no F32, BF16 or F16 tensor to calibrate");
  if (a.json) std::printf("%s\n", out.dump(2).c_str());
}

}  // namespace

void add_calibrate(CLI::App& app) {
  auto a = std::make_shared<CalibrateArgs>();
  auto* cmd = app.add_subcommand("calibrate", "Calibrate an amax and scale for every floating tensor of a safetensors file");
  cmd->add_option("IN", a->in, "Input .safetensors (each tensor: samples of one activation)")->required()->check(safetensors_path());
  cmd->add_option("--method", a->method, "max percentile mse entropy")->required();
  cmd->add_option("--format", a->format, "Target format: e4m3fn e4m3 e5m2 (any element format)")->required();
  cmd->add_option("--percentile", a->percentile, "For --method percentile")->capture_default_str();
  cmd->add_option("--granularity", a->granularity, "tensor or row (of the 2-D view)")->capture_default_str();
  cmd->add_flag("--pow2", a->pow2, "Power-of-two scales (the searches use the same rule)");
  cmd->add_option("--margin", a->margin, "Scale divided by 2^margin")->capture_default_str();
  cmd->add_option("--threads", a->threads, "Worker threads (results do not depend on it)")->capture_default_str();
  cmd->add_flag("--json", a->json, "One JSON object keyed by tensor name");
  cmd->callback([a] { run(*a); });
}

}  // namespace fp8q::cli
