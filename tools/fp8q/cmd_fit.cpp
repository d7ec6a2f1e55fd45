// fp8q fit IN.safetensors [--d DEVICE.safetensors]
//        | --text A.txt B.txt D.txt [--c C.txt] --format F | --format FA,FB
//          [--nearest N] [--screen N] [--tries N] [--seed S] [--json]
// The accumulation models consistent with a device's measurements (kernels/fit.hpp): every
// consistent model of the grid, the nearest inconsistent ones with their misses and a first
// counterexample, and generated inputs that separate the consistent ones, as text or JSON.
// Exit 0 when some model is consistent, 1 when none is, 2 for bad input. docs/validation.md.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fp8q/kernels/fit.hpp"
#include "fp8q/numerics/convert.hpp"
#include "args.hpp"
#include "samples_io.hpp"
#include "verbs.hpp"

namespace fp8q::cli {
namespace {

using Json = nlohmann::ordered_json;

struct FitArgs {
  std::string in, d, c, format;
  std::vector<std::string> text;
  std::size_t nearest = 5, screen = 64, tries = 400;
  std::uint64_t seed = 1;
  bool json = false;
};

// --format F (A and B) or FA,FB: operand formats (element formats, f16, bf16).
std::pair<FormatId, FormatId> text_formats(const std::string& text) {
  const std::size_t comma = text.find(',');
  auto one = [](const std::string& name) { return operand_arg(name, "--format"); };
  if (comma == std::string::npos) return {one(text), one(text)};
  return {one(text.substr(0, comma)), one(text.substr(comma + 1))};
}

std::string hex_text(std::uint32_t u) {
  char hex[16];
  std::snprintf(hex, sizeof hex, "0x%08x", u);
  return hex;
}

// The candidate, and the devices whose published model it is for the samples' operands.
Json candidate_json(const Candidate& c, const DotSamples& s) {
  Json j{{"model", model_name(c.model)},
         {"c_role", c.c_role == CRole::kEpilogue ? "epilogue" : "accumulator"},
         {"published_for", Json::array()}};
  for (const PublishedModel& p : published_as(c, s.format_a, s.format_b)) j["published_for"].push_back(p.devices);
  return j;
}

// The report as JSON: what the text prints, with bit patterns as hex strings.
Json report_json(const FitReport& r, const DotSamples& s) {
  Json j{{"samples", r.samples},
         {"k", s.k},
         {"format_a", std::string(format_of(s.format_a).name)},
         {"format_b", std::string(format_of(s.format_b).name)},
         {"with_c", !s.c.empty()},
         {"candidates", r.candidates},
         {"consistent", Json::array()},
         {"separations", Json::array()},
         {"nearest", Json::array()}};
  for (const Candidate& c : r.consistent) j["consistent"].push_back(candidate_json(c, s));
  for (const Separation& sep : r.separations) {
    Json e{{"against", candidate_json(sep.other, s)}, {"tries", sep.tries}, {"separated", sep.k.has_value()}};
    if (sep.k) {
      e["k"] = *sep.k;
      e["seed"] = sep.seed;
      e["first_gives"] = hex_text(sep.first_gives);
      e["other_gives"] = hex_text(sep.other_gives);
    }
    j["separations"].push_back(std::move(e));
  }
  for (const Miss& m : r.nearest)
    j["nearest"].push_back({{"candidate", candidate_json(m.candidate, s)},
                            {"misses", m.misses},
                            {"first_miss",
                             {{"sample", m.first.sample},
                              {"row", s.row(m.first.sample)},
                              {"column", s.col(m.first.sample)},
                              {"measured", hex_text(m.first.expected)},
                              {"model_gives", hex_text(m.first.got)}}}});
  return j;
}

std::string bits_text(std::uint32_t u) { return hex_text(u) + " (" + float_text(float_of(u)) + ")"; }

// Row, column, how many products are nonzero and their range, and C.
std::string sample_summary(const DotSamples& s, std::size_t i) {
  const std::size_t r = s.row(i), c = s.col(i);
  int lo = 0, hi = 0, nonzero = 0, special = 0;
  for (std::size_t k = 0; k < s.k; ++k) {
    const double p = static_cast<double>(s.a[r * s.k + k]) * s.bt[c * s.k + k];  // exact: 16-bit operands at most
    if (!std::isfinite(p)) ++special;
    else if (p != 0.0) {
      const int e = std::ilogb(p);
      lo = nonzero == 0 ? e : std::min(lo, e), hi = nonzero == 0 ? e : std::max(hi, e), ++nonzero;
    }
  }
  std::string t = "sample " + std::to_string(i) + " (row " + std::to_string(r) + " of A, column " + std::to_string(c) +
                  " of B): " + std::to_string(nonzero) + " of " + std::to_string(s.k) + " products nonzero";
  if (nonzero > 0) t += ", |a b| in [2^" + std::to_string(lo) + ", 2^" + std::to_string(hi + 1) + ")";
  if (special > 0) t += ", " + std::to_string(special) + " not finite";
  if (!s.c.empty()) t += ", C = " + float_text(s.c[i]);
  return t;
}

int run_fit(const FitArgs& a) {
  DotSamples s;
  if (!a.text.empty()) {
    if (!a.in.empty() || !a.d.empty()) throw UsageError("--text reads the text files: give no IN or --d with it");
    if (a.format.empty())
      throw UsageError("--text: name the operands' format with --format F or --format FA,FB (e4m3fn, e5m2, f16, ...)");
    const auto [fa, fb] = text_formats(a.format);
    s = read_text_samples(a.text[0], a.text[1], a.text[2], a.c, fa, fb);
  } else {
    if (a.in.empty()) throw UsageError("give IN.safetensors (a, b, optional c, d) or --text A.txt B.txt D.txt");
    if (!a.format.empty()) throw UsageError("--format is for --text; a safetensors file names its formats");
    if (!a.c.empty()) throw UsageError("--c is for --text; a safetensors file holds its c");
    s = read_samples(a.in, a.d);
  }
  const FitReport r = fit(s, {.nearest = a.nearest, .screen = a.screen, .separation_tries = a.tries, .seed = a.seed});
  if (a.json) {
    std::printf("%s\n", report_json(r, s).dump(2, ' ', false, Json::error_handler_t::replace).c_str());
    return r.consistent.empty() ? 1 : 0;
  }
  std::printf("samples: %zu dot products of K = %zu, %s x %s, %s\n", r.samples, s.k,
              std::string(format_of(s.format_a).name).c_str(), std::string(format_of(s.format_b).name).c_str(),
              s.c.empty() ? "no C" : "with C (as accumulator input or epilogue)");
  std::printf("searched: %zu candidates (fp8q fit --help lists the grid)\n", r.candidates);
  std::printf("consistent with every sample: %zu\n", r.consistent.size());
  for (const Candidate& c : r.consistent) {
    std::string published;
    for (const PublishedModel& p : published_as(c, s.format_a, s.format_b))
      published += std::string(published.empty() ? "\n      the published model of " : "; ") + p.devices;
    std::printf("  %s%s\n", candidate_name(c).c_str(), published.c_str());
  }
  if (r.consistent.size() > 1) {
    std::printf("these %zu agree on every sample (one class): the samples cannot separate them\n", r.consistent.size());
    std::printf("generated inputs that would (%s against each other; fp8q vectors --cases 1 --k K --seed S):\n",
                candidate_name(r.consistent[0]).c_str());
    for (const Separation& sep : r.separations) {
      if (sep.k)
        std::printf("  %s: K = %zu, seed %llu: %s gives %s, it gives %s\n", candidate_name(sep.other).c_str(), *sep.k,
                    static_cast<unsigned long long>(sep.seed), model_name(r.consistent[0].model).c_str(),
                    bits_text(sep.first_gives).c_str(), bits_text(sep.other_gives).c_str());
      else
        std::printf("  %s: none of %zu generated inputs (K up to %zu): equivalent as far as tried\n",
                    candidate_name(sep.other).c_str(), sep.tries, std::max<std::size_t>(8 * s.k, 256));
    }
  }
  if (!r.nearest.empty()) std::printf("nearest inconsistent (fewest misses):\n");
  for (const Miss& m : r.nearest) {
    std::printf("  %s: misses %zu of %zu; first: %s\n", candidate_name(m.candidate).c_str(), m.misses, r.samples,
                sample_summary(s, m.first.sample).c_str());
    std::printf("      measured %s, model gives %s\n", bits_text(m.first.expected).c_str(), bits_text(m.first.got).c_str());
  }
  return r.consistent.empty() ? 1 : 0;
}

}  // namespace

void add_fit(CLI::App& app) {
  auto f = std::make_shared<FitArgs>();
  auto* c = app.add_subcommand(
      "fit",
      "Find the accumulation models consistent with a device's measurements.\n"
      "Searches (with C: as accumulator input and as epilogue term): fp32_sequential; exact_block:B,\n"
      "B in {2,4,8,16,32,64,128}; systolic:T, T in {16,32,64,128,256}; fused:n:alignA:resultR:rtz|rne\n"
      "[:groupG][:promote128], n in {4,8,16,32,64}, R in [10,23], A in [R,R+3], G in {1,2,4}.\n"
      "Exit 0: some model is consistent; 1: none; 2: bad input.");
  c->add_option("IN", f->in, "Samples .safetensors: a [M, K], b [K, N], optional c [M, N], d [M, N]");
  c->add_option("--d", f->d, "Take d from this file (a device's output) instead of IN");
  c->add_option("--text", f->text, "The three text files of A rows, B columns and D bits (published tensor-core format)")
      ->expected(3);
  c->add_option("--c", f->c, "With --text: the file of C bits, one per sample as D (the accumulator input)");
  c->add_option("--format", f->format, "With --text: the format of A and B (F: an element format, f16 or bf16), or of each (FA,FB)");
  c->add_option("--nearest", f->nearest, "Inconsistent models to report with their misses")->capture_default_str();
  c->add_option("--screen", f->screen, "Samples that rank the inconsistent models before the best are counted in full")
      ->capture_default_str();
  c->add_option("--tries", f->tries, "Generated inputs tried to separate two consistent models")->capture_default_str();
  c->add_option("--seed", f->seed, "Seed of the first generated input")->capture_default_str();
  c->add_flag("--json", f->json, "Print the report as JSON (the same exit codes)");
  c->callback([f] {
    if (run_fit(*f) != 0) {  // no consistent model: exit 1, as verify does for a failed check
      std::fflush(stdout);
      std::exit(1);
    }
  });
}

}  // namespace fp8q::cli
