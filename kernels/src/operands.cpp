#include "operands.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include "fp8q/numerics/arith.hpp"
#include "fp8q/numerics/convert.hpp"
#include "seq_micro.hpp"

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

// The granularities the GEMM takes for A ([M, K]) and for B ([K, N]) (gemm.hpp).
bool takes(const Granularity& g, bool is_a) {
  switch (g.kind) {
    case GranularityKind::kTensor: return true;
    case GranularityKind::kRow: return is_a;
    case GranularityKind::kColumn: return !is_a;
    case GranularityKind::kBlock: return g == (is_a ? Granularity::block(1, kScaleBlock) : Granularity::block(kScaleBlock, kScaleBlock));
    case GranularityKind::kMx: return g == (is_a ? Granularity::mx() : Granularity::mx_column());
    case GranularityKind::kNvfp4: return g == Granularity::nvfp4_2d() || g == (is_a ? Granularity::nvfp4() : Granularity::nvfp4_column());
  }
  return false;
}

std::string described(const GemmOperand& op) {
  return "granularity " + granularity_name(op.granularity) + (op.granularity.kind == GranularityKind::kTensor && op.scale_inv.empty() ? " (no scale)" : "");
}

void check_operand(const GemmOperand& op, const char* name, std::size_t rows, std::size_t cols) {
  const std::string n(name);
  const bool is_a = n == "a";
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
  if (!takes(op.granularity, is_a))
    fail(n + ".granularity: " + granularity_name(op.granularity) + " is not one the GEMM takes for " +
         (is_a ? "A [M, K] (tensor row block1x128 mx nvfp4 nvfp4_16x16)"
                : "B [K, N] (tensor col block128x128 mx32x1 nvfp4_16x1 nvfp4_16x16)"));
  const BlockGrid grid = block_grid(op.granularity, {rows, cols});
  const std::size_t blocks = product(grid.grid_rows(), grid.grid_cols(), name);
  const bool mx = is_mx(op), nv = is_nvfp4(op), tensor = op.granularity.kind == GranularityKind::kTensor;
  // one per channel even where K = 0 leaves the grid empty
  const std::size_t want = mx || nv ? 0 : tensor ? 1 : op.granularity.kind == GranularityKind::kRow ? rows
                         : op.granularity.kind == GranularityKind::kColumn ? cols : blocks;
  if (op.scale_inv.size() != want && !(tensor && op.scale_inv.empty()))
    fail(n + ".scale_inv: " + std::to_string(op.scale_inv.size()) + " values, expected " + std::to_string(want) +
         " for " + described(op));
  for (std::size_t i = 0; i < op.scale_inv.size(); ++i) {
    if (!is_finite_positive(op.scale_inv[i]))
      fail(n + ".scale_inv[" + std::to_string(i) + "]: " + float_text(op.scale_inv[i]) +
           " is not a finite positive multiplier");
  }
  if (op.scale_codes.size() != (mx || nv ? blocks : 0))
    fail(n + ".scale_codes: " + std::to_string(op.scale_codes.size()) + (nv ? " E4M3FN" : " E8M0") +
         " codes, expected " + (mx || nv ? dims(grid.grid_rows(), grid.grid_cols()) : "none for " + described(op)));
  if (nv && !is_finite_positive(op.global_scale))
    fail(n + ".global_scale: " + float_text(op.global_scale) + " is not a finite positive NVFP4 tensor scale");
}

}  // namespace

void check_gemm(const GemmArgs& g, const GemmOptions& o, std::span<const std::byte> out, std::size_t out_size) {
  validate(o.model);
  resolve_isa(o.isa, "GemmOptions::isa");  // a forced ISA this CPU lacks is refused on every path
  if (o.micro_kernel) seq_micro_named(*o.micro_kernel);  // likewise a forced micro-kernel
  check_operand(g.a, "a", g.m, g.k);
  check_operand(g.b, "b", g.k, g.n);
  const bool a_block = g.a.granularity.kind == GranularityKind::kBlock, b_block = g.b.granularity.kind == GranularityKind::kBlock;
  if (a_block != b_block)
    fail("a has " + described(g.a) + ", b has " + described(g.b) + ": 1x128 / 128x128 block scaling needs both operands");
  const auto bare = [](const GemmOperand& o) { return o.granularity.kind == GranularityKind::kTensor && o.scale_inv.empty(); };
  if ((is_mx(g.a) && !is_mx(g.b) && !bare(g.b)) || (is_mx(g.b) && !is_mx(g.a) && !bare(g.a)))
    fail("a has " + described(g.a) + ", b has " + described(g.b) + ": an MX operand pairs with MX scales or none");
  if (is_nvfp4(g.a) != is_nvfp4(g.b))
    fail("a has " + described(g.a) + ", b has " + described(g.b) + ": an NVFP4 operand pairs with NVFP4 only");
  if (is_nvfp4(g.a)) {
    if (g.k % kNvfp4BlockSize != 0)
      fail("K = " + std::to_string(g.k) + " is not a multiple of 16 (NVFP4 blocks of 16 along K)");
    const AccumKind kind = o.model.kind;
    if (kind != AccumKind::kFp32Sequential && kind != AccumKind::kExactBlock && kind != AccumKind::kSystolic)
      fail("model " + model_name(o.model) + ": NVFP4 operands take fp32_sequential, exact_block or systolic");
    if (o.mx_dequantize_to_bf16) fail("NVFP4 operands are not MX: mx_dequantize_to_bf16 does not apply");
  }
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
      {"a.scale_codes", std::as_bytes(g.a.scale_codes)},   {"b.scale_codes", std::as_bytes(g.b.scale_codes)},
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
  if (!plain_scaled(g.a)) return 1.0f;
  return g.a.granularity.kind == GranularityKind::kTensor ? g.a.scale_inv[0] : g.a.scale_inv[m];
}
float plain_scale_b(const GemmArgs& g, std::size_t n) {
  if (!plain_scaled(g.b)) return 1.0f;
  return g.b.granularity.kind == GranularityKind::kTensor ? g.b.scale_inv[0] : g.b.scale_inv[n];
}

float nvfp4_block_scale(const GemmOperand& op, std::size_t cols, std::size_t r, std::size_t c) {
  return decode_f32(op.scale_codes[nvfp4_scale_index(op, cols, r, c)], kE4M3FN);
}

float nvfp4_alpha(const GemmArgs& g) {
  const float s = multiply_rne(g.a.global_scale, g.b.global_scale);  // bits, not ==: DAZ
  if (bits_of(s) == 0) return std::numeric_limits<float>::infinity();
  return bits_of(s) == 0x7F800000u ? 0.0f : divide_rne(1.0f, s);
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
