// NVFP4 (quant/scale_rules.hpp, quant/quantized_tensor.hpp): the two-level scale rule against its
// formulas in host fp32 arithmetic (this process runs under the IEEE default environment), and
// quantize() against a per-element reference (brute-force amaxes, the rule, convert_one) for
// every rounding mode, both block shapes, partial edge blocks and 16-bit sources; dequantize()
// and the refusals. The published definition is checked from Python against an independent
// restatement (tests/python/test_nvfp4.py).
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <random>
#include <vector>

#include "fp8q/numerics/arith.hpp"
#include "fp8q/numerics/convert.hpp"
#include "fp8q/quant/quantized_tensor.hpp"
#include "fp8q/quant/scale_rules.hpp"

namespace fp8q {
namespace {

// S = fp32(2688 / amax), FLT_MAX when infinite, 1 when 0 (or NaN).
float global_formula(float amax) {
  if (std::isnan(amax)) return 1.0f;
  const float s = std::min(2688.0f / amax, FLT_MAX);
  return s == 0.0f ? 1.0f : s;
}

std::uint8_t code_formula(float block_amax, float s) {
  const float d = std::min(block_amax * (s * (1.0f / 6.0f)), FLT_MAX);
  ConvertOptions o;
  o.overflow = Overflow::kSaturate;
  return static_cast<std::uint8_t>(encode_f32(d, kE4M3FN, o));
}

TEST(Nvfp4Scale, GlobalScaleIsTheQuotientWithItsEdges) {
  EXPECT_EQ(nvfp4_global_scale(1.0f), 2688.0f);
  EXPECT_EQ(nvfp4_global_scale(448.0f), 6.0f);
  EXPECT_EQ(nvfp4_global_scale(0.0f), FLT_MAX);
  EXPECT_EQ(nvfp4_global_scale(-0.0f), FLT_MAX);
  EXPECT_EQ(nvfp4_global_scale(1e-45f), FLT_MAX);  // 2688 / 2^-149 overflows
  EXPECT_EQ(nvfp4_global_scale(INFINITY), 1.0f);    // 2688 / Inf = 0
  EXPECT_EQ(nvfp4_global_scale(NAN), 1.0f);
  EXPECT_THROW(nvfp4_global_scale(-1.0f), std::invalid_argument);
  std::mt19937 rng(3);
  for (int i = 0; i < 200000; ++i) {
    const float a = float_of(rng() & 0x7FFFFFFFu);
    if (std::isnan(a)) continue;
    ASSERT_EQ(bits_of(nvfp4_global_scale(a)), bits_of(global_formula(a))) << a;
  }
}

TEST(Nvfp4Scale, BlockCodeDecodeAndEncodeEqualTheirFormulas) {
  std::mt19937 rng(4);
  std::vector<float> globals = {1.0f, 6.0f, 2688.0f, FLT_MAX, 1e-30f, 3.7e-3f};
  for (int i = 0; i < 64; ++i) globals.push_back(global_formula(float_of(rng() & 0x7F7FFFFFu)));
  for (const float s : globals) {
    const float gd = 1.0f / s;
    for (int c = 0; c < 0x7F; ++c) {  // every non-negative, non-NaN code
      const auto code = static_cast<std::uint8_t>(c);
      ASSERT_EQ(bits_of(nvfp4_block_decode(code, s)), bits_of(decode_f32(c, kE4M3FN) / s)) << "code " << c << " S " << s;
      const float te = decode_f32(c, kE4M3FN) * gd;  // Transformer Engine's decode, inverted for the encode
      const float e = te == 0.0f ? FLT_MAX : std::min(1.0f / te, FLT_MAX);
      ASSERT_EQ(bits_of(nvfp4_block_encode(code, s)), bits_of(e)) << "code " << c << " S " << s;
    }
    for (int i = 0; i < 4000; ++i) {
      const float a = float_of(rng() & 0x7F7FFFFFu);  // finite, >= 0
      ASSERT_EQ(nvfp4_block_scale_code(a, s), code_formula(a, s)) << "amax " << a << " S " << s;
    }
  }
  EXPECT_EQ(nvfp4_block_scale_code(NAN, 1.0f), 0x7F);
  EXPECT_EQ(nvfp4_block_scale_code(INFINITY, 1.0f), 0x7E);  // saturates to 448
  EXPECT_TRUE(std::isnan(nvfp4_block_decode(0x7F, 1.0f)));
  EXPECT_TRUE(std::isnan(nvfp4_block_encode(0x7F, 1.0f)));
  EXPECT_EQ(nvfp4_block_decode(0x7E, 448.0f), 1.0f);  // 448 / 448, where 448 * fp32(1 / 448) is not 1
  EXPECT_THROW(nvfp4_block_scale_code(-2.0f, 1.0f), std::invalid_argument);
  EXPECT_THROW(nvfp4_block_scale_code(1.0f, 0.0f), std::invalid_argument);
  EXPECT_THROW(nvfp4_block_decode(1, INFINITY), std::invalid_argument);
}

std::vector<float> random_tensor(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = std::ldexp(normal(rng), static_cast<int>(i / 16 % 23) * 3 - 30);
  if (n > 64) std::fill(v.begin() + 16, v.begin() + 32, 0.0f);  // a zero block of 1 x 16
  if (n > 70) v[70] = -0.0f;
  return v;
}

void check_against_reference(const std::vector<float>& x, const std::vector<std::uint64_t>& shape,
                             const QuantizeOptions& o) {
  const QuantizedTensor q = quantize(std::as_bytes(std::span(x)), kF32, shape, o);
  const MatrixShape m = matrix_shape(shape);
  const BlockGrid g = block_grid(o.granularity, m);
  std::uint32_t global_bits = 0;
  for (float v : x) global_bits = std::max(global_bits, bits_of(v) & 0x7FFFFFFFu);
  const float s = o.global_scale.value_or(global_formula(float_of(global_bits)));
  ASSERT_EQ(bits_of(q.global_scale), bits_of(s));
  ASSERT_TRUE(q.scale_inv.empty());
  std::vector<std::uint8_t> codes(m.rows * m.cols);
  unpack_fp4(q.codes, codes);
  for (std::size_t br = 0; br < g.grid_rows(); ++br)
    for (std::size_t bc = 0; bc < g.grid_cols(); ++bc) {
      const std::size_t r1 = std::min(m.rows, (br + 1) * g.block_rows), c1 = std::min(m.cols, (bc + 1) * g.block_cols);
      std::uint32_t amax_bits = 0;
      for (std::size_t r = br * g.block_rows; r < r1; ++r)
        for (std::size_t c = bc * g.block_cols; c < c1; ++c)
          amax_bits = std::max(amax_bits, bits_of(x[r * m.cols + c]) & 0x7FFFFFFFu);
      const std::size_t b = br * g.grid_cols() + bc;
      const std::uint8_t code = code_formula(float_of(amax_bits), s);
      ASSERT_EQ(q.scales[b], code) << "block " << b;
      const float te = decode_f32(code, kE4M3FN) * (1.0f / s);
      ConvertOptions e = o.convert;
      e.scale = te == 0.0f ? FLT_MAX : std::min(1.0f / te, FLT_MAX);
      for (std::size_t r = br * g.block_rows; r < r1; ++r)
        for (std::size_t c = bc * g.block_cols; c < c1; ++c) {
          const std::size_t i = r * m.cols + c;
          ASSERT_EQ(codes[i], convert_one(bits_of(x[i]), kF32, kE2M1, e, i).code)
              << granularity_name(o.granularity) << " element " << i << " x " << x[i];
        }
    }
}

TEST(Nvfp4Quantize, EqualsTheReferenceForEveryRoundingAndBlockShape) {
  const std::vector<std::vector<std::uint64_t>> shapes = {{48, 64}, {5, 38}, {37, 40}, {2, 3, 34}, {16}, {0, 32}};
  unsigned seed = 0;
  for (const auto& shape : shapes)
    for (const Granularity g : {Granularity::nvfp4(), Granularity::nvfp4_2d()})
      for (Rounding r : {Rounding::kNearestEven, Rounding::kNearestAway, Rounding::kTowardZero, Rounding::kUp,
                         Rounding::kDown, Rounding::kOdd, Rounding::kStochastic}) {
        const MatrixShape m = matrix_shape(shape);
        QuantizeOptions o;
        o.element = FormatId::kE2M1;
        o.granularity = g;
        o.convert.rounding = r;
        o.convert.seed = 77;
        o.convert.offset = 5;
        check_against_reference(random_tensor(m.rows * m.cols, ++seed), shape, o);
      }
}

TEST(Nvfp4Quantize, SixteenBitSourcesAndThreadCountsGiveTheSameBits) {
  const std::vector<std::uint64_t> shape = {96, 80};
  std::vector<float> x = random_tensor(96 * 80, 9);
  std::vector<std::uint16_t> bf16(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    bf16[i] = static_cast<std::uint16_t>(bits_of(x[i]) >> 16);
    x[i] = float_of(std::uint32_t{bf16[i]} << 16);  // the bf16 values, exact in fp32
  }
  QuantizeOptions o;
  o.element = FormatId::kE2M1;
  o.granularity = Granularity::nvfp4_2d();
  o.convert.rounding = Rounding::kStochastic;
  const QuantizedTensor want = quantize(std::as_bytes(std::span(x)), kF32, shape, o);
  for (int threads : {1, 2, 3, 7}) {
    o.bulk.threads = threads;
    const QuantizedTensor got = quantize(std::as_bytes(std::span(bf16)), kBF16, shape, o);
    EXPECT_EQ(got.codes, want.codes) << threads;
    EXPECT_EQ(got.scales, want.scales) << threads;
    EXPECT_EQ(bits_of(got.global_scale), bits_of(want.global_scale));
  }
}

TEST(Nvfp4Quantize, RefusesWhatItDoesNotDefine) {
  const std::vector<float> x(64, 1.0f);
  const std::vector<std::uint64_t> shape = {4, 16};
  auto fails = [&](const QuantizeOptions& o, const char* text) {
    try {
      quantize(std::as_bytes(std::span(x)), kF32, shape, o);
      ADD_FAILURE() << "no error; expected: " << text;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
  };
  QuantizeOptions o;
  o.element = FormatId::kE2M1;
  o.granularity = Granularity::nvfp4();
  QuantizeOptions bad = o;
  bad.element = FormatId::kE4M3FN;
  fails(bad, "granularity nvfp4 scales e2m1 elements, not e4m3fn");
  bad = o, bad.apply = ScaleOp::kDivide;
  fails(bad, "scale_op divide applies to tensor, row, col and block<R>x<C>");
  bad = o, bad.amax.margin = 1;
  fails(bad, "takes no margin, amax_epsilon or power_of_two");
  bad = o, bad.amax.power_of_two = true;
  fails(bad, "takes no margin, amax_epsilon or power_of_two");
  bad = o, bad.granularity = Granularity::nvfp4_column();
  fails(bad, "not nvfp4_16x1); quantize the transpose");
  // quantize_into wants one global scale
  std::vector<std::uint8_t> codes(32), scales(4);
  std::vector<float> global(2);
  EXPECT_THROW(quantize_into(std::as_bytes(std::span(x)), kF32, shape, o, {codes, scales, {}, global}),
               std::invalid_argument);
  EXPECT_EQ(global, std::vector<float>(2, 0.0f));  // nothing written
}

// Layers fused into one GEMM share the smallest global scale of theirs: a tensor quantized with
// it equals the reference under that scale, and its rows of the group's concatenation.
TEST(Nvfp4Quantize, AGivenGlobalScaleReplacesTheTensorsOwn) {
  const std::vector<std::uint64_t> shape = {8, 64}, both = {16, 64};
  std::vector<float> a = random_tensor(8 * 64, 21), b = random_tensor(8 * 64, 22);
  for (float& x : b) x *= 0.01f;  // b's own global scale is larger than a's
  QuantizeOptions o;
  o.element = FormatId::kE2M1;
  o.granularity = Granularity::nvfp4();
  const float sa = nvfp4_global_scale_of(std::as_bytes(std::span(a)), kF32, shape, o);
  const float sb = nvfp4_global_scale_of(std::as_bytes(std::span(b)), kF32, shape, o);
  EXPECT_EQ(bits_of(sa), bits_of(quantize(std::as_bytes(std::span(a)), kF32, shape, o).global_scale));
  ASSERT_LT(sa, sb);
  std::vector<float> ab = a;
  ab.insert(ab.end(), b.begin(), b.end());
  const QuantizedTensor fused = quantize(std::as_bytes(std::span(ab)), kF32, both, o);
  EXPECT_EQ(bits_of(fused.global_scale), bits_of(sa));
  o.global_scale = sa;
  EXPECT_EQ(bits_of(nvfp4_global_scale_of(std::as_bytes(std::span(b)), kF32, shape, o)), bits_of(sa));
  check_against_reference(b, shape, o);
  const QuantizedTensor qb = quantize(std::as_bytes(std::span(b)), kF32, shape, o);
  EXPECT_TRUE(std::equal(qb.codes.begin(), qb.codes.end(), fused.codes.begin() + fused.codes.size() / 2));
  EXPECT_TRUE(std::equal(qb.scales.begin(), qb.scales.end(), fused.scales.begin() + fused.scales.size() / 2));
  for (float bad : {0.0f, -1.0f, INFINITY, NAN}) {
    o.global_scale = bad;
    EXPECT_THROW(quantize(std::as_bytes(std::span(b)), kF32, shape, o), std::invalid_argument) << bad;
  }
  QuantizeOptions mx;
  mx.granularity = Granularity::mx();
  mx.global_scale = 1.0f;
  try {
    quantize(std::as_bytes(std::span(b)), kF32, shape, mx);
    ADD_FAILURE() << "a global scale for MX was taken";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("global_scale applies to NVFP4"), std::string::npos) << e.what();
  }
}

TEST(Nvfp4Dequantize, IsCodeTimesScaleOverTheGlobalScaleAndRefusesBadScales) {
  const std::vector<std::uint64_t> shape = {32, 48};
  const std::vector<float> x = random_tensor(32 * 48, 12);
  QuantizeOptions o;
  o.element = FormatId::kE2M1;
  o.granularity = Granularity::nvfp4();
  const QuantizedTensor q = quantize(std::as_bytes(std::span(x)), kF32, shape, o);
  std::vector<float> out(x.size());
  dequantize(q, std::as_writable_bytes(std::span(out)), kF32, 2);
  std::vector<std::uint8_t> codes(x.size());
  unpack_fp4(q.codes, codes);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const float d = decode_f32(q.scales[i / 16], kE4M3FN) / q.global_scale;
    ASSERT_EQ(bits_of(out[i]), bits_of(decode_f32(codes[i], kE2M1) * d)) << i;
  }
  QuantizedTensor bad = q;
  bad.global_scale = 0.0f;
  EXPECT_THROW(dequantize(bad, std::as_writable_bytes(std::span(out)), kF32), std::invalid_argument);
  bad = q, bad.scales[3] = 0x90;
  try {
    dequantize(bad, std::as_writable_bytes(std::span(out)), kF32);
    ADD_FAILURE() << "a negative block scale was taken";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "dequantize: scales[3] = 144 is a negative E4M3FN scale");
  }
  bad = q, bad.scales.pop_back();
  EXPECT_THROW(dequantize(bad, std::as_writable_bytes(std::span(out)), kF32), std::invalid_argument);
  bad = q, bad.element = FormatId::kE4M3FN, bad.codes.resize(x.size());
  EXPECT_THROW(dequantize(bad, std::as_writable_bytes(std::span(out)), kF32), std::invalid_argument);
}

}  // namespace
}  // namespace fp8q
