// fp8q compare ACTUAL EXPECTED [--ulps N] [--tensor NAME ...] [--worst K] [--json]
// Two safetensors files (a device's output, the emulation's) compared tensor by tensor, bitwise
// and in ULPs (checkpoint/compare.hpp; the rule is docs/validation.md's). Exit 0 when every
// tensor is within N ULPs (0: bitwise), 1 when one is not or its dtype or shape differs,
// 2 on bad input (a file that cannot be read, a tensor only one file has).
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "args.hpp"
#include "fp8q/checkpoint/compare.hpp"
#include "verbs.hpp"

namespace fp8q::cli {
namespace {

namespace ck = fp8q::checkpoint;
using Json = nlohmann::ordered_json;

struct CompareArgs {
  std::string actual, expected;
  std::vector<std::string> tensors;
  std::uint64_t ulps = 0;
  std::size_t worst = 5;
  bool json = false;
};

std::string index_text(const std::vector<std::uint64_t>& idx) {
  std::string t = "[";
  for (std::size_t i = 0; i < idx.size(); ++i) t += (i ? ", " : "") + std::to_string(idx[i]);
  return t + "]";
}

std::string ulps_text(std::uint64_t u) { return u == kInfiniteUlps ? "inf" : std::to_string(u); }

void print_text(const ck::TensorComparison& t, std::uint64_t ulps) {
  const std::string head = t.name + "  " + std::string(ck::dtype_name(t.dtype)) + " " + index_text(t.shape);
  if (!t.mismatch.empty()) {
    std::printf("%s: MISMATCH: %s\n", head.c_str(), t.mismatch.c_str());
    return;
  }
  const CodeComparison& c = t.codes;
  const Format* f = ck::element_format(t.dtype);
  std::printf("%s: %llu elements, %llu bit-equal, %llu differ", head.c_str(),
              static_cast<unsigned long long>(c.count), static_cast<unsigned long long>(c.bit_equal),
              static_cast<unsigned long long>(c.differ));
  if (c.signed_zero)
    std::printf(" (%llu signed zero%s)", static_cast<unsigned long long>(c.signed_zero), c.signed_zero == 1 ? "" : "s");
  if (c.nan_payload)
    std::printf(" (%llu NaN payload%s)", static_cast<unsigned long long>(c.nan_payload),
                c.nan_payload == 1 ? " differs" : "s differ");
  if (f != nullptr) std::printf(", max %s ULP", ulps_text(c.max_ulps).c_str());
  if (c.within()) {
    std::printf(": OK\n");
    return;
  }
  std::printf(": %llu beyond %llu ULP\n", static_cast<unsigned long long>(c.beyond),
              static_cast<unsigned long long>(ulps));
  const int eb = static_cast<int>(ck::dtype_bytes(t.dtype));
  for (const ElementDiff& d : c.worst)
    std::printf("  %s  actual %s  expected %s  %s\n", index_text(ck::unravel_index(d.index, t.shape)).c_str(),
                code_text(d.actual, f, eb).c_str(), code_text(d.expected, f, eb).c_str(),
                distance_text(d, f).c_str());
}

Json tensor_json(const ck::TensorComparison& t) {
  Json j{{"name", t.name}, {"dtype", ck::dtype_name(t.dtype)}, {"shape", t.shape}, {"ok", t.within()}};
  if (!t.mismatch.empty()) {
    j["mismatch"] = t.mismatch;
    return j;
  }
  const CodeComparison& c = t.codes;
  const Format* f = ck::element_format(t.dtype);
  j.update({{"count", c.count}, {"bit_equal", c.bit_equal}, {"differ", c.differ}, {"signed_zero", c.signed_zero},
            {"nan_payload", c.nan_payload}, {"beyond", c.beyond}});
  j["max_ulps"] = c.max_ulps == kInfiniteUlps ? Json(nullptr) : Json(c.max_ulps);  // null: NaN against a number
  Json worst = Json::array();
  for (const ElementDiff& d : c.worst)
    worst.push_back({{"index", ck::unravel_index(d.index, t.shape)}, {"actual", d.actual}, {"expected", d.expected},
                     {"ulps", d.ulps == kInfiniteUlps ? Json(nullptr) : Json(d.ulps)},
                     {"what", distance_text(d, f)}});
  j["worst"] = worst;
  return j;
}

void run(const CompareArgs& a) {
  // Reader errors (missing file, not safetensors) and a tensor only one file has propagate to
  // main as exceptions naming the file and the tensor: exit 2.
  const ck::Reader actual(a.actual), expected(a.expected);
  const auto results = ck::compare_files(actual, expected, a.tensors, {.ulps = a.ulps, .worst = a.worst});
  std::size_t failed = 0;
  for (const auto& t : results) failed += !t.within();
  if (a.json) {
    Json tensors = Json::array();
    for (const auto& t : results) tensors.push_back(tensor_json(t));
    const Json j{{"ulps", a.ulps}, {"ok", failed == 0}, {"tensors", tensors}};
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    for (const auto& t : results) print_text(t, a.ulps);
    std::printf("compare: %zu of %zu tensors %s\n", failed, results.size(),
                a.ulps == 0 ? "differ bitwise" : ("beyond " + std::to_string(a.ulps) + " ULP").c_str());
  }
  std::fflush(stdout);
  if (failed != 0) std::exit(1);
}

}  // namespace

void add_compare(CLI::App& app) {
  auto a = std::make_shared<CompareArgs>();
  auto* cmd = app.add_subcommand(
      "compare", "Compare two safetensors files tensor by tensor, bitwise and in ULPs (exit 1 when they differ)");
  cmd->add_option("ACTUAL", a->actual, "The output under test (a device's)")->required()->check(safetensors_path());
  cmd->add_option("EXPECTED", a->expected, "The reference (the emulation's)")->required()->check(safetensors_path());
  cmd->add_option("--ulps", a->ulps, "Allowed ULP distance per element (0: bitwise)")
      ->capture_default_str()->check(not_negative());
  cmd->add_option("--tensor", a->tensors, "Compare only this tensor (repeat for more)")->allow_extra_args(false);
  cmd->add_option("--worst", a->worst, "Elements listed per differing tensor, largest distance first")
      ->capture_default_str()->check(not_negative());
  cmd->add_flag("--json", a->json, "Print the report as JSON");
  cmd->callback([a] { run(*a); });
}

}  // namespace fp8q::cli
