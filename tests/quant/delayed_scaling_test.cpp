// quant/recipes/delayed_scaling.hpp: the history, the amax algorithms, the keep-previous
// rule, and the serialized state restoring bit for bit (with malformed states refused).
#include "fp8q/quant/recipes/delayed_scaling.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <deque>
#include <limits>
#include <random>

#include "fp8q/numerics/convert.hpp"
#include "fp8q/quant/scale_rules.hpp"

namespace fp8q {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// A plain model of the recipe: a deque of the last L amaxes, the max (or newest) of them,
// and scale_from_amax() unless that amax is 0, Inf or NaN.
struct Model {
  DelayedScalingConfig c;
  std::deque<float> h;
  float scale = 1.0f;
  explicit Model(const DelayedScalingConfig& config) : c(config), h(config.history_length, 0.0f) {}
  void update(float amax) {
    h.push_front(std::fabs(amax));
    h.pop_back();
    float a = h.front();
    if (c.algorithm == AmaxAlgorithm::kMax)
      for (float v : h) a = (std::isnan(v) || std::isnan(a)) ? kNaN : std::max(a, v);
    if (a > 0 && std::isfinite(a))
      scale = scale_from_amax(a, format_of(c.format), {.margin = c.margin, .power_of_two = c.power_of_two});
  }
};

TEST(DelayedScaling, FollowsTheModelStepByStep) {
  std::mt19937 rng(17);
  std::lognormal_distribution<float> amaxes(0.0f, 3.0f);
  for (AmaxAlgorithm algo : {AmaxAlgorithm::kMax, AmaxAlgorithm::kMostRecent})
    for (int length : {1, 4, 16})
      for (int margin : {0, 2})
        for (bool pow2 : {false, true}) {
          const DelayedScalingConfig c{.format = FormatId::kE4M3FN, .history_length = length, .algorithm = algo,
                                       .margin = margin, .power_of_two = pow2};
          DelayedScaling recipe(c);
          Model model(c);
          for (int step = 0; step < 200; ++step) {
            float amax = amaxes(rng);
            if (step % 37 == 5) amax = 0.0f;
            if (step % 53 == 7) amax = kInf;
            if (step == 150) amax = kNaN;
            recipe.update(amax);
            model.update(amax);
            ASSERT_EQ(bits_of(recipe.scale()), bits_of(model.scale)) << "step " << step << " L " << length;
          }
        }
}

TEST(DelayedScaling, KeepsThePreviousScaleOnZeroInfNan) {
  DelayedScaling r({.format = FormatId::kE4M3FN, .history_length = 1});
  EXPECT_EQ(r.scale(), 1.0f);
  r.update(2.0f);
  EXPECT_EQ(r.scale(), 224.0f);
  r.update(0.0f);
  EXPECT_EQ(r.scale(), 224.0f);
  r.update(kInf);
  EXPECT_EQ(r.scale(), 224.0f);
  r.update(kNaN);
  EXPECT_EQ(r.scale(), 224.0f);
  r.update(-4.0f);  // |amax|
  EXPECT_EQ(r.scale(), 112.0f);
  EXPECT_EQ(r.scale_inv(), 1.0f / 112.0f);
}

TEST(DelayedScaling, MaxLooksBackOverTheWholeWindow) {
  DelayedScaling r({.format = FormatId::kE5M2, .history_length = 3, .algorithm = AmaxAlgorithm::kMax});
  r.update(4.0f);
  r.update(1.0f);
  r.update(1.0f);
  EXPECT_EQ(r.scale(), 57344.0f / 4.0f);  // 4 is still in the window
  r.update(1.0f);
  EXPECT_EQ(r.scale(), 57344.0f);  // now it has dropped out
  EXPECT_EQ(r.history()[0], 1.0f);
}

TEST(DelayedScaling, StateRoundTripsBitForBit) {
  DelayedScaling r({.format = FormatId::kE4M3, .history_length = 8, .margin = 1, .power_of_two = true});
  std::mt19937 rng(2);
  std::exponential_distribution<float> e(0.01f);
  for (int i = 0; i < 20; ++i) r.update(e(rng));
  r.update(kNaN);  // a NaN in the history survives too
  const auto bytes = r.serialize();
  const DelayedScaling back = DelayedScaling::deserialize(bytes);
  EXPECT_EQ(back.serialize(), bytes);
  EXPECT_EQ(bits_of(back.scale()), bits_of(r.scale()));
  // and both continue identically
  DelayedScaling a = r, b = back;
  for (int i = 0; i < 10; ++i) {
    const float amax = e(rng);
    a.update(amax);
    b.update(amax);
    ASSERT_EQ(bits_of(a.scale()), bits_of(b.scale()));
  }
}

TEST(DelayedScaling, ConfigsItCouldNotRestoreAreRefused) {
  // every state the recipe can hold serializes into one deserialize() accepts
  EXPECT_THROW(DelayedScaling({.history_length = (1 << 24) + 1}), std::invalid_argument);
  EXPECT_THROW(DelayedScaling({.history_length = 0}), std::invalid_argument);
  EXPECT_THROW(DelayedScaling({.margin = kMaxMargin + 1}), std::invalid_argument);
  EXPECT_THROW(DelayedScaling({.margin = std::numeric_limits<int>::min()}), std::invalid_argument);
  // a margin large enough to take the scale below 2^-127: the scale stops there, and the
  // state (scale finite and > 0) restores bit for bit
  DelayedScaling d({.history_length = 4, .margin = 200});
  d.update(1.0f);
  EXPECT_EQ(d.scale(), std::ldexp(1.0f, -127));
  EXPECT_EQ(d.scale_inv(), std::ldexp(1.0f, 127));
  const DelayedScaling back = DelayedScaling::deserialize(d.serialize());
  EXPECT_EQ(back.serialize(), d.serialize());
}

TEST(DelayedScaling, MalformedStatesAreRefusedByField) {
  const auto good = DelayedScaling({.history_length = 2}).serialize();
  auto expect_error = [](std::vector<std::uint8_t> bytes, const std::string& words) {
    try {
      DelayedScaling::deserialize(bytes);
      ADD_FAILURE() << "accepted; expected an error about " << words;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  expect_error({good.begin(), good.begin() + 10}, "truncated");
  auto bad = good;
  bad[0] = 'X';
  expect_error(bad, "magic");
  bad = good;
  bad[8] = 200;
  expect_error(bad, "format id");
  bad = good;
  bad[8] = static_cast<std::uint8_t>(FormatId::kF32);
  expect_error(bad, "format must be");
  bad = good;
  bad[9] = 7;
  expect_error(bad, "algorithm");
  bad = good;
  bad.pop_back();
  expect_error(bad, "size");
  bad = good;
  bad[20] = bad[21] = bad[22] = bad[23] = 0;
  expect_error(bad, "scale");
  bad = good;
  bad[20] = 1, bad[21] = bad[22] = bad[23] = 0;  // 2^-149: its scale_inv would be Inf
  expect_error(bad, "scale must be in [2^-127, FLT_MAX], got bits 0x00000001");
  bad = good;
  bad.back() = 0x80;  // the sign bit of the last history entry
  expect_error(bad, "history[1]");
  // under power_of_two every scale update() can make is a power of two
  auto pow2 = DelayedScaling({.history_length = 2, .power_of_two = true}).serialize();
  EXPECT_NO_THROW(DelayedScaling::deserialize(pow2));
  pow2[20] = 0, pow2[21] = 0, pow2[22] = 0x40, pow2[23] = 0x40;  // 3.0f
  expect_error(pow2, "a power of two under power_of_two, got bits 0x40400000");
  EXPECT_THROW(DelayedScaling({.history_length = 0}), std::invalid_argument);
}

TEST(DelayedScaling, ResumesFromAHistoryAndScale) {
  const DelayedScalingConfig c{.format = FormatId::kE5M2, .history_length = 4, .power_of_two = true};
  DelayedScaling r(c);
  for (float a : {3.0f, 0.5f, 7.25f}) r.update(a);
  const DelayedScaling back(c, r.history(), r.scale());
  EXPECT_EQ(back.serialize(), r.serialize());
  auto expect_error = [&](std::vector<float> history, float scale, const std::string& words) {
    try {
      DelayedScaling(c, history, scale);
      ADD_FAILURE() << "accepted; expected an error about " << words;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  expect_error({1, 2, 3}, 1.0f, "history holds 3 amaxes, history_length is 4");
  expect_error({1, 2, -0.0f, 3}, 1.0f, "history[2] is negative");
  expect_error({1, 2, 3, 4}, 3.0f, "a power of two under power_of_two");
  expect_error({1, 2, 3, 4}, kInf, "scale must be in [2^-127, FLT_MAX]");
}

}  // namespace
}  // namespace fp8q
