// fp8q convert --from F --to G [--round M] [--overflow P] [--seed N] [--offset N]
//              [--scale S] [--nan error|zero] [--threads N] IN OUT
// Converts a raw little-endian array ("-" for stdin / stdout). fp6 and fp4 use one code per
// byte, in the low bits. The output appears only when complete.
#include <memory>
#include <string>

#include "args.hpp"
#include "files.hpp"
#include "fp8q/numerics/bulk.hpp"
#include "verbs.hpp"

namespace fp8q::cli {
namespace {

struct ConvertArgs {
  std::string from, to, round = "rne", overflow = "saturate", nan = "error", scale;
  std::uint64_t seed = 0, offset = 0;
  int threads = 1;
  std::string in, out;
};

void run(const ConvertArgs& a) {
  const Format& from = format_arg(a.from, "--from");
  const Format& to = format_arg(a.to, "--to");
  ConvertOptions o;
  o.rounding = rounding_arg(a.round);
  o.overflow = overflow_arg(a.overflow);
  o.nan = nan_arg(a.nan);
  o.seed = a.seed;
  o.offset = a.offset;
  if (!a.scale.empty()) o.scale = float_arg(a.scale, "--scale");
  if (a.threads < 1) throw UsageError("--threads: must be at least 1, got " + std::to_string(a.threads));

  const std::vector<std::byte> in = read_all(a.in);
  // a size that is no whole number of elements is refused by convert() (before any output)
  std::vector<std::byte> out(in.size() / static_cast<std::size_t>(from.storage_bytes()) *
                             static_cast<std::size_t>(to.storage_bytes()));
  try {
    convert(in, from, out, to, o, {a.threads, std::nullopt});
  } catch (const NanError& e) {
    throw UsageError("input '" + a.in + "' " + e.what() + "; pass --nan zero to write 0 instead");
  } catch (const std::invalid_argument& e) {
    throw UsageError("input '" + a.in + "': " + e.what());
  }
  write_all_atomically(a.out, out, a.in);
}

}  // namespace

void add_convert(CLI::App& app) {
  auto a = std::make_shared<ConvertArgs>();
  auto* cmd = app.add_subcommand("convert", "Convert a raw little-endian array between formats");
  cmd->add_option("--from", a->from, "Source format (fp8q formats lists them)")->required();
  cmd->add_option("--to", a->to, "Target format")->required();
  cmd->add_option("--round", a->round, "Rounding: rne rna rtz rup rdn rto sr")->capture_default_str();
  cmd->add_option("--overflow", a->overflow, "Overflow: saturate inf-nan")->capture_default_str();
  cmd->add_option("--nan", a->nan, "NaN into a format without NaN (e2m3 e3m2 e2m1): error zero")
      ->capture_default_str();
  cmd->add_option("--seed", a->seed, "Stochastic rounding: Philox key")->capture_default_str()->check(not_negative());
  cmd->add_option("--offset", a->offset, "Stochastic rounding: counter of element 0")->capture_default_str()->check(not_negative());
  cmd->add_option("--scale", a->scale, "Multiply first: convert fp32(x * scale)");
  cmd->add_option("--threads", a->threads, "Worker threads (results do not depend on it)")->capture_default_str();
  cmd->add_option("IN", a->in, "Input file, or - for standard input")->required();
  cmd->add_option("OUT", a->out, "Output file, or - for standard output")->required();
  cmd->callback([a] { run(*a); });
}

}  // namespace fp8q::cli
