// fp8q bench [--filter REGEX | --set NAME] [--json] [--min-time S] [--repetitions N] [--blas-kernel K]:
// runs the benchmark cases and prints, for each, its throughput, every baseline measured in the
// same run, and the ratio (case / baseline; > 1 is faster). Figures are medians over the
// repetitions.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

#include "bounds.hpp"
#include "fp8q/numerics/isa.hpp"
#include "registry.hpp"
#include "runner.hpp"
#include "verbs.hpp"

namespace fp8q::cli {
namespace {

// Named sets of cases, each one --filter: the cases of a table in docs/performance.md.
const std::map<std::string, std::string>& case_sets() {
  static const std::map<std::string, std::string> sets = {
      // "Trainium3's MXFP8 path": the casts, decoding, stochastic rounding, the MX casts and
      // the GEMM models beside sgemm, each with its baseline
      {"mxfp8",
       "^(copy/.*|convert/(f32_to_e4m3fn|e4m3fn_to_f32|bf16_to_e4m3fn|f32_to_e5m2).*|quant/mx_.*"
       "|gemm/(openblas_sgemm|fp32_sequential|systolic128|fused_hopper)/2048"
       "|gemm/(openblas_sgemm|mxfp8_trainium3_(1x32|wrapx)(_gaussian)?)/1024)/threads:1$"},
  };
  return sets;
}

struct BenchArgs {
  std::string filter = "^convert/";
  std::string set;  // a name of case_sets(): its filter
  bool json = false;
  double min_time = 0.5;
  int repetitions = 5;
  std::string blas_kernel;  // OPENBLAS_CORETYPE for this command; "auto": the one that suits the CPU
};

// The OpenBLAS kernel that suits this CPU: its AVX-512 one where the CPU has AVX-512 F + BW,
// else its AVX2 one (OpenBLAS reads the name at load time, before main).
std::string suited_blas_kernel() {
  if (isa_supported(Isa::kAvx512)) return "SkylakeX";
  if (isa_supported(Isa::kAvx2)) return "Haswell";
  return "";
}

// The CPU the figures come from: /proc/cpuinfo's model name, family and model (where Linux gives
// them) and the maker whose kernel choices apply (docs/performance.md, "Kernels per CPU").
std::string cpu_line() {
  std::ifstream f("/proc/cpuinfo");
  std::string line, model_name, family, model;
  auto value = [](const std::string& l) {
    const auto colon = l.find(':');
    return colon == std::string::npos ? std::string() : l.substr(l.find_first_not_of(" \t", colon + 1));
  };
  while (std::getline(f, line) && !line.empty()) {  // the first processor's block
    if (line.rfind("model name", 0) == 0) model_name = value(line);
    else if (line.rfind("cpu family", 0) == 0) family = value(line);
    else if (line.rfind("model\t", 0) == 0 || line.rfind("model ", 0) == 0) model = value(line);
  }
  std::string out = model_name.empty() ? "unknown" : model_name;
  out += " (" + std::string(cpu_vendor_name(cpu_vendor()));
  if (!family.empty()) out += ", family " + family + " model " + model;
  return out + ")";
}

// Runs this command again with OPENBLAS_CORETYPE=kernel (its arguments read back from
// /proc/self/cmdline) unless it is already set so; the environment of the caller is unchanged.
void reexec_with_blas_kernel(const std::string& kernel) {
  const char* now = std::getenv("OPENBLAS_CORETYPE");
  if (kernel.empty() || (now != nullptr && kernel == now)) return;
  std::ifstream f("/proc/self/cmdline", std::ios::binary);
  const std::string raw((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<std::string> args;
  for (std::size_t b = 0, e; b < raw.size(); b = e + 1) {
    e = raw.find('\0', b);
    if (e == std::string::npos) e = raw.size();
    args.push_back(raw.substr(b, e - b));
  }
  if (args.empty()) throw std::runtime_error("--blas-kernel: cannot read this command's arguments");
  std::vector<char*> argv;
  for (auto& x : args) argv.push_back(x.data());
  argv.push_back(nullptr);
  setenv("OPENBLAS_CORETYPE", kernel.c_str(), 1);
  std::fflush(stdout);
  execv("/proc/self/exe", argv.data());
  throw std::runtime_error("--blas-kernel: could not restart the command with OPENBLAS_CORETYPE=" + kernel);
}

void run(BenchArgs a) {
  if (!a.set.empty()) {
    const auto it = case_sets().find(a.set);
    if (it == case_sets().end()) {
      std::string names;
      for (const auto& [name, filter] : case_sets()) names += (names.empty() ? "" : ", ") + name;
      throw UsageError("--set: no set named '" + a.set + "' (one of: " + names + ")");
    }
    a.filter = it->second;
  }
  try {
    std::regex check(a.filter);
  } catch (const std::regex_error& e) {
    throw UsageError("--filter: '" + a.filter + "' is not a regular expression: " + e.what());
  }
  if (a.repetitions < 1) throw UsageError("--repetitions: must be at least 1");
  if (a.min_time <= 0) throw UsageError("--min-time: must be positive");
  if (!a.blas_kernel.empty()) {
    const std::string k = a.blas_kernel == "auto" ? suited_blas_kernel() : a.blas_kernel;
    if (k.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789") != std::string::npos)
      throw UsageError("--blas-kernel: '" + a.blas_kernel + "' is not an OpenBLAS core name (letters and digits)");
    reexec_with_blas_kernel(k);
  }
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
  const bench::CpuFamily family = bench::cpu_family();
  if (!a.json) {
    std::printf("cpu: %s\n", cpu_line().c_str());
    std::printf("cpu family: %s; bound = the largest ratio this family allows the case's kernel "
                "(docs/performance.md), - where none is derived\n",
                std::string(bench::cpu_family_name(family)).c_str());
    std::printf("isa: %s; figures are medians of %d repetitions; ratio = case / baseline\n",
                std::string(isa_name(active_isa())).c_str(), a.repetitions);
    if (blas) std::printf("%s\n", blas_line.c_str());
    if (blas && bench::openblas_kernel() != suited_blas_kernel())
      std::printf("GEMM bounds hold against OpenBLAS's %s kernel (--blas-kernel auto); none is shown\n",
                  suited_blas_kernel().c_str());
    std::printf("\n%-44s %10s  %-32s %10s %8s %6s\n", "case", "GB/s", "baseline", "GB/s", "ratio", "bound");
  }
  for (const auto& c : bench::cases()) {
    if (!std::regex_search(c.name, wanted) || !by_name.count(c.name)) continue;
    const auto& m = by_name[c.name];
    nlohmann::json j{{"case", c.name},
                     {"bytes_per_second", m.bytes_per_second},
                     {"items_per_second", m.items_per_second},
                     {"ms_per_iteration", m.real_time_ms},
                     {"ran", m.label},
                     {"cpu_family", bench::cpu_family_name(family)},
                     {"bound", nullptr},
                     {"baselines", nlohmann::json::array()}};
    // a GEMM's bound is against the sgemm of the OpenBLAS kernel that suits the CPU
    const bool gemm_bound = c.name.rfind("gemm/", 0) != 0 || bench::openblas_kernel() == suited_blas_kernel();
    const bench::Bound bound = gemm_bound ? bench::bound_of(c.name, family).value_or(bench::Bound{}) : bench::Bound{};
    if (bound.ratio > 0) j["bound"] = {{"ratio", bound.ratio}, {"held_by", bound.held_by}};
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
      if (!a.json) {
        std::printf("%s  %-32s %10.2f %8.2f", first ? "" : std::string(55, ' ').c_str(), b.c_str(),
                    base.bytes_per_second / 1e9, ratio);
        if (first && bound.ratio > 0) std::printf(" %6.2f", bound.ratio);  // against the first baseline
        std::printf("\n");
      }
      first = false;
    }
    if (!a.json && first) std::printf("\n");
    if (!a.json && !m.label.empty()) std::printf("%55s(%s)\n", "", m.label.c_str());
    if (!a.json && bound.ratio > 0) std::printf("%55s(bound: %s)\n", "", std::string(bound.held_by).c_str());
    out.push_back(j);
  }
  if (a.json) std::printf("%s\n", out.dump(2).c_str());
}

}  // namespace

void add_bench(CLI::App& app) {
  auto a = std::make_shared<BenchArgs>();
  auto* cmd = app.add_subcommand("bench", "Run the benchmarks; print ratios to baselines measured in the same run");
  cmd->add_option("--filter", a->filter, "Regular expression over case names")->capture_default_str();
  cmd->add_option("--set", a->set, "A named set of cases in place of --filter: mxfp8 (docs/performance.md, "
                  "\"Trainium3's MXFP8 path\")")
      ->excludes(cmd->get_option("--filter"));
  cmd->add_flag("--json", a->json, "Print JSON");
  cmd->add_option("--min-time", a->min_time, "Seconds per measurement")->capture_default_str();
  cmd->add_option("--repetitions", a->repetitions, "Repetitions; figures are their medians")->capture_default_str();
  cmd->add_option("--blas-kernel", a->blas_kernel,
                  "OpenBLAS kernel of the sgemm/dgemm baselines (OPENBLAS_CORETYPE for this command alone): a core "
                  "name (Haswell, SkylakeX, ...) or 'auto', the one that suits this CPU");
  cmd->callback([a] { run(*a); });
}

}  // namespace fp8q::cli
