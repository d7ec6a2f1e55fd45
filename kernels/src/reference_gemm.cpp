// The scalar reference GEMM: per output, the operands are decoded, the model's reference_dot
// runs over them (per 128-K block under block scaling), and the epilogue is applied with the
// integer-exact fp32 operations of numerics/accumulation.hpp. Written for clarity, not speed:
// it is the specification the fast paths are tested against.
#include <algorithm>
#include <vector>

#include "fp8q/kernels/gemm.hpp"
#include "fp8q/numerics/arith.hpp"
#include "fp8q/numerics/convert.hpp"
#include "fp8q/numerics/parallel.hpp"
#include "operands.hpp"
#include "reference_rows.hpp"

namespace fp8q {
namespace detail {
namespace {

// Trainium2's MX path: bf16(x * 2^e), nearest-even (exact unless it leaves bf16's range).
float dequantize_bf16(float x, std::uint8_t e8m0) {
  if (e8m0 == 0xFF) return float_of(0x7FC00000u);
  // x * 2^e is exact in fp64 (x has <= 4 significant bits, |e| <= 127), then one rounding to bf16
  const double v = static_cast<double>(x) * Format::pow2(static_cast<int>(e8m0) - 127);
  return decode_f32(encode_f64(v, kBF16, {.rounding = Rounding::kNearestEven, .overflow = Overflow::kInfOrNan}), kBF16);
}

}  // namespace

// Rows [m0, m1) of the fp32 result (before the output conversion).
void reference_rows(const GemmArgs& g, const GemmOptions& o, std::size_t m0, std::size_t m1, float* out) {
  const auto ta = decode_table(g.a.format), tb = decode_table(g.b.format);
  const bool mx = mx_scaled(g);
  const std::size_t kg = (g.k + kMxGroup - 1) / kMxGroup;
  const int emin_a = format_of(g.a.format).emin(), emin_b = format_of(g.b.format).emin();
  std::vector<float> a(g.k), b(g.k);
  std::vector<std::uint8_t> sa, sb;
  for (std::size_t m = m0; m < m1; ++m)
    for (std::size_t n = 0; n < g.n; ++n) {
      for (std::size_t k = 0; k < g.k; ++k) a[k] = ta[g.a.codes[m * g.k + k]], b[k] = tb[g.b.codes[k * g.n + n]];
      if (nvfp4_scaled(g))  // each element times its block scale: exact in fp32 (gemm.hpp)
        for (std::size_t k = 0; k < g.k; ++k)
          a[k] = mul_f32_rne(a[k], nvfp4_block_scale(g.a, g.k, m, k)),
          b[k] = mul_f32_rne(b[k], nvfp4_block_scale(g.b, g.n, k, n));
      sa.clear(), sb.clear();
      if (is_mx(g.a))
        for (std::size_t j = 0; j < kg; ++j) sa.push_back(g.a.scale_codes[m * kg + j]);
      if (is_mx(g.b))
        for (std::size_t j = 0; j < kg; ++j) sb.push_back(g.b.scale_codes[j * g.n + n]);
      DotInput in{.a = a, .b = b, .mx_scale_a = sa, .mx_scale_b = sb, .emin_a = emin_a, .emin_b = emin_b};
      if (mx && o.mx_dequantize_to_bf16) {  // operands become bf16 values, the scales are used up
        for (std::size_t k = 0; k < g.k; ++k) {
          if (!sa.empty()) a[k] = dequantize_bf16(a[k], sa[k / kMxGroup]);
          if (!sb.empty()) b[k] = dequantize_bf16(b[k], sb[k / kMxGroup]);
        }
        in = DotInput{.a = a, .b = b};
      }
      const float c0 = accumulator_input(g, m, n);  // +0 unless C is the accumulator input
      float r;
      if (block_scaled(g)) {
        r = c0;  // the fp32 accumulator of the scaled partials starts at C0; each block from +0
        for (std::size_t j = 0; j < k_blocks(g); ++j) {
          const std::size_t k0 = j * kScaleBlock, len = std::min(kScaleBlock, g.k - k0);
          DotInput blk = in;
          blk.a = in.a.subspan(k0, len), blk.b = in.b.subspan(k0, len);
          const float p = reference_dot(o.model, blk);
          const float s = mul_f32_rne(block_scale_a(g, m, j), block_scale_b(g, j, n));
          r = add_f32_rne(r, mul_f32_rne(p, s));
        }
      } else {
        in.c = c0;
        const float acc = reference_dot(o.model, in);
        r = mul_f32_rne(acc, nvfp4_scaled(g) ? nvfp4_alpha(g) : mul_f32_rne(plain_scale_a(g, m), plain_scale_b(g, n)));
      }
      if (c_in_epilogue(g)) r = add_f32_rne(r, g.c[m * g.n + n]);
      if (!g.bias.empty()) r = add_f32_rne(r, g.bias[n]);
      out[(m - m0) * g.n + n] = canonical(r);
    }
}

}  // namespace detail

namespace {
// Rows split across threads; each output is computed by one thread from the definition.
void reference_all(const GemmArgs& g, const GemmOptions& o, float* out) {
  parallel_chunks(g.m, o.threads, [&](std::size_t b, std::size_t e) { detail::reference_rows(g, o, b, e, out + b * g.n); },
                  ChunkGrain{.align = 1, .min_per_thread = 1});
}
}  // namespace

void gemm_reference(const GemmArgs& g, const GemmOptions& o, std::span<float> out) {
  detail::check_gemm(g, o, std::as_bytes(out), out.size());
  reference_all(g, o, out.data());
}

void gemm_reference(const GemmArgs& g, const GemmOptions& o, std::span<std::uint16_t> out_bf16) {
  detail::check_gemm(g, o, std::as_bytes(out_bf16), out_bf16.size());
  std::vector<float> f(out_bf16.size());
  reference_all(g, o, f.data());
  constexpr ConvertOptions kRne{.rounding = Rounding::kNearestEven, .overflow = Overflow::kInfOrNan};
  for (std::size_t i = 0; i < f.size(); ++i) out_bf16[i] = static_cast<std::uint16_t>(encode_f32(f[i], kBF16, kRne));
}

}  // namespace fp8q
