// Producer presets (quant/producer.hpp) through quantize(): compressed-tensors' FP8 quantizer on
// fp32 equals fp8q's own divide form except for the eps scale of an all-zero block; on bf16 it
// rounds the scale and each quotient to bf16; ModelOpt's keeps an fp32 scale, 1 for an all-zero
// tensor, and rounds each quotient to bf16; the bits do not depend on the thread count or on the
// caller's FP environment; the options a producer does not have are refused. (Their codes against
// the producers' own code: tests/python/test_producer_presets.py.) The NVFP4 presets: worked
// examples, thread and FP environment independence, refusals.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "fp8q/numerics/convert.hpp"
#include "fp8q/quant/producer.hpp"
#include "fp8q/quant/quantized_tensor.hpp"
#include "hostile_fp_env.hpp"

namespace fp8q {
namespace {

QuantizeOptions like_ct(Granularity g, int threads = 1, Producer p = Producer::kCompressedTensors) {
  QuantizeOptions o;
  o.granularity = g;
  o.apply = ScaleOp::kDivide;
  o.like = p;
  o.bulk.threads = threads;
  return o;
}
QuantizeOptions like_modelopt(int threads = 1) { return like_ct(Granularity::tensor(), threads, Producer::kModelOpt); }

std::vector<float> weights(std::size_t n) {
  std::mt19937 rng(11);
  std::normal_distribution<float> d(0.0f, 0.05f);
  std::vector<float> w(n);
  for (float& x : w) x = d(rng);
  return w;
}

TEST(Producer, NamesRoundTrip) {
  for (Producer p : {Producer::kFp8q, Producer::kCompressedTensors, Producer::kModelOpt, Producer::kModelOptCuda})
    EXPECT_EQ(parse_producer(producer_name(p)), p);
  EXPECT_FALSE(parse_producer("transformer-engine").has_value());
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

TEST(Producer, ModelOptKeepsAnFp32ScaleAndRoundsQuotientsToBf16) {
  // amax 1: scale_inv = fp32(1 / 448) (0x3B124925, not a bf16); x = 0x3C1C (0.009521484375):
  // x / scale_inv = 4.265625 in fp32, which bf16 rounds (a tie, to even) to 4.25, the e4m3fn
  // midpoint of 4 and 4.5, which goes to the even 4; fp8q's single rounding gives 4.5
  const std::uint16_t row[4] = {0x3F80, 0x3C1C, 0, 0};
  const std::uint64_t shape[] = {1, 4};
  const QuantizedTensor q = quantize(std::as_bytes(std::span(row)), kBF16, shape, like_modelopt());
  EXPECT_EQ(bits_of(q.scale_inv[0]), 0x3B124925u);
  EXPECT_EQ(decode_f32(q.codes[1], kE4M3FN), 4.0f);
  QuantizeOptions own = like_modelopt();
  own.like = Producer::kFp8q;
  EXPECT_EQ(decode_f32(quantize(std::as_bytes(std::span(row)), kBF16, shape, own).codes[1], kE4M3FN), 4.5f);
  // an amax below fp32's normals is divided as it is (a subnormal scale); an all-zero tensor,
  // whose scale would be 0 and codes NaN (0 / 0) in ModelOpt's export, is refused
  const std::uint16_t tiny[4] = {0x0040, 0x8020, 0, 0};  // bf16 subnormals, amax 2^-127
  const QuantizedTensor t = quantize(std::as_bytes(std::span(tiny)), kBF16, shape, like_modelopt());
  const float s = 0x1p-127f / 448.0f;
  EXPECT_EQ(t.scale_inv[0], s);
  EXPECT_EQ(t.codes[0], encode_f32(decode_f32(encode_f32(0x1p-127f / s, kBF16), kBF16), kE4M3FN));
  const std::uint16_t zeros[4] = {0, 0x8000, 0, 0};
  EXPECT_THROW(quantize(std::as_bytes(std::span(zeros)), kBF16, shape, like_modelopt()), std::invalid_argument);
}

TEST(Producer, ModelOptPerRowAndBlockIsTheDivideForm) {
  // one rounding of x / s to fp32, then e4m3fn, and scale 1 for an all-zero row (its per-channel
  // export sanitises a zero amax), as fp8q's own divide form; on bf16, where the per-tensor
  // preset rounds quotients to bf16 first
  std::vector<std::uint16_t> w(256 * 256);
  std::mt19937 rng(5);
  for (auto& x : w) x = static_cast<std::uint16_t>(0x3C00 + rng() % 0x0400) | static_cast<std::uint16_t>((rng() & 1) << 15);
  for (std::size_t c = 0; c < 256; ++c) w[3 * 256 + c] = 0;
  const std::uint64_t shape[] = {256, 256};
  const auto data = std::as_bytes(std::span<const std::uint16_t>(w));
  for (Granularity g : {Granularity::row(), Granularity::block(128, 128)}) {
    QuantizeOptions mo = like_modelopt(), own = like_modelopt();
    mo.granularity = own.granularity = g;
    own.like = Producer::kFp8q;
    const QuantizedTensor a = quantize(data, kBF16, shape, mo), b = quantize(data, kBF16, shape, own);
    EXPECT_EQ(a.codes, b.codes) << granularity_name(g);
    EXPECT_EQ(a.scale_inv, b.scale_inv) << granularity_name(g);
  }
  QuantizeOptions row = like_modelopt();
  row.granularity = Granularity::row();
  EXPECT_EQ(quantize(data, kBF16, shape, row).scale_inv[3], 1.0f);
}

TEST(Producer, SameBitsForEveryThreadCountAndFpEnvironment) {
  const auto w = weights(256 * 384);
  const std::uint64_t shape[] = {256, 384};
  const auto data = std::as_bytes(std::span<const float>(w));
  for (Granularity g : {Granularity::tensor(), Granularity::row(), Granularity::block(128, 128)}) {
    const QuantizedTensor want = quantize(data, kF32, shape, like_ct(g));
    if (g == Granularity::tensor()) {
      const QuantizedTensor m = quantize(data, kF32, shape, like_modelopt());
      for (int threads : {2, 5}) {
        test::ScopedHostileFpEnv env;
        const QuantizedTensor got = quantize(data, kF32, shape, like_modelopt(threads));
        EXPECT_EQ(got.codes, m.codes) << "modelopt threads " << threads;
        EXPECT_EQ(got.scale_inv, m.scale_inv) << "modelopt threads " << threads;
      }
    }
    for (int threads : {1, 2, 5}) {
      test::ScopedHostileFpEnv env;
      const QuantizedTensor got = quantize(data, kF32, shape, like_ct(g, threads));
      EXPECT_EQ(got.codes, want.codes) << granularity_name(g) << " threads " << threads;
      EXPECT_EQ(got.scale_inv, want.scale_inv) << granularity_name(g) << " threads " << threads;
    }
  }
}

QuantizeOptions like_modelopt_nvfp4(int threads = 1) {
  QuantizeOptions o;
  o.element = FormatId::kE2M1;
  o.granularity = Granularity::nvfp4();
  o.like = Producer::kModelOpt;
  o.bulk.threads = threads;
  return o;
}

// amax 2688: scale_2 = 1; the first block's amax 2688 gives s = 448 and q = 6; the second's 3
// gives s = fp32(3 / 6) = 0.5, so 1.25 / 0.5 = 2.5 is a tie (to 2) and -0 stays +0; a zero
// block's s is 0, taken as 1.
TEST(Producer, ModelOptNvfp4WorkedExample) {
  std::vector<float> w(48, 0.0f);
  w[0] = 2688.0f, w[1] = -1000.0f;
  w[16] = 3.0f, w[17] = 1.25f, w[18] = -0.0f, w[19] = -0.1f;
  const std::uint64_t shape[] = {1, 48};
  const QuantizedTensor q = quantize(std::as_bytes(std::span<const float>(w)), kF32, shape, like_modelopt_nvfp4());
  EXPECT_EQ(q.global_scale, 1.0f);
  EXPECT_EQ(q.global_op, ScaleOp::kMultiply);
  ASSERT_EQ(q.scales.size(), 3u);
  EXPECT_EQ(decode_f32(q.scales[0], kE4M3FN), 448.0f);
  EXPECT_EQ(decode_f32(q.scales[1], kE4M3FN), 0.5f);
  EXPECT_EQ(decode_f32(q.scales[2], kE4M3FN), 1.0f);
  std::vector<std::uint8_t> codes(48);
  unpack_fp4(q.codes, codes);
  EXPECT_EQ(codes[0], 0x7);   // 6
  EXPECT_EQ(codes[1], 0xC);   // -1000 / 448 = -2.23: -2
  EXPECT_EQ(codes[16], 0x7);  // 3 / 0.5 = 6
  EXPECT_EQ(codes[17], 0x4);  // 2.5: the tie to 2
  EXPECT_EQ(codes[18], 0x0);  // -0 / 0.5 = -0: ModelOpt's code 0
  EXPECT_EQ(codes[19], 0x8);  // -0.2 rounds to -0, whose sign ModelOpt keeps
  std::vector<float> back(48);
  dequantize(q, std::as_writable_bytes(std::span(back)), kF32);
  EXPECT_EQ(back[0], 2688.0f);  // 6 * fp32(448 * 1)
  EXPECT_EQ(back[17], 1.0f);    // 2 * fp32(0.5 * 1)
}

// compressed-tensors on bf16: amax 5 gives the global scale bf16(bf16(1 / 5) * 2688) =
// bf16(0.2001953125 * 2688 = 538.125) = 540 (fp8q's own S: fp32(2688 / 5) = 537.6); the block
// scale fp32(540 * bf16(5 / 6)) = 449.3 saturates at 448; a zero block's scale is 0.125.
TEST(Producer, CompressedTensorsNvfp4WorkedExample) {
  std::vector<std::uint16_t> w(32, 0);  // bf16 bits
  w[0] = 0x40A0, w[1] = 0x3F80;         // 5, 1
  const std::uint64_t shape[] = {1, 32};
  QuantizeOptions o = like_modelopt_nvfp4();
  o.like = Producer::kCompressedTensors;
  const QuantizedTensor q = quantize(std::as_bytes(std::span<const std::uint16_t>(w)), kBF16, shape, o);
  EXPECT_EQ(q.global_scale, 540.0f);
  EXPECT_EQ(q.global_op, ScaleOp::kDivide);
  ASSERT_EQ(q.scales.size(), 2u);
  EXPECT_EQ(decode_f32(q.scales[0], kE4M3FN), 448.0f);
  EXPECT_EQ(decode_f32(q.scales[1], kE4M3FN), 0.125f);
  std::vector<std::uint8_t> codes(32);
  unpack_fp4(q.codes, codes);
  EXPECT_EQ(codes[0], 0x7);  // 5 / fp32(448 / 540) = 6.03: 6
  EXPECT_EQ(codes[1], 0x2);  // 1.21: 1
}

TEST(Producer, ModelOptNvfp4SameBitsForEveryThreadCountAndRefusesWhatItCannotWrite) {
  const auto w = weights(64 * 256);
  const std::uint64_t shape[] = {64, 256};
  const auto data = std::as_bytes(std::span<const float>(w));
  const QuantizedTensor want = quantize(data, kF32, shape, like_modelopt_nvfp4());
  for (int threads : {2, 5}) {
    test::ScopedHostileFpEnv env;
    const QuantizedTensor got = quantize(data, kF32, shape, like_modelopt_nvfp4(threads));
    EXPECT_EQ(got.codes, want.codes);
    EXPECT_EQ(got.scales, want.scales);
    EXPECT_EQ(bits_of(got.global_scale), bits_of(want.global_scale));
  }
  const std::vector<float> zeros(64, 0.0f);
  const std::uint64_t small[] = {2, 32};
  EXPECT_THROW(quantize(std::as_bytes(std::span<const float>(zeros)), kF32, small, like_modelopt_nvfp4()),
               std::invalid_argument);  // amax 0: ModelOpt writes NaN scales
  QuantizeOptions square = like_modelopt_nvfp4();
  square.granularity = Granularity::nvfp4_2d();
  QuantizeOptions rtz = like_modelopt_nvfp4();
  rtz.convert.rounding = Rounding::kTowardZero;
  QuantizeOptions fp8 = like_modelopt_nvfp4();
  fp8.element = FormatId::kE4M3FN;
  QuantizeOptions ct = like_modelopt_nvfp4();
  ct.like = Producer::kCompressedTensors;
  QuantizeOptions ct_rtz = ct;
  ct_rtz.convert.rounding = Rounding::kTowardZero;
  for (const QuantizeOptions& o : {square, rtz, fp8, ct_rtz})
    EXPECT_THROW(quantize(data, kF32, shape, o), std::invalid_argument);
  const std::uint64_t odd[] = {2, 24};  // not whole blocks of 16
  for (const QuantizeOptions& o : {like_modelopt_nvfp4(), ct})
    EXPECT_THROW(quantize(std::as_bytes(std::span<const float>(w).first(48)), kF32, odd, o), std::invalid_argument);
  // compressed-tensors: the same bits for any thread count and FP environment too
  const QuantizedTensor ct_want = quantize(data, kF32, shape, ct);
  for (int threads : {2, 5}) {
    test::ScopedHostileFpEnv env;
    QuantizeOptions t = ct;
    t.bulk.threads = threads;
    const QuantizedTensor got = quantize(data, kF32, shape, t);
    EXPECT_EQ(got.codes, ct_want.codes);
    EXPECT_EQ(got.scales, ct_want.scales);
    EXPECT_EQ(bits_of(got.global_scale), bits_of(ct_want.global_scale));
  }
}

// ModelOpt: amax 2^-135 gives weight_scale_2 = 2^-135 / 2688, and a block of amax 2^-149 the
// multiplier fp32(decode(s) * weight_scale_2) = 0, by which ModelOpt would divide: refused, and
// nothing is written.
TEST(Producer, ModelOptNvfp4RefusesAZeroMultiplierAndWritesNothing) {
  std::vector<float> w(32, 0.0f);
  w[0] = 0x1p-135f, w[16] = 0x1p-149f;
  const std::uint64_t shape[] = {1, 32};
  const QuantizeOptions o = like_modelopt_nvfp4();
  std::vector<std::uint8_t> codes(16, 0xAB), scales(2, 0xCD);
  float global = -1.0f;
  try {
    quantize_into(std::as_bytes(std::span<const float>(w)), kF32, shape, o,
                  {.codes = codes, .scales = scales, .scale_inv = {}, .global_scale = std::span(&global, 1)});
    ADD_FAILURE() << "accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("row 0, block 1: its multiplier is 0 in float32"), std::string::npos) << e.what();
  }
  EXPECT_EQ(codes, std::vector<std::uint8_t>(16, 0xAB));
  EXPECT_EQ(scales, std::vector<std::uint8_t>(2, 0xCD));
  EXPECT_EQ(global, -1.0f);
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
  // ModelOpt's FP8 exports scale per tensor, row or 128x128 block
  for (Granularity g : {Granularity::column(), Granularity::block(64, 64), Granularity::mx()}) {
    QuantizeOptions o = like_modelopt();
    o.granularity = g;
    try {
      quantize(data, kF32, shape, o);
      ADD_FAILURE() << "accepted " << granularity_name(g);
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("like modelopt: its FP8 quantizer writes e4m3fn per tensor, row or 128x128 block"),
                std::string::npos)
          << e.what();
    }
  }
}

// A fused group's global scale: compressed-tensors gives the layers the smallest of theirs,
// which for a float16 layer whose own overflows (1) is not the one of their concatenation.
TEST(Producer, Nvfp4GivenGlobalScaleIsUsedAndChecked) {
  const std::vector<std::uint64_t> shape = {4, 32};
  std::vector<std::uint16_t> small(128), large(128);
  ConvertOptions to16;
  for (std::size_t i = 0; i < 128; ++i) {
    const float v = std::ldexp(static_cast<float>(static_cast<int>(i % 13) - 6) / 6.0f, -6);  // amax 2^-6
    small[i] = static_cast<std::uint16_t>(encode_f32(v, kF16, to16));
    large[i] = static_cast<std::uint16_t>(encode_f32(v * 64.0f, kF16, to16));  // amax 1
  }
  QuantizeOptions o;
  o.element = FormatId::kE2M1;
  o.granularity = Granularity::nvfp4();
  o.like = Producer::kCompressedTensors;
  const auto ds = std::as_bytes(std::span(small)), dl = std::as_bytes(std::span(large));
  EXPECT_EQ(nvfp4_global_scale_of(ds, kF16, shape, o), 1.0f);  // D(1 / 2^-6 * 2688) overflows float16
  EXPECT_EQ(nvfp4_global_scale_of(dl, kF16, shape, o), 2688.0f);
  EXPECT_EQ(nvfp4_global_like_producer(Producer::kCompressedTensors, 1.0f, kF16), 2688.0f);
  EXPECT_EQ(nvfp4_global_like_producer(Producer::kModelOpt, 2688.0f, kF32), 1.0f);
  const QuantizedTensor own = quantize(dl, kF16, shape, o);
  o.global_scale = 2688.0f;  // its own, given: the same bits
  const QuantizedTensor same = quantize(dl, kF16, shape, o);
  EXPECT_EQ(same.codes, own.codes);
  EXPECT_EQ(same.scales, own.scales);
  o.global_scale = 1.0f;  // the group's: every block scale is amax_b / 6 in e4m3fn
  const QuantizedTensor shared = quantize(dl, kF16, shape, o);
  EXPECT_EQ(shared.global_scale, 1.0f);
  EXPECT_NE(shared.scales, own.scales);
  for (std::uint8_t c : shared.scales) EXPECT_EQ(c, encode_f32(1.0f / 6.0f, kE4M3FN, {}));
  o.global_scale = -2.0f;
  std::vector<std::uint8_t> codes(64), scales(8);
  std::vector<float> global(1, 7.0f);
  EXPECT_THROW(quantize_into(dl, kF16, shape, o, {codes, scales, {}, global}), std::invalid_argument);
  EXPECT_EQ(global[0], 7.0f);  // nothing written
}

}  // namespace
}  // namespace fp8q
