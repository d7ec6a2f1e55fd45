// Test helper: the exact_block and fused problems (and the C values) that every kernel of
// those models must get bit for bit right, shared by the tests through gemm()
// (gemm_fast_models_test.cpp, gemm_accumulator_test.cpp) and the one through each kernel text
// (gemm_models_lanes16_test.cpp). Each generator calls f(problem, model) for every case, from
// a fixed seed.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <tuple>

#include "fp8q/kernels/gemm.hpp"
#include "fp8q/numerics/convert.hpp"
#include "gemm_fixture.hpp"

namespace fp8q::testing {

// 1x1x1: degenerate; 7/13/33/130: no tile multiples (the exact_block tile is 6 x 16, the fused
// one 5 x 16); 97 rows: two row blocks of 96; 300 / 1100 columns: several column blocks;
// K = 600: several chunks; K = 0: empty sums; K = 40: a partial block.
inline constexpr Shape kModelShapes[] = {{1, 1, 1},     {7, 33, 130},  {130, 7, 33}, {13, 300, 40},
                                         {97, 17, 260}, {2, 1100, 20}, {7, 20, 600}, {3, 5, 0}};

inline std::string name_of(const Problem& p, const AccumulationModel& model) {
  return std::to_string(p.m) + "x" + std::to_string(p.n) + "x" + std::to_string(p.k) + " " +
         std::string(format_of(p.fa).name) + "*" + std::string(format_of(p.fb).name) + " " + model_name(model);
}

// Which C values a problem gets (as the accumulator input or the epilogue's C).
enum class CValues {
  kKernelRange,  // finite: +/-0, or 2^-100 <= |C| < 2^126 (every fast path takes these)
  kAnything,     // also NaN, +/-Inf, subnormals, |C| < 2^-100, |C| >= 2^126
};

// Random C of m x n: +/-0, values of mixed exponents, and (kAnything) specials and subnormals.
inline void fill_c(Problem& p, std::mt19937_64& rng, CValues which) {
  const float inf = std::numeric_limits<float>::infinity();
  p.c.resize(p.m * p.n);
  for (float& c : p.c) {
    const unsigned r = static_cast<unsigned>(rng() % 100);
    const float v = static_cast<float>(static_cast<int>(rng() % 2001) - 1000) * 0.37f;
    if (r < 60) c = v;
    else if (r < 70) c = r % 2 == 0 ? 0.0f : -0.0f;
    else if (r < 80) c = std::ldexp(v, static_cast<int>(rng() % 60) - 30);  // large and small, same or far exponents
    else if (which == CValues::kKernelRange) c = std::ldexp(1.0f + static_cast<float>(r) / 128.0f, r % 2 == 0 ? -100 : 125);
    else if (r < 85) c = std::nanf("");
    else if (r < 90) c = r % 2 == 0 ? inf : -inf;
    else if (r < 95) c = std::ldexp(v, -140);  // subnormal
    else c = r % 2 == 0 ? 0x1p-110f : -0x1.8p126f;
  }
}

// MXFP8 / MXFP6 / MXFP4 GEMMs (the OCP profile's MX model): MX scales over E8M0's whole range
// on both operands or on one. e4m3fn x e4m3fn always sums blocks directly in fp64; e5m2 pairs
// need the split sum when a tile's exponents spread (random codes: almost always).
template <class Fn>
void exact_block_mx_cases(Fn&& f) {
  using F = FormatId;
  using S = testing::Scales;
  std::mt19937_64 rng(11);
  const std::tuple<F, F, S, S> variants[] = {
      {F::kE4M3FN, F::kE4M3FN, S::kMx32, S::kMx32}, {F::kE4M3FN, F::kE5M2, S::kMx32, S::kMx32},
      {F::kE5M2, F::kE5M2, S::kMx32, S::kMx32},     {F::kE2M1, F::kE2M3, S::kMx32, S::kNone},
      {F::kE3M2, F::kE4M3FN, S::kNone, S::kMx32},
  };
  for (const Shape& s : kModelShapes)
    for (const auto& [fa, fb, sa, sb] : variants)
      for (const AccumulationModel& model : {AccumulationModel::exact_block(32), AccumulationModel::exact_block(8)}) {
        Problem p = random_problem(rng, s.m, s.n, s.k, fa, fb, sa, sb, s.k % 2 == 0, s.m % 2 == 1, 60);
        wide_mx_scales(p, rng);
        f(p, model);
      }
}

// exact_block without MX scales: plain and block-128 scaling, blocks that do not divide 128
// (7, 100) and blocks longer than a chunk (300).
template <class Fn>
void exact_block_plain_cases(Fn&& f) {
  using F = FormatId;
  using S = testing::Scales;
  using M = AccumulationModel;
  std::mt19937_64 rng(12);
  const std::tuple<F, F, S, S> variants[] = {
      {F::kE4M3FN, F::kE4M3FN, S::kTensor, S::kPerChannel}, {F::kE5M2, F::kE4M3, S::kPerChannel, S::kTensor},
      {F::kE4M3FN, F::kE5M2, S::kBlock128, S::kBlock128}, {F::kE5M2FNUZ, F::kE3M4, S::kNone, S::kNone},
  };
  for (const Shape& s : kModelShapes)
    for (const auto& [fa, fb, sa, sb] : variants)
      for (const M& model : {M::exact_block(32), M::exact_block(7), M::exact_block(100), M::exact_block(300)})
        f(random_problem(rng, s.m, s.n, s.k, fa, fb, sa, sb, true, false, 40), model);
}

// A block whose exact sum lies just above or below an fp32 rounding midpoint, which a single
// fp64 sum cannot see: e5m2 products 2^24 + 1 + tiny (tiny = +/-2^-32) need 57 bits. Every
// output of row m times column n gets the same two blocks (columns padded with 0); f(p, tiny).
template <class Fn>
void exact_block_split_sum_cases(Fn&& f) {
  auto code = [](double v) { return static_cast<std::uint8_t>(encode_f64(v, kE5M2)); };
  for (const double tiny : {std::ldexp(1.0, -32), -std::ldexp(1.0, -32)}) {
    Problem p{.m = 7, .n = 9, .k = 64, .fa = FormatId::kE5M2, .fb = FormatId::kE5M2};
    p.a.assign(p.m * p.k, 0), p.b.assign(p.k * p.n, 0);
    for (std::size_t m = 0; m < p.m; ++m) {
      p.a[m * p.k + 3] = code(4096.0), p.a[m * p.k + 10] = code(1.0), p.a[m * p.k + 31] = code(std::ldexp(1.0, -16));
      p.a[m * p.k + 40] = code(1.0);  // the second block: 1 * 0.5 alone
    }
    for (std::size_t n = 0; n < p.n; ++n) {
      p.b[3 * p.n + n] = code(4096.0), p.b[10 * p.n + n] = code(1.0), p.b[31 * p.n + n] = code(std::ldexp(tiny, 16));
      p.b[40 * p.n + n] = code(0.5);
    }
    f(p, tiny);
  }
}

// `count` small problems whose blocks mix a few large magnitudes of both signs (which cancel),
// ones and powers of two down to 2^-16, with and without MX scales: sums on and near fp32
// midpoints with tails far below fp64's precision; f(p, model) for blocks of 32, 16 and 4.
template <class Fn>
void exact_block_cancellation_cases(int count, Fn&& f) {
  using F = FormatId;
  using S = testing::Scales;
  std::mt19937_64 rng(123);
  auto value = [&] {
    const unsigned r = static_cast<unsigned>(rng() % 10);
    double v = r < 3   ? std::ldexp(1.0 + static_cast<double>(rng() % 4) / 4.0, 10 + static_cast<int>(rng() % 4))
               : r < 6 ? std::ldexp(1.0, -static_cast<int>(rng() % 17))
               : r < 8 ? 1.0
                       : 0.0;
    return rng() % 2 == 0 ? v : -v;
  };
  const F formats[] = {F::kE5M2, F::kE4M3FN, F::kE5M2FNUZ};
  constexpr ConvertOptions kSat{.rounding = Rounding::kNearestEven, .overflow = Overflow::kSaturate};
  for (int it = 0; it < count; ++it) {
    const std::size_t m = 1 + rng() % 13, n = 1 + rng() % 20, k = 1 + rng() % 100;
    const F fa = formats[rng() % 3], fb = formats[rng() % 3];
    const bool mx = rng() % 2 == 0;
    Problem p{.m = m, .n = n, .k = k, .fa = fa, .fb = fb, .sa = mx ? S::kMx32 : S::kNone, .sb = mx ? S::kMx32 : S::kNone};
    p.a.resize(m * k), p.b.resize(k * n);
    for (auto& c : p.a) c = static_cast<std::uint8_t>(encode_f64(value(), format_of(fa), kSat));
    for (auto& c : p.b) c = static_cast<std::uint8_t>(encode_f64(value(), format_of(fb), kSat));
    if (mx) {
      p.mx_a.resize(m * cdiv(k, 32)), p.mx_b.resize(cdiv(k, 32) * n);
      for (auto* v : {&p.mx_a, &p.mx_b})
        for (auto& e : *v) e = static_cast<std::uint8_t>(100 + rng() % 50);
    }
    for (int block : {32, 16, 4}) f(p, AccumulationModel::exact_block(block));
  }
}

// Hopper's model and its neighbours: rounding rtz / rne, promotion, steps that are odd (5),
// of 6 slots (two after the last four) or longer than a chunk (320), f below the product width
// (3) and up to 23 where the sum still fits 31 bits (n = 16, 32: 33 * 2^25 < 2^31), alignment
// widths other than the result width (narrower, wider, up to the kernel's 26), on plain and
// block-128 scaling.
template <class Fn>
void fused_model_cases(Fn&& f) {
  using F = FormatId;
  using S = testing::Scales;
  using M = AccumulationModel;
  std::mt19937_64 rng(13);
  const std::tuple<F, F, S, S> variants[] = {
      {F::kE4M3FN, F::kE4M3FN, S::kTensor, S::kTensor}, {F::kE5M2, F::kE5M2, S::kNone, S::kPerChannel},
      {F::kE4M3FN, F::kE5M2, S::kBlock128, S::kBlock128}, {F::kE5M2FNUZ, F::kE4M3FNUZ, S::kPerChannel, S::kNone},
      {F::kE3M4, F::kE2M1, S::kNone, S::kNone},
  };
  const M models[] = {M::hopper(),
                      M::fused(32, 13, Rounding::kNearestEven),
                      M::fused(32, 13, Rounding::kTowardZero, 128),
                      M::fused(5, 3, Rounding::kNearestEven, 10),
                      M::fused(16, 23, Rounding::kNearestEven),
                      M::fused(32, 23, Rounding::kTowardZero),
                      M::fused(320, 10, Rounding::kTowardZero),
                      M::fused(6, 13, Rounding::kTowardZero),
                      M::fused_widths(32, 16, 13, Rounding::kTowardZero),
                      M::fused_widths(4, 26, 23, Rounding::kNearestEven),
                      M::fused_widths(16, 10, 20, Rounding::kNearestEven, 1, 32),
                      M::fused_widths(4, 24, 3, Rounding::kTowardZero)};
  for (const Shape& s : kModelShapes)
    for (const auto& [fa, fb, sa, sb] : variants)
      for (const M& model : models) f(random_problem(rng, s.m, s.n, s.k, fa, fb, sa, sb, s.k % 2 == 1, true, 80), model);
}

// Special values often (one code in 5): the special products decide a segment alone, through
// promotion and block scaling; and none at all (the driver's fast exit).
template <class Fn>
void fused_special_cases(Fn&& f) {
  using S = testing::Scales;
  using M = AccumulationModel;
  std::mt19937_64 rng(14);
  for (unsigned odds : {5u, 0u})
    for (const auto& [sa, sb] : {std::pair{S::kNone, S::kNone}, std::pair{S::kBlock128, S::kBlock128}})
      for (const M& model : {M::hopper(), M::fused(32, 13, Rounding::kTowardZero, 64)})
        f(random_problem(rng, 11, 37, 300, FormatId::kE5M2, FormatId::kE5M2, sa, sb, true, false, odds), model);
}

}  // namespace fp8q::testing
