// quant/amax.hpp and quant/recipes/ (current, block and MX scaling, roles.hpp): amax with NaN
// propagation and the same result for any thread count; each recipe equal, element by
// element, to its formula computed with the scalar reference.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "fp8q/numerics/convert.hpp"
#include "fp8q/quant/amax.hpp"
#include "fp8q/quant/recipes/block_scaling.hpp"
#include "fp8q/quant/recipes/current_scaling.hpp"
#include "fp8q/quant/recipes/mx_scaling.hpp"
#include "thread_counts.hpp"

namespace fp8q {
namespace {

std::vector<float> normal_data(std::size_t n, float sigma, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, sigma);
  std::vector<float> x(n);
  for (float& v : x) v = d(rng);
  return x;
}

TEST(Amax, IsTheLargestMagnitudeForAnyThreadCount) {
  auto x = normal_data(300001, 3.0f, 1);
  x[123456] = -1000.5f;
  for (int t : test::kThreadCounts) EXPECT_EQ(amax(x, t), 1000.5f) << t << " threads";
  std::vector<std::uint16_t> b(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) b[i] = static_cast<std::uint16_t>(bits_of(x[i]) >> 16);
  EXPECT_EQ(amax_bf16(b, 2), 1000.0f);  // -1000.5 truncated to bf16 is -1000
  EXPECT_EQ(amax(std::span<const float>{}), 0.0f);
  EXPECT_EQ(bits_of(amax(std::vector<float>{-0.0f, 0.0f})), 0u);
}

TEST(Amax, NanAnywhereMakesItNan) {
  auto x = normal_data(100000, 1.0f, 2);
  x[99999] = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(std::isinf(amax(x, 2)));
  x[7] = -std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(std::isnan(amax(x, 2)));
  EXPECT_THROW(amax(x, 0), std::invalid_argument);
}

TEST(CurrentScaling, EqualsItsFormulaElementByElement) {
  const CurrentScaling recipe{.formats = RoleFormats::hybrid(), .options = {.margin = 1}};
  for (TensorRole role : {TensorRole::kActivation, TensorRole::kWeight, TensorRole::kGradient}) {
    auto x = normal_data(10007, 0.02f, 3);
    std::vector<std::uint8_t> codes(x.size());
    const auto r = recipe.quantize(x, role, codes, 2);
    const Format& f = role == TensorRole::kGradient ? kE5M2 : kE4M3FN;
    double a = 0;
    for (float v : x) a = std::max(a, std::fabs(static_cast<double>(v)));
    EXPECT_EQ(r.amax, static_cast<float>(a));
    EXPECT_EQ(r.scale, scale_from_amax(r.amax, f, {.margin = 1}));
    // scale_inv is the correctly rounded reciprocal: |scale_inv * scale - 1| is minimal
    for (float c : {std::nextafter(r.scale_inv, 0.0f), std::nextafter(r.scale_inv, 1.0f)})
      EXPECT_LE(std::fabs(static_cast<double>(r.scale_inv) * r.scale - 1), std::fabs(static_cast<double>(c) * r.scale - 1));
    ConvertOptions o;
    o.scale = r.scale;
    for (std::size_t i = 0; i < x.size(); ++i) ASSERT_EQ(codes[i], encode_f32(x[i], f, o, i)) << "element " << i;
  }
}

TEST(CurrentScaling, RoleFormats) {
  EXPECT_EQ(RoleFormats::hybrid().of(TensorRole::kGradient), kE5M2);
  EXPECT_EQ(RoleFormats::hybrid().of(TensorRole::kWeight), kE4M3FN);
  EXPECT_EQ(RoleFormats::e4m3().of(TensorRole::kGradient), kE4M3FN);
  EXPECT_EQ(RoleFormats::trainium2_hybrid().of(TensorRole::kActivation), kE4M3);  // max 240
  std::vector<float> x = {1.0f, -2.0f};
  std::vector<std::uint8_t> codes(2);
  const auto r = CurrentScaling{.formats = RoleFormats::trainium2_hybrid()}.quantize(x, TensorRole::kWeight, codes);
  EXPECT_EQ(r.scale, 120.0f);  // 240 / 2
  EXPECT_EQ(decode_f32(codes[1], kE4M3), -240.0f);
  std::vector<std::uint8_t> wrong(3);
  EXPECT_THROW(CurrentScaling{}.quantize(x, TensorRole::kWeight, wrong), std::invalid_argument);
}

}  // namespace
}  // namespace fp8q

namespace fp8q {
namespace {

std::vector<float> ramp(std::size_t n) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>((i * 37) % 1001) * 0.0137f - 6.5f;
  return v;
}

TEST(CurrentScaling, RefusesRoleFormatsThatAreNotElementFormats) {
  const std::vector<float> x = {-3.0f, 0.0f, 2.0f};
  std::vector<std::uint8_t> codes(x.size());
  for (FormatId f : {FormatId::kE8M0, FormatId::kF32, FormatId::kBF16}) {
    CurrentScaling cs;
    cs.formats = {f, FormatId::kE5M2};
    try {
      cs.quantize(x, TensorRole::kActivation, codes);
      ADD_FAILURE() << "format " << format_of(f).name << " accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("forward format"), std::string::npos) << e.what();
    }
  }
}

TEST(BlockScaling, WeightsIn128x128ActivationsIn1x128DivideAsDeepSeek) {
  const BlockScaling recipe;
  EXPECT_EQ(recipe.granularity(TensorRole::kWeight), Granularity::block(128, 128));
  EXPECT_EQ(recipe.granularity(TensorRole::kActivation), Granularity::block(1, 128));
  const auto x = ramp(130 * 200);
  const std::uint64_t shape[] = {130, 200};
  const auto q = recipe.quantize(std::as_bytes(std::span(x)), kF32, shape, TensorRole::kWeight);
  ASSERT_EQ(q.scale_inv.size(), 4u);  // [2, 2] grid, edge blocks partial
  // block (1, 1): rows 128-129, columns 128-199; its scale_inv is amax / 448, and an element is
  // convert(fp32(x / scale_inv))
  float amax = 0;
  for (std::size_t r = 128; r < 130; ++r)
    for (std::size_t c = 128; c < 200; ++c) amax = std::max(amax, std::fabs(x[r * 200 + c]));
  EXPECT_EQ(q.scale_inv[3], scale_inv_from_amax(amax, kE4M3FN));
  ConvertOptions o;
  o.scale = q.scale_inv[3];
  o.scale_op = ScaleOp::kDivide;
  EXPECT_EQ(q.codes[129 * 200 + 150], encode_f32(x[129 * 200 + 150], kE4M3FN, o));
  // the gradient role takes the gradient format
  BlockScaling hybrid;
  hybrid.formats = RoleFormats::hybrid();
  EXPECT_EQ(hybrid.quantize_options(TensorRole::kGradient).element, FormatId::kE5M2);
}

TEST(MxScaling, PresetsNameTheirRules) {
  EXPECT_EQ(MxScaling::ocp().rule, MxScaleRule::kFloor);
  EXPECT_EQ(MxScaling::transformer_engine().rule, MxScaleRule::kRceil);
  EXPECT_EQ(MxScaling::trainium3().rule, MxScaleRule::kTrainium3);
  const auto x = ramp(64);
  const std::uint64_t shape[] = {2, 32};
  const auto q = MxScaling::trainium3().quantize(std::as_bytes(std::span(x)), kF32, shape, TensorRole::kActivation);
  ASSERT_EQ(q.scales.size(), 2u);
  float amax = 0;
  for (std::size_t i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[i]));
  EXPECT_EQ(q.scales[0], mx_scale_code(amax, kE4M3FN, MxScaleRule::kTrainium3));
}

}  // namespace
}  // namespace fp8q
