// One-call calibration: per tensor and per channel, every source format, the reported error
// against the scalar reference, and independence from thread count and FP environment.
#include "fp8q/calib/calibrate.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "fp8q/numerics/arith.hpp"
#include "fp8q/numerics/convert.hpp"
#include "samples.hpp"

#include "hostile_fp_env.hpp"

namespace fp8q::calib {
namespace {

std::vector<ChannelCalibration> run(const std::vector<float>& x, Method m, Granularity g = Granularity::tensor(),
                                    ChannelLayout l = {}, int threads = 1) {
  CalibrationSpec spec;
  spec.method = m;
  spec.granularity = g;
  spec.threads = threads;
  return calibrate(x, spec, l);
}

void expect_same(const std::vector<ChannelCalibration>& a, const std::vector<ChannelCalibration>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t c = 0; c < a.size(); ++c) {
    EXPECT_EQ(bits_of(a[c].amax), bits_of(b[c].amax)) << c;
    EXPECT_EQ(bits_of(a[c].scale), bits_of(b[c].scale)) << c;
    EXPECT_EQ(bits_of(a[c].mse), bits_of(b[c].mse)) << c;
    EXPECT_EQ(a[c].count, b[c].count) << c;
  }
}

TEST(Calibrate, TensorResultIsConsistentWithTheReference) {
  auto x = testing::student_t(20000, 3.0, 1.0, 61);
  x[3] = std::numeric_limits<float>::quiet_NaN();
  x[4] = -std::numeric_limits<float>::infinity();
  for (Method m : {Method::kMax, Method::kPercentile, Method::kMse, Method::kEntropy}) {
    const auto r = run(x, m);
    ASSERT_EQ(r.size(), 1u);
    const auto& c = r[0];
    EXPECT_EQ(c.scale, scale_from_amax(c.amax, kE4M3FN));
    EXPECT_EQ(c.scale_inv, divide_rne(1.0f, c.scale));
    EXPECT_EQ(c.count, x.size() - 2);
    EXPECT_EQ(c.non_finite.nan, 1u);
    EXPECT_EQ(c.non_finite.neg_inf, 1u);
    const double ref = testing::reference_mse_for_scale(x, c.scale, kE4M3FN);
    EXPECT_NEAR(c.mse, ref, ref * 1e-12) << method_name(m);
    double sig = 0;
    for (float v : x)
      if (std::isfinite(v)) sig += static_cast<double>(v) * v;
    EXPECT_NEAR(c.sqnr_db, 10 * std::log10(sig / (ref * static_cast<double>(c.count))), 1e-9);
    if (m == Method::kMax) EXPECT_EQ(c.amax, c.observed_amax);
  }
}

TEST(Calibrate, PerChannelEqualsEachChannelAlone) {
  // [rows = 8, cols = 300]: per row (axis 0) and per column (axis 1)
  const auto x = testing::laplace(8 * 300, 1.0, 62);
  const std::size_t shape[] = {8, 300};
  for (int axis : {0, 1}) {
    const auto layout = ChannelLayout::along(shape, axis);
    const auto r = run(x, Method::kMse, Granularity::row(), layout);
    ASSERT_EQ(r.size(), shape[axis]);
    for (std::size_t c = 0; c < r.size(); ++c) {
      std::vector<float> ch;
      for (std::size_t i = 0; i < x.size(); ++i)
        if ((axis == 0 ? i / 300 : i % 300) == c) ch.push_back(x[i]);
      const auto alone = run(ch, Method::kMse);
      EXPECT_EQ(r[c].amax, alone[0].amax) << axis << " " << c;
      EXPECT_NEAR(r[c].mse, alone[0].mse, alone[0].mse * 1e-12);
    }
  }
}

TEST(Calibrate, Bf16AndF16SourcesAreTheirExactValues) {
  const auto x = testing::normal(5000, 2.0, 63);
  std::vector<std::uint16_t> b(x.size()), h(x.size());
  std::vector<float> bw(x.size()), hw(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    b[i] = static_cast<std::uint16_t>(convert_one(bits_of(x[i]), kF32, kBF16, {}).code);
    h[i] = static_cast<std::uint16_t>(convert_one(bits_of(x[i]), kF32, kF16, {}).code);
    bw[i] = decode_f32(b[i], kBF16);
    hw[i] = decode_f32(h[i], kF16);
  }
  CalibrationSpec spec;
  spec.method = Method::kEntropy;
  spec.format = FormatId::kE5M2;
  expect_same(calibrate(std::as_bytes(std::span(b)), kBF16, spec), calibrate(bw, spec));
  expect_same(calibrate(std::as_bytes(std::span(h)), kF16, spec), calibrate(hw, spec));
  expect_same(calibrate(std::as_bytes(std::span(x)), kF32, spec), calibrate(x, spec));
}

TEST(Calibrate, ThreadCountAndFpEnvironmentChangeNothing) {
  const auto x = testing::student_t(300000, 2.5, 1.0, 64);
  for (Method m : {Method::kPercentile, Method::kMse, Method::kEntropy}) {
    const auto one = run(x, m);
    expect_same(run(x, m, Granularity::tensor(), {}, 3), one);
    std::vector<ChannelCalibration> odd;
    {
      test::ScopedHostileFpEnv env(test::HostileRounding::kUp);  // and flush-to-zero
      odd = run(x, m);
    }
    expect_same(odd, one);
  }
}

// Data whose every value is an fp32 subnormal: under the caller's DAZ a float comparison takes
// the amax for 0 (mse and entropy returned amax 0 and scale 1 there).
TEST(Calibrate, SubnormalDataUnderTheCallersDaz) {
  std::vector<float> x(100);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) * 1e-41f;
  for (Method m : {Method::kMax, Method::kPercentile, Method::kMse, Method::kEntropy}) {
    const auto one = run(x, m);
    EXPECT_GT(one[0].amax, 0.0f) << method_name(m);
    std::vector<ChannelCalibration> odd;
    {
      test::ScopedHostileFpEnv env(test::HostileRounding::kKeep);  // flush-to-zero
      odd = run(x, m);
    }
    expect_same(odd, one);
  }
}

TEST(Calibrate, BadInputIsRejected) {
  const std::vector<float> x(10, 1.0f);
  CalibrationSpec spec;
  spec.granularity = Granularity::row();
  EXPECT_THROW(calibrate(x, spec, ChannelLayout{1, 3, 3}), std::invalid_argument);  // 9 != 10
  spec.granularity = Granularity::tensor();
  spec.format = FormatId::kE8M0;
  EXPECT_THROW(calibrate(x, spec), std::invalid_argument);
  spec.format = FormatId::kE4M3FN;
  spec.threads = 0;
  EXPECT_THROW(calibrate(x, spec), std::invalid_argument);
  spec.threads = 1;
  const std::vector<std::byte> odd(7);
  EXPECT_THROW(calibrate(odd, kF32, spec), std::invalid_argument);
  EXPECT_THROW(calibrate(odd, kE4M3FN, spec), std::invalid_argument);
  // options a method does not use are checked all the same, before any sample is read
  spec.method = Method::kMax;
  spec.histogram.bins = 3;
  EXPECT_THROW(calibrate(x, spec), std::invalid_argument);
  spec.histogram = {};
  spec.calibrator.percentile = -5;
  EXPECT_THROW(calibrate(x, spec), std::invalid_argument);
  spec.calibrator.percentile = 99.9;
  spec.method = static_cast<Method>(9);
  EXPECT_THROW(calibrate(x, spec), std::invalid_argument);
}

TEST(Calibrate, AllZerosAndAllEqual) {
  const auto zeros = run(std::vector<float>(100, 0.0f), Method::kMse);
  EXPECT_EQ(zeros[0].amax, 0.0f);
  EXPECT_EQ(zeros[0].scale, 1.0f);
  EXPECT_EQ(zeros[0].mse, 0.0);
  EXPECT_TRUE(std::isinf(zeros[0].sqnr_db));
  // all equal: the mse calibrator puts the value (almost exactly) on a grid point
  const auto eq = run(std::vector<float>(1000, 3.7f), Method::kMse);
  EXPECT_LT(eq[0].mse, 1e-12);
}

}  // namespace
}  // namespace fp8q::calib
