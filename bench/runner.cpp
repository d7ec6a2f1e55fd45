#include "runner.hpp"

#include <benchmark/benchmark.h>

#include <regex>
#include <set>

#include "registry.hpp"

namespace fp8q::bench {
namespace {

class Collector : public benchmark::BenchmarkReporter {
 public:
  explicit Collector(bool medians) : medians_(medians) {}
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      if (r.error_occurred) continue;
      if (medians_ != (r.run_type == Run::RT_Aggregate)) continue;
      if (medians_ && r.aggregate_name != "median") continue;
      Measurement m;
      m.name = r.run_name.function_name;  // as registered (str() appends "/real_time")
      auto get = [&](const char* key) {
        auto it = r.counters.find(key);
        return it == r.counters.end() ? 0.0 : static_cast<double>(it->second);
      };
      m.bytes_per_second = get("bytes_per_second");
      m.items_per_second = get("items_per_second");
      m.real_time_ms = r.GetAdjustedRealTime();
      m.label = r.report_label;
      results.push_back(m);
    }
  }
  std::vector<Measurement> results;

 private:
  bool medians_;
};

std::string escape(const std::string& s) {
  static const std::regex special(R"([.^$|()\[\]{}*+?\\])");
  return std::regex_replace(s, special, R"(\$&)");
}

}  // namespace

std::vector<Measurement> run_cases(const std::string& filter, double min_time_s, int repetitions) {
  register_all();
  const std::regex wanted(filter);
  std::set<std::string> names;
  for (const CaseInfo& c : cases()) {
    if (!std::regex_search(c.name, wanted)) continue;
    names.insert(c.name);
    names.insert(c.baselines.begin(), c.baselines.end());
  }
  if (names.empty()) return {};
  std::string pattern;
  for (const std::string& n : names) pattern += (pattern.empty() ? "^(" : "|") + escape(n);
  pattern += ")(/real_time)?$";

  std::vector<std::string> args = {"fp8q-bench", "--benchmark_filter=" + pattern,
                                   "--benchmark_min_time=" + std::to_string(min_time_s),
                                   "--benchmark_repetitions=" + std::to_string(repetitions),
                                   // repetitions of all cases interleaved in random order, so a
                                   // slow phase of a shared machine hits case and baseline alike
                                   "--benchmark_enable_random_interleaving=true",
                                   "--benchmark_report_aggregates_only=" + std::string(repetitions > 1 ? "true" : "false")};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  int argc = static_cast<int>(argv.size());
  benchmark::Initialize(&argc, argv.data());
  Collector collector(repetitions > 1);
  benchmark::RunSpecifiedBenchmarks(&collector);
  return collector.results;
}

}  // namespace fp8q::bench
