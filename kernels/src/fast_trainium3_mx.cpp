// The fast trainium3_mx:1x32 GEMM (nc_matmul_mx under assumptions A1 and A2, docs/matmul.md):
// per 512-K instruction, t = fp32(t + s_p) for partitions p = 0..127 with one rounding, where
// s_p is the exact sum of the partition's 4 products (K = 512i + 4p + c) times their common
// MX scale; PSUM adds the instructions' t in fp32.
//
// Why it equals the reference bit for bit: operands are decoded to fp64 exactly; in the 1x32
// layout a partition's 4 codes lie in one MX group of 32, so their products share one scale;
// the path is taken only for format pairs whose products are multiples of a quantum q with
// 4 * max|product| < 2^53 q, so the 4-product sum is exact in fp64, and so is its scaling by a
// power of two (within fp64's range); PSUM starts at C0 and adds each t in fp32; t + s_p is formed exactly as a two-sum (r, e) and rounded
// to odd at 53 bits (r moved one ulp toward e when e != 0 and r's last bit is even), which
// rounds to fp32 as the exact sum does (53 >= 24 + 2); every operation runs under the IEEE
// default environment. Threads split the rows. With AVX2 or AVX-512, each 32 columns run in the
// column kernel of isa/trn3mx_kernel.hpp: the same operations per lane.
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <vector>

#include "code_info.hpp"
#include "fp8q/numerics/fp_env.hpp"
#include "fp8q/numerics/isa.hpp"
#include "isa/trn3mx.hpp"
#include "model_paths.hpp"
#include "operands.hpp"

namespace fp8q::detail {
namespace {

constexpr std::size_t kInst = kTrn3MxInstructionK, kParts = kInst / 4, kGroup = 32;
constexpr std::size_t kNb = kTrn3Lanes;  // output columns computed together (32)
constexpr std::size_t kNc = 256;  // columns of B decoded at a time (K x 256 fp64)

// The exponents q of the finest product quantum and t with |product| < 2^t, over finite
// nonzero codes; false when a format has none.
bool product_bounds(FormatId a, FormatId b, int& quantum, int& top) {
  const auto ia = code_info(a), ib = code_info(b);
  int la = 1000, ta = -1000, lb = 1000, tb = -1000;
  for (const auto& c : ia)
    if (c.nonzero) la = std::min(la, c.low), ta = std::max(ta, c.top);
  for (const auto& c : ib)
    if (c.nonzero) lb = std::min(lb, c.low), tb = std::max(tb, c.top);
  if (ta < la || tb < lb) return false;
  quantum = la + lb;
  top = ta + tb + 2;  // |x| < 2^(ta + 1), |y| < 2^(tb + 1)
  return true;
}

// fp32 of the exact t + s (t fp32, s fp64 exact), nearest-even: round to odd at 53 bits first.
inline float add_once(float t, double s) {
  const double td = t;
  const double r = td + s;
  if (!std::isfinite(r)) return static_cast<float>(r);
  const double bv = r - td;
  const double e = (td - (r - bv)) + (s - bv);  // two-sum: r + e = t + s exactly
  double odd = r;
  if (e != 0.0) {
    std::uint64_t bits = std::bit_cast<std::uint64_t>(r);
    if ((bits & 1) == 0) {  // the bracketing neighbour toward e has the odd last bit
      bits = (e > 0) == (r > 0) ? bits + 1 : bits - 1;
      odd = std::bit_cast<double>(bits);
    }
  }
  return static_cast<float>(odd);
}

// 2^(code - 127) as fp64 (exact: E8M0's range is inside fp64's), NaN for 0xFF.
double pow2_of(std::uint8_t code) { return code == 0xFF ? std::nan("") : std::ldexp(1.0, static_cast<int>(code) - 127); }

}  // namespace

// columns: an ISA's column kernel (isa/trn3mx.hpp), which takes the kNb columns in one call with
// the same operations per lane as the scalar loop; nullptr: the scalar loop.
void trainium3_mx_rows_with(Trn3MxColumns columns, const GemmArgs& g, std::size_t m0, std::size_t m1, float* out) {
  static_assert(kNb == kTrn3Lanes && kNc % kNb == 0);
  const bool vector = columns != nullptr;
  ScopedDefaultFpEnv env;
  const std::size_t K = g.k, N = g.n, kg = (K + kGroup - 1) / kGroup;
  const auto ia = code_info(g.a.format), ib = code_info(g.b.format);
  const bool mx_a = g.a.scaling == OperandScaling::kMx32, mx_b = g.b.scaling == OperandScaling::kMx32;
  std::vector<double> a(K), b(K * kNc), sb(kg * kNc), sa(kg);
  for (std::size_t n0 = 0; n0 < N; n0 += kNc) {
    const std::size_t nc = std::min(kNc, N - n0);
    for (std::size_t k = 0; k < K; ++k)
      for (std::size_t j = 0; j < nc; ++j) b[k * kNc + j] = ib[g.b.codes[k * N + n0 + j]].value;
    for (std::size_t q = 0; q < kg; ++q)
      for (std::size_t j = 0; j < nc; ++j) sb[q * kNc + j] = pow2_of(mx_b ? g.b.mx_scale[q * N + n0 + j] : 127);
    for (std::size_t m = m0; m < m1; ++m) {
      for (std::size_t k = 0; k < K; ++k) a[k] = ia[g.a.codes[m * K + k]].value;
      for (std::size_t q = 0; q < kg; ++q) sa[q] = pow2_of(mx_a ? g.a.mx_scale[m * kg + q] : 127);
      for (std::size_t j0 = 0; j0 < nc; j0 += kNb) {
        const std::size_t nb = std::min(kNb, nc - j0);
        std::array<float, kNb> psum{};  // PSUM starts at the accumulator input C0 (gemm.hpp)
        for (std::size_t j = 0; j < nb; ++j) psum[j] = accumulator_input(g, m, n0 + j0 + j);
        if (vector) {  // lanes past nb read stale columns of b and are dropped
          columns(a.data(), sa.data(), &b[j0], &sb[j0], kNc, K, psum.data());
        }
        for (std::size_t k0 = 0; !vector && k0 < K; k0 += kInst) {
          std::array<float, kNb> t{};
          for (std::size_t p = 0; p < kParts && k0 + 4 * p < K; ++p) {
            const std::size_t k = k0 + 4 * p, q = k / kGroup, len = std::min<std::size_t>(4, K - k);
            for (std::size_t j = 0; j < nb; ++j) {
              double s = 0.0;
              for (std::size_t c = 0; c < len; ++c) s += a[k + c] * b[(k + c) * kNc + j0 + j];
              t[j] = add_once(t[j], s * sa[q] * sb[q * kNc + j0 + j]);  // powers of two: exact
            }
          }
          for (std::size_t j = 0; j < nb; ++j) psum[j] = psum[j] + t[j];  // PSUM: fp32(psum + t)
        }
        for (std::size_t j = 0; j < nb; ++j) {
          const std::size_t n = n0 + j0 + j;
          float d = psum[j];
          if (c_in_epilogue(g)) d = d + g.c[m * N + n];
          if (!g.bias.empty()) d = d + g.bias[n];
          out[(m - m0) * N + n] = canonical(d);
        }
      }
    }
  }
}

namespace {

// Columns: the getter of an ISA's column kernel, or nullptr for the scalar loop.
template <Trn3MxColumns (*Columns)()>
void rows(const GemmArgs& g, const GemmOptions&, std::size_t m0, std::size_t m1, float* out) {
  if constexpr (Columns == nullptr) trainium3_mx_rows_with(nullptr, g, m0, m1, out);
  else trainium3_mx_rows_with(Columns(), g, m0, m1, out);
}

}  // namespace

ModelPath trainium3_mx_path(const GemmArgs& g, const GemmOptions& o) {
  const AccumulationModel& m = o.model;
  if (m.kind != AccumKind::kTrainium3Mx || m.layout != Trn3Layout::k1x32 || !m.trn3.exact_partition_sum ||
      !m.trn3.single_rounding_add || o.mx_dequantize_to_bf16 || block_scaled(g))
    return {};
  if (g.a.scaling != OperandScaling::kMx32 && g.a.scaling != OperandScaling::kNone) return {};
  if (g.b.scaling != OperandScaling::kMx32 && g.b.scaling != OperandScaling::kNone) return {};
  int quantum = 0, top = 0;
  if (!product_bounds(g.a.format, g.b.format, quantum, top)) return {};
  // 4 products below 2^top, multiples of 2^quantum: exact in fp64 when 4 * 2^top <= 2^(53 + quantum)
  if (top + 2 - quantum > 53) return {};
  const Isa isa = active_isa();
  if (isa == Isa::kAvx512 && trn3mx_columns_avx512() != nullptr) return {rows<trn3mx_columns_avx512>, "avx512"};
  if ((isa == Isa::kAvx2 || isa == Isa::kAvx512) && trn3mx_columns_avx2() != nullptr)
    return {rows<trn3mx_columns_avx2>, "avx2"};
  return {rows<nullptr>, "generic"};
}

}  // namespace fp8q::detail
