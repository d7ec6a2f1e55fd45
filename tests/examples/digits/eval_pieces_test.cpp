// The evaluator's hand-written decoders (examples/digits/src) against fp8q's numerics and
// Trainium3 layout code, which have their own exhaustive tests: two independent readings of
// the same definitions must agree bit for bit.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <fp8q/numerics/convert.hpp>
#include <fp8q/quant/trainium3_layout.hpp>
#include <random>
#include <vector>

#include "codes.hpp"
#include "trn3_onchip.hpp"

namespace {

// Equal bits, or both NaN (the evaluator refuses NaN weights; its NaN payload is not specified).
void expect_same(float got, float want, std::uint32_t code) {
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(got)) << "code 0x" << std::hex << code;
  } else {
    EXPECT_EQ(std::bit_cast<std::uint32_t>(got), std::bit_cast<std::uint32_t>(want)) << "code 0x" << std::hex << code;
  }
}

TEST(DigitsCodes, E4M3FnTableMatchesEveryCode) {
  for (std::uint32_t c = 0; c < 256; ++c) expect_same(digits::fp8_table(digits::Fp8::kE4M3FN)[c], fp8q::decode_f32(c, fp8q::kE4M3FN), c);
}

TEST(DigitsCodes, Trainium2E4M3TableMatchesEveryCode) {
  for (std::uint32_t c = 0; c < 256; ++c) expect_same(digits::fp8_table(digits::Fp8::kE4M3)[c], fp8q::decode_f32(c, fp8q::kE4M3), c);
}

TEST(DigitsCodes, E8M0MatchesEveryCode) {
  for (std::uint32_t c = 0; c < 256; ++c)
    expect_same(digits::e8m0_value(static_cast<std::uint8_t>(c)), fp8q::decode_f32(c, fp8q::kE8M0), c);
}

TEST(DigitsCodes, E2M1MatchesEveryCode) {
  for (std::uint32_t c = 0; c < 16; ++c)
    expect_same(digits::e2m1_value(static_cast<std::uint8_t>(c)), fp8q::decode_f32(c, fp8q::kE2M1), c);
}

TEST(DigitsCodes, Bf16AndF16MatchEveryCode) {
  for (std::uint32_t c = 0; c < 65536; ++c) {
    expect_same(digits::bf16_value(static_cast<std::uint16_t>(c)), fp8q::decode_f32(c, fp8q::kBF16), c);
    expect_same(digits::f16_value(static_cast<std::uint16_t>(c)), fp8q::decode_f32(c, fp8q::kF16), c);
  }
}

// The static-activation encoder: nearest even, saturating. Every finite bf16 value (all
// exponents, both signs), every midpoint between neighbouring e4m3fn values and the fp32
// values either side of it, and random fp32.
TEST(DigitsCodes, EncodeE4M3FnMatchesNearestEvenSaturating) {
  const fp8q::ConvertOptions rne;  // nearest even, saturate
  auto check = [&](float x) {
    ASSERT_EQ(digits::encode_e4m3fn(x), fp8q::encode_f32(x, fp8q::kE4M3FN, rne)) << "x = " << x;
  };
  for (std::uint32_t c = 0; c < 65536; ++c) {
    const float x = std::bit_cast<float>(c << 16);
    if (std::isfinite(x)) check(x);
  }
  const auto& t = digits::fp8_table(digits::Fp8::kE4M3FN);
  for (int c = 0; c < 0x7E; ++c) {
    const float mid = t[c] + (t[c + 1] - t[c]) / 2;  // exact: one more bit than e4m3fn has
    for (float x : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e9f)}) {
      check(x);
      check(-x);
    }
  }
  std::mt19937 rng(7);
  for (int i = 0; i < 1'000'000; ++i) {
    const float x = std::bit_cast<float>(static_cast<std::uint32_t>(rng()));
    if (std::isfinite(x)) check(x);
  }
}

// The on-chip offsets against fp8q's placement (to_onchip_codes / to_onchip_scales).
TEST(DigitsTrn3, OffsetsInvertTheOnchipPlacement) {
  for (auto [ours, theirs] : {std::pair{digits::trn3::KLayout::kWrapX, fp8q::trn3::KLayout::kWrapX},
                              std::pair{digits::trn3::KLayout::k1x32, fp8q::trn3::KLayout::k1x32}}) {
    for (std::size_t K : {64u, 128u, 600u, 1024u}) {
      const std::size_t N = 3;
      std::vector<std::uint8_t> kn(K * N), image(fp8q::trn3::onchip_codes_size(K, N));
      for (std::size_t i = 0; i < kn.size(); ++i) kn[i] = static_cast<std::uint8_t>(1 + i % 251);
      fp8q::trn3::to_onchip_codes(theirs, K, N, kn, image);
      const std::size_t groups = fp8q::trn3::mx_blocks(theirs, K);
      ASSERT_EQ(digits::trn3::groups(ours, K), groups) << "K " << K;
      std::vector<std::uint8_t> compact(groups * N), simage(fp8q::trn3::onchip_scales_size(K, N));
      for (std::size_t i = 0; i < compact.size(); ++i) compact[i] = static_cast<std::uint8_t>(1 + i % 253);
      fp8q::trn3::to_onchip_scales(theirs, K, N, compact, simage);
      for (std::size_t k = 0; k < K; ++k) {
        ASSERT_EQ(digits::trn3::group_of_k(ours, k), fp8q::trn3::mx_block_of_k(theirs, k)) << "k " << k;
        for (std::size_t n = 0; n < N; ++n) {
          ASSERT_EQ(image[digits::trn3::code_offset(ours, K, N, k, n)], kn[k * N + n]) << "K " << K << " k " << k;
          ASSERT_EQ(simage[digits::trn3::scale_offset(ours, K, N, k, n)],
                    compact[digits::trn3::group_of_k(ours, k) * N + n]) << "K " << K << " k " << k;
        }
      }
    }
  }
}

}  // namespace
