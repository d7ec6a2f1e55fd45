// fp8q vectors OUT.safetensors [--profile P | --model M] [--with-c] [--c-role R]
//              [--format F | --format-a F --format-b F] [--cases N] [--k K] [--seed S] [--npz P]
//              [--samples]
// Conformance vectors (kernels/vectors.hpp): A, B (and C) chosen to separate accumulation
// models, and D as the profile's or model's chip computes it; without a profile or model only
// the inputs (a device harness, or `fp8q matmul`, computes D). docs/validation.md.
#include <memory>
#include <optional>
#include <string>

#include "args.hpp"
#include "fp8q/kernels/profile.hpp"
#include "fp8q/kernels/vectors.hpp"
#include "samples_io.hpp"
#include "verbs.hpp"

namespace fp8q::cli {
namespace {

struct VectorsArgs {
  std::string out, npz, profile, model, c_role = "accumulator", format, format_a, format_b;
  bool with_c = false, samples = false;
  std::size_t cases = 64, k = 256;
  std::uint64_t seed = 0;
};

void run_vectors(const VectorsArgs& a) {
  if (!a.profile.empty() && !a.model.empty()) throw UsageError("--profile and --model: give one (the model D is computed under)");
  if (!a.format.empty() && (!a.format_a.empty() || !a.format_b.empty()))
    throw UsageError("--format sets both operands' format: give it or --format-a / --format-b, not both");
  std::optional<Candidate> expected;
  const std::optional<CRole> role = parse_c_role(a.c_role);
  if (!role) throw UsageError("--c-role: '" + a.c_role + "' is not one of epilogue accumulator");
  if (!a.profile.empty()) {
    const auto pid = parse_profile(a.profile);
    if (!pid) throw UsageError("--profile: '" + a.profile + "' is not one of trn2 trn3 ocp hopper fp32");
    expected = Candidate{device_profile(*pid).plain_model, *role};
  } else if (!a.model.empty()) {
    std::optional<AccumulationModel> m;
    try {
      m = parse_model(a.model);
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("--model: ") + e.what());
    }
    if (!m) throw UsageError("--model: '" + a.model + "' is not a model (see docs/numerics.md for the names)");
    if (m->kind == AccumKind::kTrainium3Mx) throw UsageError("--model: trainium3_mx needs MX scales, which vectors do not carry");
    expected = Candidate{*m, *role};
  }
  const std::string fa = !a.format_a.empty() ? a.format_a : !a.format.empty() ? a.format : "e4m3fn";
  const std::string fb = !a.format_b.empty() ? a.format_b : !a.format.empty() ? a.format : "e4m3fn";
  const VectorSpec spec{.format_a = operand_arg(fa, a.format_a.empty() ? "--format" : "--format-a"),
                        .format_b = operand_arg(fb, a.format_b.empty() ? "--format" : "--format-b"),
                        .cases = a.cases, .k = a.k, .with_c = a.with_c, .seed = a.seed};
  DotSamples s;
  try {
    s = generate_inputs(spec);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  if (a.samples) {  // the grid's diagonal: row i of A with column i of B and C[i][i]
    if (!s.c.empty())
      for (std::size_t i = 0; i < s.m; ++i) s.c[i] = s.c[i * s.n + i];
    s.c.resize(s.c.empty() ? 0 : s.m);
    s.diagonal = true;
  }
  std::map<std::string, std::string> meta = {{"fp8q.generator", "fp8q vectors"}, {"fp8q.seed", std::to_string(a.seed)}};
  if (expected) {
    compute_expected(s, *expected);
    meta["fp8q.model"] = model_name(expected->model);
    if (!a.profile.empty()) meta["fp8q.profile"] = a.profile;
  }
  if (a.with_c) meta["fp8q.c_role"] = std::string(c_role_name(*role));
  write_samples(a.out, s, expected.has_value(), meta);
  if (!a.npz.empty()) write_samples_npz(a.npz, s, expected.has_value());
  const std::string count = s.diagonal ? std::to_string(s.m) + " independent" : std::to_string(s.m) + " x " + std::to_string(s.n);
  std::printf("%s: %s dot products of K = %zu, %s x %s%s; %s\n", a.out.c_str(), count.c_str(), s.k,
              std::string(format_of(s.format_a).name).c_str(), std::string(format_of(s.format_b).name).c_str(),
              a.with_c ? (", with C (" + a.c_role + ")").c_str() : "",
              expected ? ("d under " + model_name(expected->model)).c_str() : "inputs only (no d)");
}

}  // namespace

void add_vectors(CLI::App& app) {
  auto v = std::make_shared<VectorsArgs>();
  auto* c = app.add_subcommand("vectors", "Conformance vectors that separate accumulation models, with expected results");
  c->add_option("OUT", v->out, "Output .safetensors: a [M, K], b [K, N], c [M, N] (--with-c), d [M, N]")
      ->required()
      ->check(safetensors_path());
  c->add_option("--npz", v->npz, "Also write the arrays as NumPy .npz (a, b values; a_codes, b_codes; c; d)");
  c->add_option("--profile", v->profile, "D as this device computes it: trn2 trn3 ocp hopper fp32");
  c->add_option("--model", v->model, "D under this model, e.g. fused:32:13:rtz, fused:32:align24:result23:rne:group4");
  c->add_flag("--with-c", v->with_c, "Add C [M, N] F32");
  c->add_option("--c-role", v->c_role, "C's role in d: accumulator (D = A B + C inside the sum) or epilogue")
      ->capture_default_str();
  c->add_option("--format", v->format, "Format of A and B: an element format, f16 or bf16 (default e4m3fn)");
  c->add_option("--format-a", v->format_a, "Format of A (an element format, f16 or bf16)");
  c->add_option("--format-b", v->format_b, "Format of B (an element format, f16 or bf16)");
  c->add_option("--cases", v->cases, "Designed cases: M = N = cases")->capture_default_str()->check(not_negative());
  c->add_option("--k", v->k, "K of every dot product")->capture_default_str()->check(not_negative());
  c->add_option("--seed", v->seed, "Seed (the same seed gives the same file)")->capture_default_str()->check(not_negative());
  c->add_flag("--samples", v->samples,
              "Write the samples form: a [S, K], b [S, K], c [S], d [S], S = cases independent dot products "
              "(row i of A with column i of B)");
  c->callback([v] { run_vectors(*v); });
}

}  // namespace fp8q::cli
