// fp8q bench [--filter REGEX] [--json] [--min-time S] [--repetitions N]: runs the benchmark
// cases and prints, for each, its throughput, every baseline measured in the same run, and
// the ratio (case / baseline; > 1 is faster). Figures are medians over the repetitions.
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "fp8q/numerics/isa.hpp"
#include "registry.hpp"
#include "runner.hpp"
#include "verbs.hpp"

namespace fp8q::cli {
namespace {

struct BenchArgs {
  std::string filter = "^convert/";
  bool json = false;
  double min_time = 0.5;
  int repetitions = 5;
};

void run(const BenchArgs& a) {
  try {
    std::regex check(a.filter);
  } catch (const std::regex_error& e) {
    throw UsageError("--filter: '" + a.filter + "' is not a regular expression: " + e.what());
  }
  if (a.repetitions < 1) throw UsageError("--repetitions: must be at least 1");
  if (a.min_time <= 0) throw UsageError("--min-time: must be positive");
  const auto results = bench::run_cases(a.filter, a.min_time, a.repetitions);
  if (results.empty()) throw UsageError("--filter: no benchmark case matches '" + a.filter + "'");
  std::map<std::string, bench::Measurement> by_name;
  for (const auto& m : results) by_name[m.name] = m;

  const std::regex wanted(a.filter);
  nlohmann::json out = nlohmann::json::array();
  bool blas = false;  // whether an OpenBLAS baseline ran, whose kernel the report names
  for (const auto& m : results) blas = blas || m.name.rfind("gemm/openblas_", 0) == 0;
  const char* coretype = std::getenv("OPENBLAS_CORETYPE");
  const std::string blas_line = "OpenBLAS kernel: " + bench::openblas_kernel() + " (OPENBLAS_CORETYPE " +
                                (coretype != nullptr && *coretype != 0 ? std::string(coretype) : "unset") + ")";
  if (!a.json) {
    std::printf("isa: %s; figures are medians of %d repetitions; ratio = case / baseline\n",
                std::string(isa_name(active_isa())).c_str(), a.repetitions);
    if (blas) std::printf("%s\n", blas_line.c_str());
    std::printf("\n%-44s %10s  %-32s %10s %8s\n", "case", "GB/s", "baseline", "GB/s", "ratio");
  }
  for (const auto& c : bench::cases()) {
    if (!std::regex_search(c.name, wanted) || !by_name.count(c.name)) continue;
    const auto& m = by_name[c.name];
    nlohmann::json j{{"case", c.name},
                     {"bytes_per_second", m.bytes_per_second},
                     {"items_per_second", m.items_per_second},
                     {"ms_per_iteration", m.real_time_ms},
                     {"baselines", nlohmann::json::array()}};
    if (!a.json) {
      // cases that move no counted bytes (searches, GEMMs) show their time per iteration
      if (m.bytes_per_second > 0) {
        std::printf("%-44s %10.2f", c.name.c_str(), m.bytes_per_second / 1e9);
      } else {
        std::printf("%-44s %7.3f ms", c.name.c_str(), m.real_time_ms);
      }
    }
    bool first = true;
    for (const auto& b : c.baselines) {
      if (!by_name.count(b)) continue;
      const auto& base = by_name[b];
      const double ratio = base.bytes_per_second > 0   ? m.bytes_per_second / base.bytes_per_second
                           : base.items_per_second > 0 ? m.items_per_second / base.items_per_second  // GEMMs: flops
                                                       : 0.0;
      j["baselines"].push_back({{"name", b}, {"bytes_per_second", base.bytes_per_second}, {"ratio", ratio}});
      if (!a.json)
        std::printf("%s  %-32s %10.2f %8.2f\n", first ? "" : std::string(55, ' ').c_str(), b.c_str(),
                    base.bytes_per_second / 1e9, ratio);
      first = false;
    }
    if (!a.json && first) std::printf("\n");
    out.push_back(j);
  }
  if (a.json) std::printf("%s\n", out.dump(2).c_str());
}

}  // namespace

void add_bench(CLI::App& app) {
  auto a = std::make_shared<BenchArgs>();
  auto* cmd = app.add_subcommand("bench", "Run the benchmarks; print ratios to baselines measured in the same run");
  cmd->add_option("--filter", a->filter, "Regular expression over case names")->capture_default_str();
  cmd->add_flag("--json", a->json, "Print JSON");
  cmd->add_option("--min-time", a->min_time, "Seconds per measurement")->capture_default_str();
  cmd->add_option("--repetitions", a->repetitions, "Repetitions; figures are their medians")->capture_default_str();
  cmd->callback([a] { run(*a); });
}

}  // namespace fp8q::cli
