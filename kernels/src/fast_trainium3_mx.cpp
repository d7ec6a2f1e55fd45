// The fast trainium3_mx GEMM (nc_matmul_mx under assumptions A1 and A2, docs/matmul.md), wrapx
// and 1x32: per 512-K instruction, t = fp32(t + s_p) for partitions p = 0..127 with one
// rounding, where s_p is the exact sum of the partition's 4 scaled products; PSUM adds the
// instructions' t in fp32.
//
// Why it equals the reference bit for bit: each code is decoded to fp64 and multiplied by its
// MX scale, exactly (<= 4 significant bits, |exponent| <= 127 + 17); the path is taken only when
// every partition's 4-product sum is exact in fp64 (partition_sums_exact: the codes' bit range and the
// scales' spread within a partition); t + s_p is rounded once, in the form trn3_sums picks from
// each tile's operands (isa/trn3mx.hpp); every operation runs under the IEEE default environment.
// Threads split the rows.
#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

#include "code_info.hpp"
#include "fold.hpp"
#include "fp8q/numerics/fp_env.hpp"
#include "fp8q/numerics/isa.hpp"
#include "isa/trn3mx.hpp"
#include "model_paths.hpp"
#include "operands.hpp"

namespace fp8q::detail {
namespace {

constexpr std::size_t kGroup = kMxGroup, kRowBlock = 64;  // A block: 64 x 512 fp64 (256 KiB, in L2)

// The K offset within its instruction of slot position i (= 4p + c).
std::size_t slot_k(Trn3Layout layout, std::size_t i) {
  return layout == Trn3Layout::kWrapX ? i / 4 + kTrn3Parts * (i % 4) : i;
}

// Exponent bounds of an operand's finite nonzero codes: |x| = odd * 2^e with low <= e and
// |x| < 2^(top + 1). Over the codes present when `present` is given, else over the format.
struct CodeBounds {
  int low = 1000, top = -1000;
  bool any() const { return top >= low; }
};
CodeBounds code_bounds(FormatId f, std::span<const std::uint8_t> present = {}) {
  std::array<bool, 256> seen{};
  if (present.empty()) seen.fill(true);
  for (std::uint8_t c : present) seen[c] = true;
  CodeBounds b;
  const auto info = code_info(f);
  for (std::size_t c = 0; c < 256; ++c)
    if (seen[c] && info[c].nonzero) b.low = std::min(b.low, info[c].low), b.top = std::max(b.top, info[c].top);
  return b;
}

// The largest spread of an MX operand's scale exponents among the 4 scales one partition's
// slots use, NaN codes (0xFF) aside: 0 in 1x32, whose slots share one 32-K group; in wrapx slot c
// of partition p at tile t reads group 16t + 4c + p / 32.
int scale_spread(const GemmOptions& o, std::span<const std::uint8_t> scales, std::size_t lines, std::size_t groups,
                 std::size_t line_stride, std::size_t group_stride) {
  int spread = 0;
  if (o.model.layout != Trn3Layout::kWrapX) return spread;
  const std::size_t per_tile = kTrn3Slots / kGroup;  // 16 groups of 32 K
  for (std::size_t l = 0; l < lines; ++l)
    for (std::size_t t0 = 0; t0 < groups; t0 += per_tile)
      for (std::size_t j = 0; j < 4; ++j) {
        int lo = 255, hi = 0;
        for (std::size_t c = 0; c < 4; ++c) {
          const std::size_t q = t0 + 4 * c + j;
          const std::uint8_t s = q < groups ? scales[l * line_stride + q * group_stride] : 0xFF;
          if (s != 0xFF) lo = std::min<int>(lo, s), hi = std::max<int>(hi, s);
        }
        if (hi >= lo) spread = std::max(spread, hi - lo);
      }
  return spread;
}

// Every partition's 4-product sum is exact in fp64: 4 products below 2^(top_a + top_b + 2 +
// e_max), multiples of 2^(low_a + low_b + e_min), fit 53 bits; bounded by the formats, or where
// their ranges do not fit, by the codes present (e5m2 x e5m2).
bool partition_sums_exact(const GemmArgs& g, const GemmOptions& o) {
  const std::size_t kg = (g.k + kGroup - 1) / kGroup;
  const int spread = (is_mx(g.a) ? scale_spread(o, g.a.scale_codes, g.m, kg, kg, 1) : 0) +
                     (is_mx(g.b) ? scale_spread(o, g.b.scale_codes, g.n, kg, 1, g.n) : 0);
  CodeBounds ba = code_bounds(g.a.format), bb = code_bounds(g.b.format);
  auto fits = [&] { return !ba.any() || !bb.any() || ba.top + bb.top + 2 + 2 - (ba.low + bb.low) + spread <= 53; };
  if (fits()) return true;
  ba = code_bounds(g.a.format, g.a.codes), bb = code_bounds(g.b.format, g.b.codes);
  return fits();
}

// Operands in partition-slot order, times their MX scales; slots past K: -0 in A, +0 in B.
using Table = std::array<double, 256>;

void decode_a(const GemmArgs& g, const GemmOptions& o, std::size_t m0, std::size_t rows, std::size_t rows_p,
              std::size_t k0, const Table& value, const Table& pow2, double* a, Trn3Range& range) {
  range = {};
  const std::size_t K = g.k, kg = (K + kGroup - 1) / kGroup;
  const bool mx = is_mx(g.a);
  for (std::size_t r = 0; r < rows_p; ++r)
    for (std::size_t i = 0; i < kTrn3Slots; ++i) {
      const std::size_t k = k0 + slot_k(o.model.layout, i), m = m0 + r;
      double x = -0.0;
      if (r < rows && k < K) {
        x = value[g.a.codes[m * K + k]];
        if (mx) x *= pow2[g.a.scale_codes[m * kg + k / kGroup]];
      }
      a[r * kTrn3Slots + i] = x;
      range.add(x);
    }
}

void decode_b(const GemmArgs& g, const GemmOptions& o, std::size_t k0, std::size_t cols, std::size_t panels,
              const Table& value, const Table& pow2, double* b, Trn3Range* range) {
  const std::size_t K = g.k, N = g.n;
  const bool mx = is_mx(g.b);
  std::fill(b, b + panels * kTrn3Slots * cols, 0.0);
  std::fill(range, range + panels, Trn3Range{});
  for (std::size_t i = 0; i < kTrn3Slots; ++i) {
    const std::size_t k = k0 + slot_k(o.model.layout, i);
    if (k >= K) continue;
    const std::uint8_t* codes = g.b.codes.data() + k * N;
    const std::uint8_t* scales = mx ? g.b.scale_codes.data() + (k / kGroup) * N : nullptr;
    for (std::size_t p = 0, n0 = 0; n0 < N; ++p, n0 += cols) {  // panel p: columns n0 .. n0 + cols
      double* dst = b + (p * kTrn3Slots + i) * cols - n0;
      for (std::size_t n = n0; n < std::min(N, n0 + cols); ++n) {
        double x = value[codes[n]];
        if (mx) x *= pow2[scales[n]];
        dst[n] = x;
        range[p].add(x);
      }
    }
  }
}

Table values(FormatId f) {
  Table v{};
  const auto info = code_info(f);
  for (std::size_t c = 0; c < 256; ++c) v[c] = info[c].value;
  return v;
}

Table e8m0_values() {
  Table v{};
  for (std::size_t c = 0; c < 256; ++c) v[c] = e8m0_value(static_cast<std::uint8_t>(c));
  return v;
}

}  // namespace

void trainium3_mx_rows_with(Trn3MxKernel kernel, const GemmArgs& g, const GemmOptions& o, std::size_t m0,
                            std::size_t m1, float* out) {
  ScopedDefaultFpEnv env;
  const std::size_t K = g.k, N = g.n, R = kernel.rows, W = kernel.cols;
  const std::size_t panels = (N + W - 1) / W, np = panels * W, rows = m1 - m0;
  const std::size_t block = (kRowBlock + R - 1) / R * R;
  const Table va = values(g.a.format), vb = values(g.b.format), pow2 = e8m0_values();
  // PSUM starts at the accumulator input C0 (gemm.hpp); padded rows and columns are dropped
  std::vector<float> psum((rows + block) * np, 0.0f);
  start_rows(g, m0, rows, out);
  for (std::size_t r = 0; r < rows; ++r) std::copy_n(out + r * N, N, psum.data() + r * np);
  std::vector<double> a(block * kTrn3Slots), b(panels * kTrn3Slots * W);
  std::vector<Trn3Range> range_b(panels);
  for (std::size_t k0 = 0; k0 < K; k0 += kTrn3Slots) {
    const std::size_t left = K - k0;
    const std::size_t parts = std::min(kTrn3Parts, o.model.layout == Trn3Layout::kWrapX ? left : (left + 3) / 4);
    decode_b(g, o, k0, W, panels, vb, pow2, b.data(), range_b.data());
    for (std::size_t r0 = 0; r0 < rows; r0 += block) {
      const std::size_t n_rows = std::min(block, rows - r0), rows_p = (n_rows + R - 1) / R * R;
      Trn3Range range_a;
      decode_a(g, o, m0 + r0, n_rows, rows_p, k0, va, pow2, a.data(), range_a);
      for (std::size_t j = 0; j < panels; ++j)
        kernel.run({.a = a.data(), .b = b.data() + j * kTrn3Slots * W, .rows = rows_p, .parts = parts,
                    .psum = psum.data() + r0 * np + j * W, .ldp = np, .sums = trn3_sums(range_a, range_b[j])});
    }
  }
  for (std::size_t r = 0; r < rows; ++r) std::copy_n(psum.data() + r * np, N, out + r * N);
  epilogue_rows(g, m0, rows, out);  // C as epilogue, bias, the canonical NaN
}

namespace {

template <Trn3MxKernel (*Kernel)()>
void rows(const GemmArgs& g, const GemmOptions& o, std::size_t m0, std::size_t m1, float* out) {
  trainium3_mx_rows_with(Kernel(), g, o, m0, m1, out);
}

}  // namespace

ModelPath trainium3_mx_path(const GemmArgs& g, const GemmOptions& o) {
  const AccumulationModel& m = o.model;
  if (m.kind != AccumKind::kTrainium3Mx || !m.trn3.exact_partition_sum || !m.trn3.single_rounding_add ||
      o.mx_dequantize_to_bf16 || block_scaled(g))
    return {};
  if (plain_scaled(g.a) || plain_scaled(g.b)) return {};
  if (!partition_sums_exact(g, o)) return {};
  auto path = [](Trn3MxKernel (*kernel)(), RowsFn rows, const char* name) {
    return kernel().run != nullptr ? ModelPath{rows, name} : ModelPath{};
  };
  return dispatch(
      resolve_isa(o.isa, "GemmOptions::isa"), [] { return ModelPath{rows<trn3mx_kernel_generic>, "generic"}; },
      [&] { return path(trn3mx_kernel_avx2, rows<trn3mx_kernel_avx2>, "avx2"); },
      [&] { return path(trn3mx_kernel_avx512, rows<trn3mx_kernel_avx512>, "avx512"); }, [] { return ModelPath{}; });
}

}  // namespace fp8q::detail
