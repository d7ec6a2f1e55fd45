// fp8q dump --format F [--first N] [--count N] FILE: prints index, code and exact value of
// each element of a raw little-endian array, so a file can be read by eye.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "args.hpp"
#include "files.hpp"
#include "fp8q/numerics/convert.hpp"
#include "verbs.hpp"

namespace fp8q::cli {
namespace {

struct DumpArgs {
  std::string format, file;
  std::size_t first = 0, count = 32;
};

void run(const DumpArgs& a) {
  const Format& f = format_arg(a.format, "--format");
  const std::vector<std::byte> data = read_all(a.file);
  const auto eb = static_cast<std::size_t>(f.storage_bytes());
  if (data.size() % eb != 0)
    throw UsageError("input '" + a.file + "' has " + std::to_string(data.size()) + " bytes, not a whole number of " +
                     std::string(f.name) + " elements");
  const std::size_t n = data.size() / eb;
  const int hex_digits = (f.bits() + 3) / 4;
  const std::size_t end = a.first >= n ? a.first : a.first + std::min(a.count, n - a.first);
  for (std::size_t i = a.first; i < end; ++i) {
    std::uint64_t code = 0;
    std::memcpy(&code, data.data() + i * eb, eb);
    if (f.bits() < 64 && (code >> f.bits()) != 0)
      throw UsageError("element " + std::to_string(i) + " of '" + a.file + "' is not a " + std::string(f.name) +
                       " code (" + std::to_string(f.bits()) + " bits)");
    // every format's values are fp64 values, and every fp64 value is a decimal fraction of at
    // most 767 significant digits: %.800g prints it exactly (glibc's printf is exact), and %g
    // drops the trailing zeros, so 448 stays "448" and 2^-127 prints in full
    std::printf("%10zu  0x%0*llX  %.800g\n", i, hex_digits, static_cast<unsigned long long>(code), decode_f64(code, f));
  }
}

}  // namespace

void add_dump(CLI::App& app) {
  auto a = std::make_shared<DumpArgs>();
  auto* cmd = app.add_subcommand("dump", "Print the codes and exact values of a raw array");
  cmd->add_option("--format", a->format, "Element format")->required();
  cmd->add_option("--first", a->first, "First element to print")->capture_default_str()->check(not_negative());
  cmd->add_option("--count", a->count, "How many elements to print")->capture_default_str()->check(not_negative());
  cmd->add_option("FILE", a->file, "Input file, or - for standard input")->required();
  cmd->callback([a] { run(*a); });
}

}  // namespace fp8q::cli
