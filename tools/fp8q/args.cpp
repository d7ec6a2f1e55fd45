#include "args.hpp"

#include <cerrno>
#include <cstdlib>

#include "fp8q/kernels/fit.hpp"
#include "verbs.hpp"

namespace fp8q::cli {

CLI::Validator safetensors_path() {
  return CLI::Validator(
      [](std::string& s) {
        return s == "-" ? std::string("'-' (standard input or output) is not supported here: give a file path")
                        : std::string();
      },
      "PATH");
}

CLI::Validator not_negative() {
  return CLI::Validator(
      [](std::string& s) {
        const auto first = s.find_first_not_of(" \t");
        return first != std::string::npos && s[first] == '-' ? "must not be negative, got " + s : std::string();
      },
      "UINT");
}

std::string format_names() {
  std::string s;
  for (FormatId id : kAllFormats) s += (s.empty() ? "" : " ") + std::string(format_of(id).name);
  return s;
}

const Format& format_arg(const std::string& name, const std::string& option) {
  if (auto id = parse_format(name)) return format_of(*id);
  throw UsageError(option + ": unknown format '" + name + "' (one of: " + format_names() + ")");
}

std::optional<FormatId> element_format(const std::string& name) {
  const auto f = parse_format(name);
  if (!f || format_of(*f).bits() > 8 || format_of(*f).specials == Specials::kExponentOnly) return std::nullopt;
  return f;
}

FormatId element_arg(const std::string& name, const std::string& option) {
  if (const auto f = element_format(name)) return *f;
  throw UsageError(option + ": '" + name + "' is not an element format (" + kElementFormatNames + ")");
}

std::optional<FormatId> operand_format(const std::string& name) {
  const auto f = parse_format(name);
  return f && is_operand_format(*f) ? f : std::nullopt;
}

FormatId operand_arg(const std::string& name, const std::string& option) {
  if (const auto f = operand_format(name)) return *f;
  throw UsageError(option + ": '" + name + "' is not an operand format (" + kElementFormatNames + " f16 bf16)");
}

Rounding rounding_arg(const std::string& name) {
  if (auto r = parse_rounding(name)) return *r;
  throw UsageError("--round: unknown rounding '" + name + "' (one of: rne rna rtz rup rdn rto sr)");
}

Overflow overflow_arg(const std::string& name) {
  if (auto o = parse_overflow(name)) return *o;
  throw UsageError("--overflow: unknown policy '" + name + "' (one of: saturate inf-nan)");
}

NanPolicy nan_arg(const std::string& name) {
  if (name == "error") return NanPolicy::kError;
  if (name == "zero") return NanPolicy::kZero;
  throw UsageError("--nan: unknown policy '" + name + "' (one of: error zero)");
}

float float_arg(const std::string& text, const std::string& option) {
  errno = 0;
  char* end = nullptr;
  const float v = std::strtof(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size())
    throw UsageError(option + ": '" + text + "' is not a number");
  // ERANGE: overflow (+/-HUGE_VALF), or underflow, where strtof still returns the correctly
  // rounded subnormal; only an underflow all the way to zero loses the value.
  if (errno == ERANGE && (v > 1 || v < -1)) throw UsageError(option + ": '" + text + "' is out of fp32 range");
  if (errno == ERANGE && v == 0) throw UsageError(option + ": '" + text + "' underflows fp32 to zero");
  return v;
}

}  // namespace fp8q::cli
