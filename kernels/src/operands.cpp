#include "operands.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

#include "fp8q/numerics/convert.hpp"

namespace fp8q::detail {
namespace {

[[noreturn]] void fail(const std::string& what) { throw std::invalid_argument("gemm: " + what); }

std::size_t product(std::size_t x, std::size_t y, const char* what) {
  if (x != 0 && y > SIZE_MAX / x) fail(std::string(what) + ": " + std::to_string(x) + " x " + std::to_string(y) + " overflows");
  return x * y;
}

std::string dims(std::size_t r, std::size_t c) { return std::to_string(r) + " x " + std::to_string(c); }

// Whether two byte ranges share a byte (empty ranges share none).
bool overlaps(std::span<const std::byte> x, std::span<const std::byte> y) {
  if (x.empty() || y.empty()) return false;
  const auto x0 = reinterpret_cast<std::uintptr_t>(x.data()), y0 = reinterpret_cast<std::uintptr_t>(y.data());
  return x0 < y0 + y.size() && y0 < x0 + x.size();
}

const char* scaling_name(OperandScaling s) {
  switch (s) {
    case OperandScaling::kNone: return "no scale";
    case OperandScaling::kTensor: return "a per-tensor scale_inv";
    case OperandScaling::kPerRow: return "per-row/column scale_inv";
    case OperandScaling::kBlock128: return "block scale_inv";
    case OperandScaling::kMx32: return "MX scales";
  }
  return "?";
}

void check_operand(const GemmOperand& op, const char* name, std::size_t rows, std::size_t cols, std::size_t per_row_count,
                   std::size_t block_count, std::size_t mx_rows, std::size_t mx_cols) {
  const std::string n(name);
  const Format& f = format_of(op.format);
  if (f.bits() > 8 || f.specials == Specials::kExponentOnly)
    fail(n + ": format " + std::string(f.name) + " is not an element format (codes must be FP8, fp6 or fp4)");
  if (op.codes.size() != product(rows, cols, name))
    fail(n + ": " + std::to_string(op.codes.size()) + " codes, expected " + dims(rows, cols));
  if (f.bits() < 8)
    for (std::size_t i = 0; i < op.codes.size(); ++i)
      if ((op.codes[i] >> f.bits()) != 0)
        fail(n + "[" + std::to_string(i / cols) + ", " + std::to_string(i % cols) + "]: byte " +
             std::to_string(op.codes[i]) + " is not a " + std::string(f.name) + " code (" + std::to_string(f.bits()) +
             "-bit codes, high bits must be 0)");
  std::size_t want = 0;
  switch (op.scaling) {
    case OperandScaling::kNone: case OperandScaling::kMx32: want = 0; break;
    case OperandScaling::kTensor: want = 1; break;
    case OperandScaling::kPerRow: want = per_row_count; break;
    case OperandScaling::kBlock128: want = block_count; break;
  }
  if (op.scale_inv.size() != want)
    fail(n + ".scale_inv: " + std::to_string(op.scale_inv.size()) + " values, expected " + std::to_string(want) +
         " for " + scaling_name(op.scaling));
  for (std::size_t i = 0; i < op.scale_inv.size(); ++i) {
    if (!is_finite_positive(op.scale_inv[i]))
      fail(n + ".scale_inv[" + std::to_string(i) + "]: " + float_text(op.scale_inv[i]) +
           " is not a finite positive multiplier");
  }
  const std::size_t mx = op.scaling == OperandScaling::kMx32 ? product(mx_rows, mx_cols, name) : 0;
  if (op.mx_scale.size() != mx)
    fail(n + ".mx_scale: " + std::to_string(op.mx_scale.size()) + " E8M0 codes, expected " +
         (mx == 0 ? std::string("none for ") + scaling_name(op.scaling) : dims(mx_rows, mx_cols)));
}

}  // namespace

void check_gemm(const GemmArgs& g, const GemmOptions& o, std::span<const std::byte> out, std::size_t out_size) {
  validate(o.model);
  resolve_isa(o.isa, "GemmOptions::isa");  // a forced ISA this CPU lacks is refused on every path
  const std::size_t kb = (g.k + kScaleBlock - 1) / kScaleBlock, nb = (g.n + kScaleBlock - 1) / kScaleBlock;
  const std::size_t kg = (g.k + kMxGroup - 1) / kMxGroup;
  check_operand(g.a, "a", g.m, g.k, g.m, product(g.m, kb, "a.scale_inv"), g.m, kg);
  check_operand(g.b, "b", g.k, g.n, g.n, product(kb, nb, "b.scale_inv"), kg, g.n);
  const bool a_block = g.a.scaling == OperandScaling::kBlock128, b_block = g.b.scaling == OperandScaling::kBlock128;
  if (a_block != b_block)
    fail(std::string("a has ") + scaling_name(g.a.scaling) + ", b has " + scaling_name(g.b.scaling) +
         ": 1x128 / 128x128 block scaling needs both operands");
  const bool a_mx = g.a.scaling == OperandScaling::kMx32, b_mx = g.b.scaling == OperandScaling::kMx32;
  if ((a_mx && !b_mx && g.b.scaling != OperandScaling::kNone) || (b_mx && !a_mx && g.a.scaling != OperandScaling::kNone))
    fail(std::string("a has ") + scaling_name(g.a.scaling) + ", b has " + scaling_name(g.b.scaling) +
         ": an MX operand pairs with MX scales or none");
  const std::size_t mn = product(g.m, g.n, "output");
  if (!g.c.empty() && g.c.size() != mn) fail("c: " + std::to_string(g.c.size()) + " values, expected " + dims(g.m, g.n));
  if (g.c_role != CRole::kEpilogue && g.c_role != CRole::kAccumulator)
    fail("c_role: " + std::to_string(static_cast<int>(g.c_role)) + " is not a CRole (kEpilogue, kAccumulator)");
  if (!g.bias.empty() && g.bias.size() != g.n)
    fail("bias: " + std::to_string(g.bias.size()) + " values, expected N = " + std::to_string(g.n));
  if (out_size != mn) fail("output: " + std::to_string(out_size) + " elements, expected " + dims(g.m, g.n));
  const std::pair<const char*, std::span<const std::byte>> inputs[] = {
      {"a.codes", std::as_bytes(g.a.codes)},         {"b.codes", std::as_bytes(g.b.codes)},
      {"a.scale_inv", std::as_bytes(g.a.scale_inv)}, {"b.scale_inv", std::as_bytes(g.b.scale_inv)},
      {"a.mx_scale", std::as_bytes(g.a.mx_scale)},   {"b.mx_scale", std::as_bytes(g.b.mx_scale)},
      {"c", std::as_bytes(g.c)},                     {"bias", std::as_bytes(g.bias)}};
  for (const auto& [name, bytes] : inputs)
    if (overlaps(out, bytes))
      fail(std::string("output overlaps ") + name + ": write the result to memory no input uses");
}

std::array<float, 256> decode_table(FormatId id) {
  const Format& f = format_of(id);
  std::array<float, 256> t{};
  for (std::size_t c = 0; c < 256; ++c) t[c] = (c >> f.bits()) == 0 ? decode_f32(c, f) : 0.0f;
  return t;
}

float plain_scale_a(const GemmArgs& g, std::size_t m) {
  switch (g.a.scaling) {
    case OperandScaling::kTensor: return g.a.scale_inv[0];
    case OperandScaling::kPerRow: return g.a.scale_inv[m];
    default: return 1.0f;
  }
}
float plain_scale_b(const GemmArgs& g, std::size_t n) {
  switch (g.b.scaling) {
    case OperandScaling::kTensor: return g.b.scale_inv[0];
    case OperandScaling::kPerRow: return g.b.scale_inv[n];
    default: return 1.0f;
  }
}

float canonical(float x) { return x != x ? float_of(0x7FC00000u) : x; }

// Nearest-even on the bits: adding 0x7FFF plus the last kept bit carries into the kept half
// exactly when the dropped half is above one half, or equal to it with an odd kept half. A
// carry out of the largest finite value gives Inf, as IEEE rounding does.
std::uint16_t to_bf16(float x) {
  const std::uint32_t u = bits_of(x);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return 0x7FC0;
  return static_cast<std::uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

}  // namespace fp8q::detail

namespace fp8q {

std::string_view c_role_name(CRole r) { return r == CRole::kAccumulator ? "accumulator" : "epilogue"; }

std::optional<CRole> parse_c_role(std::string_view name) {
  if (name == "epilogue") return CRole::kEpilogue;
  if (name == "accumulator") return CRole::kAccumulator;
  return std::nullopt;
}

}  // namespace fp8q
