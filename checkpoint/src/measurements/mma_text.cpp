// The text format of tensor-core measurements (fp8q/checkpoint/mma_text.hpp): a strict
// line parser that checks every token and names the file, line and value of the first bad one.
#include "fp8q/checkpoint/mma_text.hpp"

#include <string>

#include "fp8q/checkpoint/safetensors.hpp"

namespace fp8q::checkpoint {
namespace {

[[noreturn]] void fail(std::string_view file, std::size_t line, const std::string& what) {
  throw FormatError(std::string(file) + ": line " + std::to_string(line) + ": " + what);
}

// The non-empty lines of `text` with their 1-based line numbers ("\r\n" ends a line too).
template <class F>
void for_each_line(std::string_view text, F&& f) {
  std::size_t number = 0;
  for (std::size_t start = 0; start < text.size();) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    ++number;
    if (line.find_first_not_of(" \t") != std::string_view::npos) f(line, number);
    start = end + 1;
  }
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// One operand file: lines of K hex words each; returns the number of lines.
std::size_t parse_operands(std::string_view text, std::string_view name, std::size_t& k,
                           std::vector<std::uint32_t>& out) {
  std::size_t lines = 0;
  for_each_line(text, [&](std::string_view line, std::size_t number) {
    std::size_t count = 0;
    for (std::size_t i = 0; i < line.size();) {
      if (line[i] == ' ' || line[i] == '\t') {
        ++i;
        continue;
      }
      const std::size_t begin = i;
      while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
      const std::string_view token = line.substr(begin, i - begin);
      std::uint32_t v = 0;
      bool ok = token.size() <= 8;
      for (char c : token) {
        const int h = hex_digit(c);
        ok = ok && h >= 0;
        v = (v << 4) | static_cast<std::uint32_t>(h < 0 ? 0 : h);
      }
      ++count;
      if (!ok)
        fail(name, number, "value " + std::to_string(count) + " '" + std::string(token.substr(0, 40)) +
                               "' is not an fp32 bit pattern (1 to 8 hex digits)");
      out.push_back(v);
    }
    if (k == 0) k = count;
    if (count != k)
      fail(name, number, "has " + std::to_string(count) + " values, the lines before have " + std::to_string(k));
    ++lines;
  });
  return lines;
}

// A result file (D, or C): one fp32 bit pattern a line as 32 binary digits; `lines` of them.
std::vector<std::uint32_t> parse_bits(std::string_view text, std::string_view name, std::string_view a_name,
                                      std::size_t lines) {
  std::vector<std::uint32_t> out;
  for_each_line(text, [&](std::string_view line, std::size_t number) {
    while (!line.empty() && (line.back() == ' ' || line.back() == '\t')) line.remove_suffix(1);
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    std::uint32_t v = 0;
    bool ok = line.size() == 32;
    for (char c : line) ok = ok && (c == '0' || c == '1'), v = (v << 1) | (c == '1' ? 1u : 0u);
    if (!ok)
      fail(name, number,  // append, not operator+: GCC 12's -Wrestrict misfires on the latter on aarch64
           std::string(1, '\'').append(line.substr(0, 40)).append("' is not an fp32 bit pattern (32 binary digits)"));
    out.push_back(v);
  });
  if (out.size() != lines)
    throw FormatError(std::string(name) + ": " + std::to_string(out.size()) + " lines, " + std::string(a_name) +
                      " has " + std::to_string(lines));
  return out;
}

}  // namespace

MmaText parse_mma_text(std::string_view a, std::string_view b, std::string_view d, std::string_view a_name,
                       std::string_view b_name, std::string_view d_name, std::optional<std::string_view> c,
                       std::string_view c_name) {
  MmaText t;
  std::size_t kb = 0;
  const std::size_t na = parse_operands(a, a_name, t.k, t.a);
  const std::size_t nb = parse_operands(b, b_name, kb, t.b);
  if (na == 0) throw FormatError(std::string(a_name) + ": no samples (no non-empty line)");
  if (nb != na)
    throw FormatError(std::string(b_name) + ": " + std::to_string(nb) + " lines, " + std::string(a_name) + " has " +
                      std::to_string(na));
  if (kb != t.k)
    throw FormatError(std::string(b_name) + ": lines of " + std::to_string(kb) + " values, " + std::string(a_name) +
                      " has " + std::to_string(t.k) + " (K must agree)");
  if (c) t.c = parse_bits(*c, c_name, a_name, na);
  t.d = parse_bits(d, d_name, a_name, na);
  return t;
}

}  // namespace fp8q::checkpoint
