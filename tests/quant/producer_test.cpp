// Producer presets (quant/producer.hpp) through quantize(): compressed-tensors' FP8 quantizer on
// fp32 equals fp8q's own divide form except for the eps scale of an all-zero block; on bf16 it
// rounds the scale and each quotient to bf16; the bits do not depend on the thread count or on
// the caller's FP environment; the options it does not have are refused. (Its codes against
// compressed-tensors' own code: tests/python/test_producer_presets.py.)
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "fp8q/numerics/convert.hpp"
#include "fp8q/quant/producer.hpp"
#include "fp8q/quant/quantized_tensor.hpp"
#include "hostile_fp_env.hpp"

namespace fp8q {
namespace {

QuantizeOptions like_ct(Granularity g, int threads = 1) {
  QuantizeOptions o;
  o.granularity = g;
  o.apply = ScaleOp::kDivide;
  o.like = Producer::kCompressedTensors;
  o.bulk.threads = threads;
  return o;
}

std::vector<float> weights(std::size_t n) {
  std::mt19937 rng(11);
  std::normal_distribution<float> d(0.0f, 0.05f);
  std::vector<float> w(n);
  for (float& x : w) x = d(rng);
  return w;
}

TEST(Producer, NamesRoundTrip) {
  for (Producer p : {Producer::kFp8q, Producer::kCompressedTensors}) EXPECT_EQ(parse_producer(producer_name(p)), p);
  EXPECT_FALSE(parse_producer("modelopt").has_value());
}

TEST(Producer, CompressedTensorsOnFp32IsTheDivideFormButForZeroBlocks) {
  auto w = weights(64 * 96);
  for (std::size_t c = 0; c < 96; ++c) w[5 * 96 + c] = 0.0f;  // an all-zero row
  const std::uint64_t shape[] = {64, 96};
  const auto data = std::as_bytes(std::span<const float>(w));
  QuantizeOptions own = like_ct(Granularity::row());
  own.like = Producer::kFp8q;
  const QuantizedTensor a = quantize(data, kF32, shape, like_ct(Granularity::row()));
  const QuantizedTensor b = quantize(data, kF32, shape, own);
  EXPECT_EQ(a.codes, b.codes);
  for (std::size_t r = 0; r < 64; ++r) {
    if (r == 5) {
      EXPECT_EQ(a.scale_inv[r], 0x1p-23f);  // torch.finfo(float32).eps
      EXPECT_EQ(b.scale_inv[r], 1.0f);
    } else {
      EXPECT_EQ(a.scale_inv[r], b.scale_inv[r]) << r;
    }
  }
}

TEST(Producer, CompressedTensorsOnBf16RoundsTheScaleAndQuotientsToBf16) {
  // amax 1: scale_inv = bf16(fp32(1 / 448)) = 1.140625 x 2^-9 (0x3B12); x = 0.1689453125
  // (0x3E2D): x / scale_inv = 75.84, which bf16 rounds to 76, the e4m3fn midpoint of 72 and 80,
  // which goes to the even 80; the exact quotient under fp8q's fp32 scale_inv rounds once to 72
  const std::uint16_t row[4] = {0x3F80, 0x3E2D, 0, 0};
  const std::uint64_t shape[] = {1, 4};
  const QuantizedTensor q = quantize(std::as_bytes(std::span(row)), kBF16, shape, like_ct(Granularity::row()));
  EXPECT_EQ(bits_of(q.scale_inv[0]), 0x3B120000u);
  EXPECT_EQ(decode_f32(q.codes[1], kE4M3FN), 80.0f);
  QuantizeOptions own = like_ct(Granularity::row());
  own.like = Producer::kFp8q;
  EXPECT_EQ(decode_f32(quantize(std::as_bytes(std::span(row)), kBF16, shape, own).codes[1], kE4M3FN), 72.0f);
}

TEST(Producer, SameBitsForEveryThreadCountAndFpEnvironment) {
  const auto w = weights(256 * 384);
  const std::uint64_t shape[] = {256, 384};
  const auto data = std::as_bytes(std::span<const float>(w));
  for (Granularity g : {Granularity::tensor(), Granularity::row(), Granularity::block(128, 128)}) {
    const QuantizedTensor want = quantize(data, kF32, shape, like_ct(g));
    for (int threads : {1, 2, 5}) {
      test::ScopedHostileFpEnv env;
      const QuantizedTensor got = quantize(data, kF32, shape, like_ct(g, threads));
      EXPECT_EQ(got.codes, want.codes) << granularity_name(g) << " threads " << threads;
      EXPECT_EQ(got.scale_inv, want.scale_inv) << granularity_name(g) << " threads " << threads;
    }
  }
}

TEST(Producer, CompressedTensorsRefusesWhatItDoesNotDo) {
  const std::vector<float> w(64, 1.0f);
  const std::uint64_t shape[] = {2, 32};
  const auto data = std::as_bytes(std::span<const float>(w));
  QuantizeOptions multiply = like_ct(Granularity::row());
  multiply.apply = ScaleOp::kMultiply;
  QuantizeOptions e5m2 = like_ct(Granularity::row());
  e5m2.element = FormatId::kE5M2;
  QuantizeOptions margin = like_ct(Granularity::row());
  margin.amax.margin = 1;
  QuantizeOptions rtz = like_ct(Granularity::row());
  rtz.convert.rounding = Rounding::kTowardZero;
  for (const QuantizeOptions& o : {multiply, e5m2, margin, rtz, like_ct(Granularity::column()), like_ct(Granularity::mx())})
    EXPECT_THROW(quantize(data, kF32, shape, o), std::invalid_argument);
}

}  // namespace
}  // namespace fp8q
