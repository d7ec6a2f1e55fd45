// GEMM cases: fp8q's quantized GEMM (e4m3fn x e4m3fn codes, per-tensor scales, fp32 out)
// under fp32_sequential, systolic:128 and Hopper's fused:32:13:rtz, against OpenBLAS sgemm on
// the same shape (fp32 operands already decoded); MXFP8 (e4m3fn codes with E8M0 scales per 32 K
// on both operands) under exact_block:32, against OpenBLAS dgemm (fp64 operands already decoded
// and scaled), and under trainium3_mx:1x32 and :wrapx (nc_matmul_mx, to 1024, against sgemm; wrapx
// with the scales the hardware needs: one per wrapx group of 4 OCP blocks), each on uniform codes
// and scales and on MX-quantized Gaussian data (_gaussian); systolic:128 with 1x128 x 128x128
// block scales (DeepSeek-V3's, on Trainium); fp32_sequential on each micro-kernel this CPU runs,
// forced (GemmOptions::micro_kernel). All measured in the same run. M = N = K, 1 and 2 threads.
#include <cblas.h>

#include <cmath>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "fp8q/kernels/gemm.hpp"
#include "fp8q/numerics/convert.hpp"
#include "registry.hpp"

extern "C" void openblas_set_num_threads(int);
extern "C" char* openblas_get_corename(void);

namespace fp8q::bench {
namespace {

struct Operands {
  std::vector<std::uint8_t> a, b;
  std::vector<float> fa, fb;
  float sa = 0.5f, sb = 0.25f;
  std::vector<std::uint8_t> mx_a, mx_b;  // E8M0 codes near 2^0: A n x n/32, B n/32 x n
};

Operands make(std::size_t n) {
  Operands o;
  std::mt19937_64 rng(n);
  o.a.resize(n * n), o.b.resize(n * n), o.fa.resize(n * n), o.fb.resize(n * n);
  auto code = [&] {  // finite e4m3fn codes (0x7F / 0xFF are NaN)
    for (;;) {
      const auto c = static_cast<std::uint8_t>(rng());
      if ((c & 0x7F) != 0x7F) return c;
    }
  };
  for (std::size_t i = 0; i < n * n; ++i) {
    o.a[i] = code(), o.b[i] = code();
    o.fa[i] = decode_f32(o.a[i], kE4M3FN), o.fb[i] = decode_f32(o.b[i], kE4M3FN);
  }
  o.mx_a.resize(n * ((n + 31) / 32)), o.mx_b.resize(o.mx_a.size());
  for (auto* v : {&o.mx_a, &o.mx_b})
    for (auto& e : *v) e = static_cast<std::uint8_t>(127 - 8 + rng() % 17);
  return o;
}

// micro: the fp32_sequential / systolic micro-kernel forced (GemmOptions::micro_kernel), else
// this CPU's; the label names the path that ran (gemm_path).
void fp8q_case(benchmark::State& state, std::size_t n, int threads, const AccumulationModel& model,
               std::optional<std::string> micro = {}) {
  const Operands o = make(n);
  std::vector<float> d(n * n);
  const GemmArgs g{.m = n, .n = n, .k = n,
                   .a = {.format = FormatId::kE4M3FN, .codes = o.a, .granularity = Granularity::tensor(), .scale_inv = {&o.sa, 1}},
                   .b = {.format = FormatId::kE4M3FN, .codes = o.b, .granularity = Granularity::tensor(), .scale_inv = {&o.sb, 1}}};
  GemmOptions opt{.model = model, .threads = threads};
  opt.micro_kernel = std::move(micro);
  for (auto _ : state) {
    gemm(g, opt, std::span<float>(d));
    benchmark::DoNotOptimize(d.data());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(2 * n * n * n));  // flops
  state.SetLabel(std::string(gemm_path(g, opt)));
}

// Whether this CPU runs the named micro-kernel.
bool runs_micro(const std::string& name) {
  const std::uint8_t one = 0x38;
  const float s = 1.0f;
  const GemmArgs g{.m = 1, .n = 1, .k = 1,
                   .a = {.format = FormatId::kE4M3FN, .codes = {&one, 1}, .granularity = Granularity::tensor(), .scale_inv = {&s, 1}},
                   .b = {.format = FormatId::kE4M3FN, .codes = {&one, 1}, .granularity = Granularity::tensor(), .scale_inv = {&s, 1}}};
  GemmOptions opt{.model = AccumulationModel::fp32_sequential()};
  opt.micro_kernel = name;
  try {
    return gemm_path(g, opt) == name;
  } catch (const std::invalid_argument&) {
    return false;
  }
}

void block_case(benchmark::State& state, std::size_t n, int threads, const AccumulationModel& model) {
  const Operands o = make(n);
  const std::size_t kb = (n + 127) / 128;
  const std::vector<float> sa(n * kb, 0.5f), sb(kb * kb, 0.25f);
  std::vector<float> d(n * n);
  const GemmArgs g{.m = n, .n = n, .k = n,
                   .a = {.format = FormatId::kE4M3FN, .codes = o.a, .granularity = Granularity::block(1, 128), .scale_inv = sa},
                   .b = {.format = FormatId::kE4M3FN, .codes = o.b, .granularity = Granularity::block(128, 128), .scale_inv = sb}};
  for (auto _ : state) {
    gemm(g, {.model = model, .threads = threads}, std::span<float>(d));
    benchmark::DoNotOptimize(d.data());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(2 * n * n * n));
}

// MX-quantized Gaussian data in place of o's codes and scales: each group of 32 K takes the
// scale 2^ceil(log2(amax / 448)), which puts its largest |x| in e4m3fn's top binade as the MX
// rules do, and its codes the nearest-even e4m3fn of x / scale.
void gaussian_mx(Operands& o, std::size_t n) {
  std::mt19937_64 rng(n + 1);
  std::normal_distribution<double> normal;
  const std::size_t groups = (n + 31) / 32;
  auto quantize = [&](std::uint8_t* codes, std::size_t stride, std::uint8_t& scale) {
    double x[32], amax = 0;
    for (double& v : x) v = normal(rng), amax = std::max(amax, std::abs(v));
    const int e = static_cast<int>(std::ceil(std::log2(amax / 448)));
    scale = static_cast<std::uint8_t>(127 + e);
    for (std::size_t i = 0; i < 32; ++i)
      codes[i * stride] = static_cast<std::uint8_t>(encode_f64(std::ldexp(x[i], -e), kE4M3FN));
  };
  for (std::size_t r = 0; r < n; ++r)
    for (std::size_t q = 0; q < groups; ++q) quantize(&o.a[r * n + 32 * q], 1, o.mx_a[r * groups + q]);
  for (std::size_t q = 0; q < groups; ++q)
    for (std::size_t c = 0; c < n; ++c) quantize(&o.b[32 * q * n + c], n, o.mx_b[q * n + c]);
}

// element: e4m3fn, or e2m1 (MXFP4: each code's low 4 bits, the same scales)
void mx_case(benchmark::State& state, std::size_t n, int threads, const AccumulationModel& model,
             bool gaussian = false, FormatId element = FormatId::kE4M3FN) {
  Operands o = make(n);
  if (gaussian) gaussian_mx(o, n);
  if (element == FormatId::kE2M1)
    for (auto* v : {&o.a, &o.b})
      for (auto& c : *v) c &= 0xF;
  if (model.kind == AccumKind::kTrainium3Mx && model.layout == Trn3Layout::kWrapX) {
    // the 4 OCP blocks 16t + 4c + j (c = 0..3) of one wrapx group take block 16t + j's scale
    const std::size_t groups = (n + 31) / 32;
    for (std::size_t q = 0; q < groups; ++q)
      for (std::size_t i = 0; i < n; ++i) {
        const std::size_t lead = q / 16 * 16 + q % 4;
        o.mx_a[i * groups + q] = o.mx_a[i * groups + lead];
        o.mx_b[q * n + i] = o.mx_b[lead * n + i];
      }
  }
  std::vector<float> d(n * n);
  const GemmArgs g{.m = n, .n = n, .k = n,
                   .a = {.format = element, .codes = o.a, .granularity = Granularity::mx(), .scale_codes = o.mx_a},
                   .b = {.format = element, .codes = o.b, .granularity = Granularity::mx_column(), .scale_codes = o.mx_b}};
  for (auto _ : state) {
    gemm(g, {.model = model, .threads = threads}, std::span<float>(d));
    benchmark::DoNotOptimize(d.data());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(2 * n * n * n));
}

// NVFP4 (profile ocp's exact_block:16): random e2m1 codes, E4M3FN block scales in [0.5, 16),
// both operands along K.
void nvfp4_case(benchmark::State& state, std::size_t n, int threads) {
  std::mt19937_64 rng(n + 7);
  std::vector<std::uint8_t> a(n * n), b(n * n), sa(n * (n / 16)), sb((n / 16) * n);
  for (auto& c : a) c = static_cast<std::uint8_t>(rng() % 16);
  for (auto& c : b) c = static_cast<std::uint8_t>(rng() % 16);
  for (auto& c : sa) c = static_cast<std::uint8_t>(0x30 + rng() % 0x28);
  for (auto& c : sb) c = static_cast<std::uint8_t>(0x30 + rng() % 0x28);
  std::vector<float> d(n * n);
  const GemmArgs g{.m = n, .n = n, .k = n,
                   .a = {.format = FormatId::kE2M1, .codes = a, .granularity = Granularity::nvfp4(), .scale_codes = sa,
                         .global_scale = 896.0f},
                   .b = {.format = FormatId::kE2M1, .codes = b, .granularity = Granularity::nvfp4_column(),
                         .scale_codes = sb, .global_scale = 1344.0f}};
  for (auto _ : state) {
    gemm(g, {.model = AccumulationModel::exact_block(16), .threads = threads}, std::span<float>(d));
    benchmark::DoNotOptimize(d.data());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(2 * n * n * n));
}

// The fp64 baseline of the MX GEMM: operands decoded and multiplied by their scales.
void dgemm_case(benchmark::State& state, std::size_t n, int threads) {
  const Operands o = make(n);
  std::vector<double> a(n * n), b(n * n), d(n * n);
  const std::size_t groups = (n + 31) / 32;
  for (std::size_t r = 0; r < n; ++r)
    for (std::size_t c = 0; c < n; ++c) {
      a[r * n + c] = std::ldexp(static_cast<double>(o.fa[r * n + c]), o.mx_a[r * groups + c / 32] - 127);
      b[r * n + c] = std::ldexp(static_cast<double>(o.fb[r * n + c]), o.mx_b[(r / 32) * n + c] - 127);
    }
  openblas_set_num_threads(threads);
  const int ni = static_cast<int>(n);
  for (auto _ : state) {
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, ni, ni, ni, 1.0, a.data(), ni, b.data(), ni, 0.0, d.data(),
                ni);
    benchmark::DoNotOptimize(d.data());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(2 * n * n * n));
}

void sgemm_case(benchmark::State& state, std::size_t n, int threads) {
  const Operands o = make(n);
  std::vector<float> d(n * n);
  openblas_set_num_threads(threads);
  const int ni = static_cast<int>(n);
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, ni, ni, ni, o.sa * o.sb, o.fa.data(), ni, o.fb.data(), ni,
                0.0f, d.data(), ni);
    benchmark::DoNotOptimize(d.data());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(2 * n * n * n));
}

}  // namespace

void register_gemm() {
  for (std::size_t n : {512, 1024, 2048})
    for (int t : {1, 2}) {
      const std::string suffix = "/" + std::to_string(n) + "/threads:" + std::to_string(t);
      add_case("gemm/openblas_sgemm" + suffix, {}, [n, t](benchmark::State& s) { sgemm_case(s, n, t); });
      add_case("gemm/fp32_sequential" + suffix, {"gemm/openblas_sgemm" + suffix},
               [n, t](benchmark::State& s) { fp8q_case(s, n, t, AccumulationModel::fp32_sequential()); });
      for (const std::string micro : {"avx512bf16", "avx512", "avx2"})  // each micro-kernel forced
        if (runs_micro(micro))
          add_case("gemm/fp32_sequential_" + micro + suffix, {"gemm/openblas_sgemm" + suffix, "gemm/fp32_sequential" + suffix},
                   [n, t, micro](benchmark::State& s) { fp8q_case(s, n, t, AccumulationModel::fp32_sequential(), micro); });
      add_case("gemm/systolic128" + suffix, {"gemm/openblas_sgemm" + suffix},
               [n, t](benchmark::State& s) { fp8q_case(s, n, t, AccumulationModel::systolic(128)); });
      add_case("gemm/fused_hopper" + suffix, {"gemm/openblas_sgemm" + suffix},
               [n, t](benchmark::State& s) { fp8q_case(s, n, t, AccumulationModel::hopper()); });
      add_case("gemm/openblas_dgemm" + suffix, {}, [n, t](benchmark::State& s) { dgemm_case(s, n, t); });
      add_case("gemm/systolic128_block128" + suffix, {"gemm/openblas_sgemm" + suffix},
               [n, t](benchmark::State& s) { block_case(s, n, t, AccumulationModel::systolic(128)); });
      add_case("gemm/mxfp8_exact_block32" + suffix, {"gemm/openblas_dgemm" + suffix},
               [n, t](benchmark::State& s) { mx_case(s, n, t, AccumulationModel::exact_block(32)); });
      add_case("gemm/mxfp8_exact_block32_gaussian" + suffix, {"gemm/openblas_dgemm" + suffix},
               [n, t](benchmark::State& s) { mx_case(s, n, t, AccumulationModel::exact_block(32), true); });
      add_case("gemm/nvfp4_exact_block16" + suffix, {"gemm/openblas_dgemm" + suffix, "gemm/openblas_sgemm" + suffix},
               [n, t](benchmark::State& s) { nvfp4_case(s, n, t); });
      for (const auto layout : {Trn3Layout::k1x32, Trn3Layout::kWrapX}) {
        if (n > 1024) break;
        const std::string name = layout == Trn3Layout::k1x32 ? "1x32" : "wrapx";
        add_case("gemm/mxfp8_trainium3_" + name + suffix, {"gemm/openblas_sgemm" + suffix},
                 [n, t, layout](benchmark::State& s) { mx_case(s, n, t, AccumulationModel::trainium3_mx(layout)); });
        add_case("gemm/mxfp8_trainium3_" + name + "_gaussian" + suffix, {"gemm/openblas_sgemm" + suffix},
                 [n, t, layout](benchmark::State& s) {
                   mx_case(s, n, t, AccumulationModel::trainium3_mx(layout), true);
                 });
        add_case("gemm/mxfp4_trainium3_" + name + suffix, {"gemm/openblas_sgemm" + suffix},
                 [n, t, layout](benchmark::State& s) {
                   mx_case(s, n, t, AccumulationModel::trainium3_mx(layout), false, FormatId::kE2M1);
                 });
      }
    }
}

std::string openblas_kernel() {
  const char* name = openblas_get_corename();
  return name != nullptr ? name : "unknown";
}

}  // namespace fp8q::bench
