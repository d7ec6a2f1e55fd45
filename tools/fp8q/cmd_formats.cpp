// fp8q formats [--json]: the format table, generated from the descriptors.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "fp8q/numerics/format.hpp"
#include "verbs.hpp"

namespace fp8q::cli {
namespace {

std::string specials_text(const Format& f) {
  switch (f.specials) {
    case Specials::kIeee: return "ieee";
    case Specials::kFiniteNanOnes: return "fn";
    case Specials::kFiniteNanUz: return "fnuz";
    case Specials::kFinite: return "finite";
    case Specials::kExponentOnly: return "e8m0";
  }
  return "?";
}

std::string hex(std::uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llX", static_cast<unsigned long long>(v));
  return buf;
}

nlohmann::json describe(const Format& f) {
  nlohmann::json j;
  j["name"] = f.name;
  j["bits"] = f.bits();
  j["sign_bits"] = f.is_signed ? 1 : 0;
  j["exponent_bits"] = f.exp_bits;
  j["mantissa_bits"] = f.man_bits;
  j["bias"] = f.bias;
  j["specials"] = specials_text(f);
  j["has_inf"] = f.has_inf();
  j["has_nan"] = f.has_nan();
  j["has_negative_zero"] = f.has_negative_zero();
  j["nan_code"] = f.has_nan() ? nlohmann::json(hex(f.canonical_nan())) : nlohmann::json(nullptr);
  j["max_finite"] = f.max_finite();
  j["min_normal"] = f.min_normal();
  j["denorm_min"] = f.denorm_min();
  j["epsilon"] = f.epsilon();
  j["storage_bytes"] = f.storage_bytes();
  return j;
}

void run(bool json) {
  if (json) {
    nlohmann::json all = nlohmann::json::array();
    for (FormatId id : kAllFormats) all.push_back(describe(format_of(id)));
    std::printf("%s\n", all.dump(2).c_str());
    return;
  }
  std::printf("%-9s %-7s %5s %-6s %-4s %-18s %-13s %-13s %-13s %-9s\n", "name", "s/e/m", "bias", "kind", "inf",
              "nan", "max", "min normal", "min subnorm", "epsilon");
  for (FormatId id : kAllFormats) {
    const Format& f = format_of(id);
    const std::string sem = std::to_string(f.is_signed ? 1 : 0) + "/" + std::to_string(f.exp_bits) + "/" +
                            std::to_string(f.man_bits);
    char sub[32];
    if (f.has_zero()) std::snprintf(sub, sizeof sub, "%.7g", f.denorm_min()); else std::snprintf(sub, sizeof sub, "-");
    std::printf("%-9s %-7s %5d %-6s %-4s %-18s %-13.7g %-13.7g %-13s %-9.3g\n", std::string(f.name).c_str(),
                sem.c_str(), f.bias, specials_text(f).c_str(), f.has_inf() ? "yes" : "no",
                f.has_nan() ? hex(f.canonical_nan()).c_str() : "none", f.max_finite(), f.min_normal(), sub,
                f.epsilon());
  }
}

}  // namespace

void add_formats(CLI::App& app) {
  auto* cmd = app.add_subcommand("formats", "List every format fp8q knows, from its descriptor");
  auto json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json, "Print the table as JSON");
  cmd->callback([json] { run(*json); });
}

}  // namespace fp8q::cli
