// Names of formats and policies, as the CLI, JSON and docs spell them.
#include <array>
#include <string_view>
#include <utility>

#include "fp8q/numerics/format.hpp"
#include "fp8q/numerics/policy.hpp"

namespace fp8q {
namespace {
constexpr std::array<std::pair<std::string_view, Rounding>, 7> kRoundings = {{
    {"rne", Rounding::kNearestEven}, {"rna", Rounding::kNearestAway},
    {"rtz", Rounding::kTowardZero},  {"rup", Rounding::kUp},
    {"rdn", Rounding::kDown},        {"rto", Rounding::kOdd},
    {"sr", Rounding::kStochastic},
}};
constexpr std::array<std::pair<std::string_view, Overflow>, 2> kOverflows = {{
    {"saturate", Overflow::kSaturate}, {"inf-nan", Overflow::kInfOrNan},
}};
}  // namespace

std::optional<FormatId> parse_format(std::string_view name) {
  for (FormatId id : kAllFormats)
    if (format_of(id).name == name) return id;
  return std::nullopt;
}
std::optional<Rounding> parse_rounding(std::string_view name) {
  for (auto [n, r] : kRoundings)
    if (n == name) return r;
  return std::nullopt;
}
std::optional<Overflow> parse_overflow(std::string_view name) {
  for (auto [n, o] : kOverflows)
    if (n == name) return o;
  return std::nullopt;
}
std::string_view rounding_name(Rounding r) {
  for (auto [n, v] : kRoundings)
    if (v == r) return n;
  return "?";
}
std::string_view overflow_name(Overflow o) {
  for (auto [n, v] : kOverflows)
    if (v == o) return n;
  return "?";
}

}  // namespace fp8q
