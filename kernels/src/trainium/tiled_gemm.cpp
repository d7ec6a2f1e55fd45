// The GEMM as a Trainium kernel issues it: operands laid out in SBUF tiles, one PSUM tile per
// (128-row M tile, 512-column N tile), K instructions accumulated in K order, then the epilogue
// of gemm.hpp on PSUM (see fp8q/kernels/trainium.hpp). Tested equal, bit for bit, to
// gemm_reference: the tiling, padding, layouts and PSUM accumulation reproduce the models.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "../operands.hpp"
#include "fp8q/kernels/trainium.hpp"
#include "fp8q/numerics/accumulation.hpp"
#include "fp8q/numerics/arith.hpp"
#include "fp8q/numerics/convert.hpp"
#include "fp8q/numerics/parallel.hpp"

namespace fp8q::trn {
namespace {

enum class Instr : std::uint8_t { kPlain, kDoubleRow, kBf16, kMx };

std::string model_of(const GemmOptions& o) { return model_name(o.model); }

[[noreturn]] void fail(const std::string& what) { throw std::invalid_argument("gemm_trainium: " + what); }

std::optional<trn3::X4Type> x4_type_of(FormatId f) {
  switch (f) {
    case FormatId::kE4M3FN: return trn3::X4Type::kFloat8E4M3fnX4;
    case FormatId::kE5M2: return trn3::X4Type::kFloat8E5M2X4;
    case FormatId::kE2M1: return trn3::X4Type::kFloat4E2M1fnX4;
    default: return std::nullopt;
  }
}

Instr choose(const GemmArgs& g, const GemmOptions& o) {
  const bool mx = fp8q::detail::mx_scaled(g);
  const AccumulationModel& m = o.model;
  if (fp8q::detail::nvfp4_scaled(g))
    fail("NVFP4 operands (E4M3FN scales per 16 along K): no Trainium instruction takes them (nc_matmul_mx takes MX)");
  if (mx && o.mx_dequantize_to_bf16) {
    if (m == AccumulationModel::systolic(128)) return Instr::kBf16;
    fail("MX operands dequantized to bf16 run on nc_matmul, model systolic:128; " + model_of(o) + " has no such instruction");
  }
  if (m.kind == AccumKind::kTrainium3Mx) {
    for (const auto& [op, name] : {std::pair{&g.a, "a"}, std::pair{&g.b, "b"}})
      if (!x4_type_of(op->format))
        fail(std::string(name) + " is " + std::string(format_of(op->format).name) +
             ": nc_matmul_mx takes float8_e4m3fn_x4, float8_e5m2_x4 or float4_e2m1fn_x4 operands");
    return Instr::kMx;
  }
  if (mx)
    fail("MX operands (E8M0 scales along K) need nc_matmul_mx (trainium3_mx) or dequantization to bf16; " + model_of(o) +
         " runs on nc_matmul, which takes no scales");
  if (m == AccumulationModel::systolic(128)) return Instr::kPlain;
  if (m == AccumulationModel::systolic(256)) {
    for (const auto& [op, name] : {std::pair{&g.a, "a"}, std::pair{&g.b, "b"}})
      if (format_of(op->format).bits() != 8)
        fail(std::string(name) + " is " + std::string(format_of(op->format).name) +
             ": double_row mode (systolic:256) takes FP8 operands only");
    return Instr::kDoubleRow;
  }
  fail("model " + model_of(o) +
       " is no Trainium instruction (systolic:128 = nc_matmul, systolic:256 = nc_matmul double_row, trainium3_mx = "
       "nc_matmul_mx)");
}

std::size_t cdiv(std::size_t x, std::size_t y) { return (x + y - 1) / y; }

// One operand of one K segment, laid out in SBUF: K on partitions, `cols` columns (M for the
// stationary A^T, N for the moving B).
struct SbufOperand {
  std::size_t cols = 0;
  // plain / double_row / bf16: [ceil(K / rows)][cols][rows] elements of `element_bytes`
  // mx: trn3 on-chip codes (x4 image) [128][T][cols] and scales [128][T][cols]
  std::vector<std::uint8_t> data, scales;
  std::size_t k_tiles = 0;  // mx: T
};

// ---- plain / double_row / bf16 operands ----------------------------------------------------------
// value(k, col) gives the element's code (an FP8 code, or bf16 bits); positions past K hold
// 0 (+0 in every format), as the kernel zero-fills a partial pair.
template <class Value>
SbufOperand plain_operand(std::size_t k, std::size_t cols, std::size_t rows, std::size_t eb, const Value& value) {
  SbufOperand op;
  op.cols = cols;
  const std::size_t parts = cdiv(k, rows);
  op.data.assign(parts * cols * rows * eb, 0);
  for (std::size_t kk = 0; kk < k; ++kk)
    for (std::size_t c = 0; c < cols; ++c) {
      const std::uint16_t v = value(kk, c);
      const std::size_t at = (((kk / rows) * cols + c) * rows + kk % rows) * eb;
      op.data[at] = static_cast<std::uint8_t>(v);
      if (eb == 2) op.data[at + 1] = static_cast<std::uint8_t>(v >> 8);
    }
  return op;
}

// Trainium2's MX path: bf16(x * 2^e), nearest-even (exact unless it leaves bf16's range),
// computed in fp64 where x * 2^e is exact, then one rounding.
std::uint16_t dequantize_bf16(float x, std::uint8_t e8m0) {
  if (e8m0 == 0xFF) return 0x7FC0;
  const double v = static_cast<double>(x) * Format::pow2(static_cast<int>(e8m0) - 127);
  return static_cast<std::uint16_t>(
      encode_f64(v, kBF16, {.rounding = Rounding::kNearestEven, .overflow = Overflow::kInfOrNan}));
}

// ---- MX operands --------------------------------------------------------------------------------
// The E8M0 scale of OCP block j (32 consecutive K) for column c of an operand (127 = 2^0 when
// the operand has no MX scales).
struct OcpScales {
  const GemmOperand* op;
  const char* name;
  bool is_a;
  std::size_t groups, n;  // ceil(K / 32); N (for B's row-major [groups, N])
  std::uint8_t at(std::size_t j, std::size_t c) const {
    if (!fp8q::detail::is_mx(*op)) return 127;
    return is_a ? op->scale_codes[c * groups + j] : op->scale_codes[j * n + c];
  }
  std::string where(std::size_t j, std::size_t c) const {
    return std::string(name) + ".scale_codes[" + (is_a ? std::to_string(c) + ", " + std::to_string(j) : std::to_string(j) + ", " + std::to_string(c)) + "]";
  }
};

// Compact scales [mx_blocks(layout, K)][cols] in on-chip group order (trainium3_layout.hpp).
std::vector<std::uint8_t> compact_scales(trn3::KLayout layout, std::size_t k, std::size_t cols, const OcpScales& s) {
  const std::size_t blocks = trn3::mx_blocks(layout, k);
  std::vector<std::uint8_t> compact(blocks * cols);
  for (std::size_t b = 0; b < blocks; ++b)
    for (std::size_t c = 0; c < cols; ++c) {
      if (layout == trn3::KLayout::k1x32) {  // the group is OCP block b
        compact[b * cols + c] = s.at(b, c);
        continue;
      }
      // wrapx group b = 16t + g holds K = 512t + 128slot + 8g + j: OCP blocks 16t + 4slot + g/4;
      // every block with a real K in the group must carry the same scale
      const std::size_t t = b / trn3::kBlocksPerTile, g = b % trn3::kBlocksPerTile;
      std::size_t first = SIZE_MAX;
      for (std::size_t slot = 0; slot < trn3::kPacked; ++slot) {
        const std::size_t k_first = t * trn3::kTileK + slot * trn3::kPartitions + g * trn3::kBlockPartitions;
        if (k_first >= k) break;
        const std::size_t j = k_first / kMxGroup;
        if (first == SIZE_MAX) first = j;
        if (s.at(j, c) != s.at(first, c))
          fail(s.where(first, c) + " = " + std::to_string(s.at(first, c)) + " and " + s.where(j, c) + " = " +
               std::to_string(s.at(j, c)) + " fall in one wrapx MX group (" + std::to_string(b) +
               ": K runs of 8, 128 apart) of nc_matmul_mx, which has one scale: quantize over wrapx groups, or use "
               "trainium3_mx:1x32");
      }
      compact[b * cols + c] = s.at(first, c);
    }
  return compact;
}

template <class Code>
SbufOperand mx_operand(trn3::KLayout layout, FormatId format, std::size_t k, std::size_t cols, const Code& code,
                       const OcpScales& scales) {
  SbufOperand op;
  op.cols = cols;
  op.k_tiles = trn3::k_tiles(k);
  std::vector<std::uint8_t> kn(k * cols);
  for (std::size_t kk = 0; kk < k; ++kk)
    for (std::size_t c = 0; c < cols; ++c) kn[kk * cols + c] = code(kk, c);
  std::vector<std::uint8_t> codes(trn3::onchip_codes_size(k, cols));
  trn3::to_onchip_codes(layout, k, cols, kn, codes);
  const trn3::X4Type type = *x4_type_of(format);
  if (type == trn3::X4Type::kFloat4E2M1fnX4) {
    op.data.resize(codes.size() / trn3::kPacked * trn3::x4_bytes(type));
    trn3::pack_x4(type, codes, op.data);
  } else {
    op.data = std::move(codes);
  }
  op.scales.resize(trn3::onchip_scales_size(k, cols));
  trn3::to_onchip_scales(layout, k, cols, compact_scales(layout, k, cols, scales), op.scales);
  return op;
}

// ---- the kernel --------------------------------------------------------------------------------
struct Segment {
  std::size_t k0, len;
  SbufOperand a, b;  // a: stationary (A^T, cols = M), b: moving (cols = N)
};

struct Plan {
  Instr instr;
  std::vector<Segment> segments;
};

Plan plan(const GemmArgs& g, const GemmOptions& o) {
  Plan pl{choose(g, o), {}};
  const bool block = fp8q::detail::block_scaled(g);
  const std::size_t seg_len = block ? fp8q::detail::kScaleBlock : std::max<std::size_t>(g.k, 1);
  const std::size_t kg = cdiv(g.k, kMxGroup);
  for (std::size_t k0 = 0; k0 < g.k; k0 += seg_len) {
    Segment s{k0, std::min(seg_len, g.k - k0), {}, {}};
    auto a_code = [&](std::size_t k, std::size_t m) -> std::uint8_t { return g.a.codes[m * g.k + s.k0 + k]; };
    auto b_code = [&](std::size_t k, std::size_t n) -> std::uint8_t { return g.b.codes[(s.k0 + k) * g.n + n]; };
    switch (pl.instr) {
      case Instr::kPlain:
      case Instr::kDoubleRow: {
        const std::size_t rows = pl.instr == Instr::kDoubleRow ? 2 : 1;
        s.a = plain_operand(s.len, g.m, rows, 1, a_code);
        s.b = plain_operand(s.len, g.n, rows, 1, b_code);
        break;
      }
      case Instr::kBf16: {
        const auto ta = fp8q::detail::decode_table(g.a.format), tb = fp8q::detail::decode_table(g.b.format);
        const bool mxa = fp8q::detail::is_mx(g.a), mxb = fp8q::detail::is_mx(g.b);
        // an operand without MX scales is already exact in bf16 (every FP8 / fp6 / fp4 value is)
        s.a = plain_operand(s.len, g.m, 1, 2, [&](std::size_t k, std::size_t m) {
          const float x = ta[a_code(k, m)];
          return mxa ? dequantize_bf16(x, g.a.scale_codes[m * kg + (s.k0 + k) / kMxGroup])
                     : static_cast<std::uint16_t>(bits_of(x) >> 16);
        });
        s.b = plain_operand(s.len, g.n, 1, 2, [&](std::size_t k, std::size_t n) {
          const float x = tb[b_code(k, n)];
          return mxb ? dequantize_bf16(x, g.b.scale_codes[((s.k0 + k) / kMxGroup) * g.n + n])
                     : static_cast<std::uint16_t>(bits_of(x) >> 16);
        });
        break;
      }
      case Instr::kMx: {
        const trn3::KLayout layout = o.model.layout == Trn3Layout::kWrapX ? trn3::KLayout::kWrapX : trn3::KLayout::k1x32;
        // MX scales never combine with block scaling (check_gemm), so an MX segment is all of K
        s.a = mx_operand(layout, g.a.format, s.len, g.m, a_code, OcpScales{&g.a, "a", true, kg, g.n});
        s.b = mx_operand(layout, g.b.format, s.len, g.n, b_code, OcpScales{&g.b, "b", false, kg, g.n});
        break;
      }
    }
    pl.segments.push_back(std::move(s));
  }
  return pl;
}

// PSUM for rows [m0, m0 + mr) x columns [n0, n0 + nr) of one segment; with `onto` the first
// instruction accumulates into the values psum holds (the accumulator input), else it starts it.
void run_segment(const Plan& pl, const GemmArgs& g, const GemmOptions& o, const Segment& s, std::size_t m0,
                 std::size_t mr, std::size_t n0, std::size_t nr, std::span<float> psum, bool onto) {
  const Psum dst{mr, nr, psum};
  if (pl.instr == Instr::kMx) {
    const trn3::X4Type ta = *x4_type_of(g.a.format), tb = *x4_type_of(g.b.format);
    const std::size_t T = s.a.k_tiles, xa = trn3::x4_bytes(ta), xb = trn3::x4_bytes(tb);
    for (std::size_t t = 0; t < T; ++t) {
      // tile t of [128][T][cols]: x4 element (p, c) at (p * T + t) * cols + c
      const std::size_t oa = t * g.m + m0, ob = t * g.n + n0;
      const X4Tile st{ta, trn3::kPartitions, mr, T * g.m, std::span(s.a.data).subspan(oa * xa)};
      const X4Tile mv{tb, trn3::kPartitions, nr, T * g.n, std::span(s.b.data).subspan(ob * xb)};
      const ScaleTile sst{T * g.m, std::span(s.a.scales).subspan(oa)};
      const ScaleTile smv{T * g.n, std::span(s.b.scales).subspan(ob)};
      nc_matmul_mx(dst, st, sst, mv, smv, o.model.trn3, onto || t > 0);
    }
    return;
  }
  const std::size_t rows = pl.instr == Instr::kDoubleRow ? 2 : 1, eb = pl.instr == Instr::kBf16 ? 2 : 1;
  const FormatId fa = pl.instr == Instr::kBf16 ? FormatId::kBF16 : g.a.format;
  const FormatId fb = pl.instr == Instr::kBf16 ? FormatId::kBF16 : g.b.format;
  const std::size_t parts = cdiv(s.len, rows);
  for (std::size_t p0 = 0; p0 < parts; p0 += kPartitions) {
    const std::size_t np = std::min(kPartitions, parts - p0);
    const Tile st{fa, np, mr, g.m, std::span(s.a.data).subspan(((p0 * g.m) + m0) * rows * eb)};
    const Tile mv{fb, np, nr, g.n, std::span(s.b.data).subspan(((p0 * g.n) + n0) * rows * eb)};
    nc_matmul(dst, st, mv, rows == 2 ? PerfMode::kDoubleRow : PerfMode::kNone, onto || p0 > 0);
  }
}

// Rows [m_begin, m_end) of the fp32 result, before any bf16 conversion.
void tiled_rows(const Plan& pl, const GemmArgs& g, const GemmOptions& o, std::size_t m_begin, std::size_t m_end,
                float* out) {
  namespace d = fp8q::detail;
  const bool block = d::block_scaled(g);
  std::vector<float> psum;
  for (std::size_t m0 = m_begin; m0 < m_end; m0 += kMaxStationaryFree)
    for (std::size_t n0 = 0; n0 < g.n; n0 += kMaxMovingFree) {
      const std::size_t mr = std::min(kMaxStationaryFree, m_end - m0), nr = std::min(kMaxMovingFree, g.n - n0);
      // acc: the model's result (plain: one PSUM over all K; block: the scaled partials summed),
      // from the accumulator input C0: plain, the PSUM tile holds C0 and every instruction
      // accumulates into it (accumulate=True); block, the scaled partials are added to C0
      std::vector<float> acc(mr * nr);
      for (std::size_t i = 0; i < mr; ++i)
        for (std::size_t c = 0; c < nr; ++c) acc[i * nr + c] = d::accumulator_input(g, m0 + i, n0 + c);
      for (std::size_t j = 0; j < pl.segments.size(); ++j) {
        const bool onto = !block && d::c_accumulates(g);
        if (onto) psum = acc;
        else psum.assign(mr * nr, 0.0f);
        run_segment(pl, g, o, pl.segments[j], m0, mr, n0, nr, psum, onto);
        for (std::size_t i = 0; i < mr; ++i)
          for (std::size_t c = 0; c < nr; ++c) {
            float& a = acc[i * nr + c];
            const float p = psum[i * nr + c];
            a = block ? add_f32_rne(a, mul_f32_rne(p, mul_f32_rne(d::block_scale_a(g, m0 + i, j), d::block_scale_b(g, j, n0 + c))))
                      : p;
          }
      }
      for (std::size_t i = 0; i < mr; ++i)
        for (std::size_t c = 0; c < nr; ++c) {
          const std::size_t m = m0 + i, n = n0 + c;
          float r = acc[i * nr + c];
          if (!block) r = mul_f32_rne(r, mul_f32_rne(d::plain_scale_a(g, m), d::plain_scale_b(g, n)));
          if (d::c_in_epilogue(g)) r = add_f32_rne(r, g.c[m * g.n + n]);
          if (!g.bias.empty()) r = add_f32_rne(r, g.bias[n]);
          out[(m - m_begin) * g.n + n] = d::canonical(r);
        }
    }
}

void tiled_all(const GemmArgs& g, const GemmOptions& o, float* out) {
  const Plan pl = plan(g, o);
  // threads take whole 128-row M tiles: a tile's bits do not depend on who computes it
  parallel_chunks(g.m, o.threads, [&](std::size_t b, std::size_t e) { tiled_rows(pl, g, o, b, e, out + b * g.n); },
                  ChunkGrain{.align = kMaxStationaryFree, .min_per_thread = 1});
}

}  // namespace

std::string_view trainium_instruction(const GemmArgs& g, const GemmOptions& o) {
  switch (choose(g, o)) {
    case Instr::kPlain: return "nc_matmul";
    case Instr::kDoubleRow: return "nc_matmul:double_row";
    case Instr::kBf16: return "nc_matmul:bf16";
    case Instr::kMx: return "nc_matmul_mx";
  }
  return "?";
}

void gemm_trainium(const GemmArgs& g, const GemmOptions& o, std::span<float> out) {
  fp8q::detail::check_gemm(g, o, std::as_bytes(out), out.size());
  tiled_all(g, o, out.data());
}

void gemm_trainium(const GemmArgs& g, const GemmOptions& o, std::span<std::uint16_t> out_bf16) {
  fp8q::detail::check_gemm(g, o, std::as_bytes(out_bf16), out_bf16.size());
  std::vector<float> f(out_bf16.size());
  tiled_all(g, o, f.data());
  for (std::size_t i = 0; i < f.size(); ++i) out_bf16[i] = fp8q::detail::to_bf16(f[i]);
}

}  // namespace fp8q::trn
