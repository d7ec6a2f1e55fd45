// Option values shared by the verbs: format and policy names, checked with a message that
// lists what is accepted.
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>

#include "fp8q/numerics/format.hpp"
#include "fp8q/numerics/policy.hpp"

namespace fp8q::cli {

const Format& format_arg(const std::string& name, const std::string& option);
// An element format (8 bits or fewer, not the scale format e8m0) by name; nullopt otherwise.
std::optional<FormatId> element_format(const std::string& name);
// element_format, or UsageError naming `option` and listing the element formats.
FormatId element_arg(const std::string& name, const std::string& option);
inline constexpr const char* kElementFormatNames = "e4m3fn e4m3 e5m2 e4m3fnuz e5m2fnuz e3m4 e2m3 e3m2 e2m1";
// An operand format of samples and vectors (kernels/fit.hpp: the element formats, f16, bf16) by
// name, or UsageError naming `option` and listing them.
std::optional<FormatId> operand_format(const std::string& name);
FormatId operand_arg(const std::string& name, const std::string& option);
Rounding rounding_arg(const std::string& name);
Overflow overflow_arg(const std::string& name);
NanPolicy nan_arg(const std::string& name);
// A decimal or hexadecimal float, correctly rounded to fp32 (strtof), the whole string used.
float float_arg(const std::string& text, const std::string& option);
std::string format_names();  // "f32 f64 bf16 ..."

// A safetensors path: the verbs that take one map or stage files, so '-' (standard input or
// output, which convert and dump take) is refused instead of naming a file called "-".
CLI::Validator safetensors_path();
// An unsigned option (seed, offset, first, count) given as text: CLI11 would wrap "-1" to
// 2^64 - 1.
CLI::Validator not_negative();

}  // namespace fp8q::cli
