// The accumulator input C of every accumulation model (numerics/accumulation.hpp, DotInput::c):
// hand-worked cases where C matters (it cancels the products, it sets the fused alignment, it is
// subnormal, it is -0 or +0 beside zero products, it is NaN or infinite), the identities of an
// instruction that computes D = A B + C (K = 0 gives C; a fused K split at a step boundary is
// two instructions, the second taking the first's D as C), and random FP8 inputs with random C
// against the independent oracle (model_oracle.hpp).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "fp8q/numerics/accumulation.hpp"
#include "fp8q/numerics/arith.hpp"
#include "fp8q/numerics/convert.hpp"
#include "fp8q/numerics/format.hpp"
#include "model_oracle.hpp"

namespace fp8q {
namespace {

using M = AccumulationModel;

float dot(const M& m, const std::vector<float>& a, const std::vector<float>& b, float c) {
  return reference_dot(m, {.a = a, .b = b, .c = c});
}
std::uint32_t bits(float x) { return bits_of(x); }

// Every model kind, with parameters that keep the small cases below inside one block / step.
const M kAll[] = {M::fp32_sequential(),
                  M::exact_block(32),
                  M::systolic(128),
                  M::systolic(2),
                  M::hopper(),
                  M::fused(32, 13, Rounding::kNearestEven),
                  M::fused(4, 13, Rounding::kTowardZero, 8),
                  M::trainium3_mx(Trn3Layout::kWrapX),
                  M::trainium3_mx(Trn3Layout::k1x32)};

// ---- hand-worked cases ------------------------------------------------------------------------------
// C = -(a . b) exactly: every model sums to an exact zero, which is +0 (IEEE round to nearest).
TEST(AccumulatorInput, CancelsTheProducts) {
  const std::vector<float> a = {1.5f, 2.0f, -0.25f}, b = {2.0f, 0.5f, 4.0f};  // 3 + 1 - 1 = 3
  for (const M& m : kAll) {
    EXPECT_EQ(bits(dot(m, a, b, -3.0f)), bits(0.0f)) << model_name(m);
    EXPECT_EQ(dot(m, a, b, 5.0f), 8.0f) << model_name(m);
  }
}

// K = 0: no addition runs, D = C whatever the model (and a NaN C comes back canonical).
TEST(AccumulatorInput, EmptyKReturnsC) {
  for (const M& m : kAll)
    for (float c : {0.0f, -0.0f, 1.0f + 0x1p-23f, 0x1p-149f, -std::numeric_limits<float>::infinity()})
      EXPECT_EQ(bits(dot(m, {}, {}, c)), bits(c)) << model_name(m) << " C=" << c;
  for (const M& m : kAll) EXPECT_EQ(bits(dot(m, {}, {}, float_of(0xFFC00001u))), 0x7FC00000u) << model_name(m);
}

// The fused model aligns C with the products of the first step: a large C moves the quantum
// 2^(E - 13) up and truncates the products; a sequential sum from C keeps them.
TEST(AccumulatorInput, LargeCShiftsFusedAlignment) {
  const std::vector<float> a = {1.5f, 0.75f}, one = {1.0f, 1.0f};  // products 1.5 and 0.75
  // E = 14, quantum 2: 1.5 and 0.75 truncate to 0
  EXPECT_EQ(dot(M::hopper(), a, one, 16384.0f), 16384.0f);
  // E = 13, quantum 1: 1.5 -> 1, 0.75 -> 0
  EXPECT_EQ(dot(M::hopper(), a, one, 8192.0f), 8193.0f);
  // E = 0 (C = 1), quantum 2^-13: exact, 3.25; then rounded to 13 mantissa bits: exact
  EXPECT_EQ(dot(M::hopper(), a, one, 1.0f), 3.25f);
  // the same C in fp32_sequential: exact fp32 additions
  EXPECT_EQ(dot(M::fp32_sequential(), a, one, 16384.0f), 16386.25f);
  // C as an epilogue term instead (added after the model): a different value again
  EXPECT_EQ(add_f32_rne(dot(M::hopper(), a, one, 0.0f), 16384.0f), 16386.25f);
  // a C with more bits than the 13 the fused layout keeps is truncated in the first step
  EXPECT_EQ(dot(M::hopper(), {0.0f}, {1.0f}, 1.0f + 0x1p-20f), 1.0f);
  EXPECT_EQ(dot(M::fused(32, 13, Rounding::kNearestEven), {0.0f}, {1.0f}, 1.0f + 0x1.fp-14f), 1.0f);
}

// Only C's step sees it: in the second fused step C is the first step's rounded result.
TEST(AccumulatorInput, FusedCEntersTheFirstStepOnly) {
  std::vector<float> a(33, 0.0f), one(33, 1.0f);
  a[32] = 0.75f;  // the second step's only product
  // step 1: C = 2^14 alone -> 2^14; step 2: E = 14, 0.75 truncated -> 2^14
  EXPECT_EQ(dot(M::fused(32, 13, Rounding::kTowardZero), a, one, 16384.0f), 16384.0f);
  // with promotion C starts the fp32 accumulator: 2^14 + fused(0.75) = 16384.75
  EXPECT_EQ(dot(M::fused(32, 13, Rounding::kTowardZero, 32), a, one, 16384.0f), 16384.75f);
}

// A subnormal C: a sum from it keeps it; the fused model gives it exponent -126 and truncates it
// to a multiple of 2^(-126 - f).
TEST(AccumulatorInput, SubnormalC) {
  const std::vector<float> zero = {0.0f}, one = {1.0f};
  EXPECT_EQ(dot(M::fp32_sequential(), zero, one, 0x1p-149f), 0x1p-149f);
  EXPECT_EQ(dot(M::exact_block(32), zero, one, 0x1p-149f), 0x1p-149f);
  EXPECT_EQ(dot(M::systolic(128), zero, one, 0x1p-149f), 0x1p-149f);
  EXPECT_EQ(dot(M::trainium3_mx(Trn3Layout::k1x32), zero, one, 0x1p-149f), 0x1p-149f);
  EXPECT_EQ(bits(dot(M::hopper(), zero, one, 0x1p-149f)), bits(0.0f));        // below 2^-139
  EXPECT_EQ(bits(dot(M::hopper(), zero, one, -0x1p-149f)), bits(0.0f));      // truncated to -0, + the +0 product
  EXPECT_EQ(bits(dot(M::hopper(), zero, {-1.0f}, -0x1p-149f)), bits(-0.0f));  // every term -0
  EXPECT_EQ(dot(M::hopper(), zero, one, 0x1p-130f + 0x1p-149f), 0x1p-130f);  // 2^-130 is a multiple of 2^-139
  // with a product of 2^-6 the quantum is 2^-19: C vanishes in every fused rounding
  EXPECT_EQ(dot(M::hopper(), {0.015625f}, one, 0x1p-130f), 0.015625f);
  // a sequential sum of zero products keeps a subnormal C exactly
  EXPECT_EQ(dot(M::fp32_sequential(), {0.0f, 0.0f}, {1.0f, 1.0f}, -0x1.8p-148f), -0x1.8p-148f);
}

// The sign of a zero result: C = -0 with products that are all -0 gives -0 where the products
// enter the accumulator one by one (fp32_sequential, exact_block, fused); systolic and Trainium
// add column sums that start at +0, so they give +0. Any +0 term (or C = +0) gives +0.
TEST(AccumulatorInput, SignOfZero) {
  const std::vector<float> a = {0.0f, -0.0f, 0.0f}, b = {-1.0f, 2.0f, -0.5f};  // products -0, -0, -0
  const std::vector<float> mixed_b = {-1.0f, -2.0f, -0.5f};                    // -0, +0, -0
  for (const M& m : kAll) {
    const bool per_product = m.kind == AccumKind::kFp32Sequential || m.kind == AccumKind::kExactBlock ||
                             (m.kind == AccumKind::kFused && m.promote == 0);
    EXPECT_EQ(bits(dot(m, a, b, -0.0f)), bits(per_product ? -0.0f : 0.0f)) << model_name(m);
    EXPECT_EQ(bits(dot(m, a, b, 0.0f)), bits(0.0f)) << model_name(m);
    EXPECT_EQ(bits(dot(m, a, mixed_b, -0.0f)), bits(0.0f)) << model_name(m);
  }
  // fused with promotion: the promoted partial is from +0, so -0 + (+0) = +0
  EXPECT_EQ(bits(dot(M::fused(4, 13, Rounding::kTowardZero, 8), a, b, -0.0f)), bits(0.0f));
}

TEST(AccumulatorInput, NaNAndInfinity) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> a = {1.0f, 2.0f}, b = {3.0f, -4.0f};
  const std::vector<float> a_inf = {inf, 1.0f}, a_nan = {std::nanf(""), 1.0f};
  for (const M& m : kAll) {
    const std::string w = model_name(m);
    EXPECT_EQ(bits(dot(m, a, b, std::nanf(""))), 0x7FC00000u) << w;
    EXPECT_EQ(bits(dot(m, a, b, float_of(0xFF800001u))), 0x7FC00000u) << w;  // a signalling, negative NaN C
    EXPECT_EQ(dot(m, a, b, inf), inf) << w;
    EXPECT_EQ(dot(m, a, b, -inf), -inf) << w;
    EXPECT_EQ(dot(m, a_inf, b, inf), inf) << w;                     // +Inf + +Inf
    EXPECT_EQ(bits(dot(m, a_inf, b, -inf)), 0x7FC00000u) << w;      // -Inf + +Inf
    EXPECT_EQ(bits(dot(m, a_nan, b, inf)), 0x7FC00000u) << w;
    // a C near the top of the range (13 mantissa bits, so the fused layout holds it): 3 - 8 vanishes
    EXPECT_EQ(dot(m, a, b, 0x1.ffcp127f), 0x1.ffcp127f) << w;
  }
}

// fp32_sequential from C is acc = C, then acc = fp32(acc + p_k): C first, in order.
TEST(AccumulatorInput, SequentialStartsAtC) {
  const std::vector<float> a = {0x1p-24f, 0x1p-24f}, one = {1.0f, 1.0f};
  EXPECT_EQ(dot(M::fp32_sequential(), a, one, 1.0f), 1.0f);                // each 2^-24 ties to even
  EXPECT_EQ(dot(M::exact_block(32), a, one, 1.0f), 1.0f + 0x1p-23f);      // the block's 2^-23 is exact
  EXPECT_EQ(dot(M::systolic(128), a, one, 1.0f), 1.0f + 0x1p-23f);        // the tile sum, then C + t
}

// ---- identities of D = A B + C ---------------------------------------------------------------------
// A fused dot split at a step boundary is two instructions: the second's C is the first's D.
// Systolic likewise at a tile boundary, exact_block at a block boundary, trainium3_mx at an
// instruction boundary, fp32_sequential anywhere.
TEST(AccumulatorInput, SplitAtABoundaryChains) {
  std::mt19937_64 rng(7);
  auto value = [&] {
    for (;;) {
      const float v = decode_f32(rng() & 0xFF, kE4M3FN);
      if (std::isfinite(v)) return v;
    }
  };
  struct Case {
    M model;
    std::size_t boundary;
  };
  const Case cases[] = {{M::hopper(), 32},           {M::hopper(), 64},       {M::fused(16, 10, Rounding::kNearestEven), 48},
                        {M::systolic(128), 128},     {M::exact_block(32), 96}, {M::fp32_sequential(), 17},
                        {M::trainium3_mx(Trn3Layout::k1x32), 512}};
  for (const Case& cs : cases)
    for (int rep = 0; rep < 50; ++rep) {
      const std::size_t K = cs.boundary + 1 + rng() % 700;
      std::vector<float> a(K), b(K);
      for (std::size_t k = 0; k < K; ++k) a[k] = value(), b[k] = value();
      const float c = static_cast<float>(static_cast<int>(rng() % 20001) - 10000) * 0.125f;
      const DotInput whole{.a = a, .b = b, .emin_a = -6, .emin_b = -6, .c = c};
      const std::span<const float> sa(a), sb(b);
      const float first = reference_dot(cs.model, {.a = sa.first(cs.boundary), .b = sb.first(cs.boundary),
                                                   .emin_a = -6, .emin_b = -6, .c = c});
      const float second = reference_dot(cs.model, {.a = sa.subspan(cs.boundary), .b = sb.subspan(cs.boundary),
                                                    .emin_a = -6, .emin_b = -6, .c = first});
      EXPECT_EQ(bits(reference_dot(cs.model, whole)), bits(second)) << model_name(cs.model) << " K=" << K;
    }
}

// ---- random FP8 inputs and C against the oracle ---------------------------------------------------
TEST(AccumulatorInput, RandomEqualsIndependentOracle) {
  std::mt19937_64 rng(20261202);
  const Format* formats[] = {&kE4M3FN, &kE5M2};
  int checked = 0;
  for (const Format* f : formats)
    for (bool mx : {false, true})
      for (std::size_t K : {1, 31, 33, 129, 600}) {
        for (int rep = 0; rep < 8; ++rep) {
          oracle::Input in;
          in.emin_a = in.emin_b = f->emin();
          for (std::size_t k = 0; k < K; ++k)
            for (auto* v : {&in.a, &in.b})
              for (;;) {
                const float x = decode_f32(rng() & 0xFF, *f);
                if (std::isfinite(x)) {
                  v->push_back(x);
                  break;
                }
              }
          if (mx)
            for (std::size_t g = 0; g < (K + 31) / 32; ++g) in.scale_exp.push_back(static_cast<int>(rng() % 13) - 6);
          // C: from tiny (2^-40) to large (2^40), either sign: it wins, loses or ties the alignment
          const int e = static_cast<int>(rng() % 81) - 40;
          in.c = std::ldexp(static_cast<float>(static_cast<int>(rng() % 255) - 127) / 64.0f, e);
          std::vector<std::uint8_t> sa, sb;
          for (int x : in.scale_exp)
            sa.push_back(static_cast<std::uint8_t>(127 + x / 2)), sb.push_back(static_cast<std::uint8_t>(127 + x - x / 2));
          const DotInput d{.a = in.a, .b = in.b, .mx_scale_a = sa, .mx_scale_b = sb,
                           .emin_a = in.emin_a, .emin_b = in.emin_b, .c = in.c};
          const std::string w = std::string(f->name) + (mx ? " mx" : "") + " K=" + std::to_string(K) + " C=" +
                                std::to_string(in.c);
          EXPECT_EQ(bits(reference_dot(M::fp32_sequential(), d)), bits(oracle::sequential(in, 0, K, in.c))) << w;
          EXPECT_EQ(bits(reference_dot(M::exact_block(32), d)), bits(oracle::exact_block(in, 32))) << w;
          for (int T : {3, 128})
            EXPECT_EQ(bits(reference_dot(M::systolic(T), d)), bits(oracle::systolic(in, T))) << w << " T=" << T;
          for (Rounding r : {Rounding::kTowardZero, Rounding::kNearestEven})
            EXPECT_EQ(bits(reference_dot(M::fused(32, 13, r), d)), bits(oracle::fused(in, 32, 13, r == Rounding::kNearestEven)))
                << w << " fused " << rounding_name(r);
          EXPECT_EQ(bits(reference_dot(M::trainium3_mx(Trn3Layout::kWrapX), d)), bits(oracle::trainium3_mx(in, true))) << w;
          EXPECT_EQ(bits(reference_dot(M::trainium3_mx(Trn3Layout::k1x32), d)), bits(oracle::trainium3_mx(in, false))) << w;
          // promotion: C starts the fp32 sum of the fused partials, each from +0
          if (K >= 64) {
            oracle::Input part = in;
            float acc = in.c;
            for (std::size_t j = 0; j < K; j += 64) {
              part.a.assign(in.a.begin() + j, in.a.begin() + std::min(K, j + 64));
              part.b.assign(in.b.begin() + j, in.b.begin() + std::min(K, j + 64));
              part.scale_exp.clear();
              if (mx)
                for (std::size_t g = j / 32; g < (std::min(K, j + 64) + 31) / 32; ++g) part.scale_exp.push_back(in.scale_exp[g]);
              part.c = 0.0f;
              acc += oracle::fused(part, 32, 13, false);
            }
            EXPECT_EQ(bits(reference_dot(M::fused(32, 13, Rounding::kTowardZero, 64), d)), bits(acc)) << w << " promote64";
          }
          ++checked;
        }
      }
  EXPECT_EQ(checked, 2 * 2 * 5 * 8);
}

}  // namespace
}  // namespace fp8q
