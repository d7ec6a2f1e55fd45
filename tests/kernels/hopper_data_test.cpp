// The Hopper FP8 model against real H100 results: 5000 wgmma dot products (K = 32, C = 0)
// per format from tests/data/hopper-fp8-mma/ (see its README). fused:32:13:rtz must
// reproduce all of them; nearby variants must not, which shows the data can tell models apart.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "fp8q/numerics/accumulation.hpp"
#include "fp8q/numerics/convert.hpp"
#include "fp8q/numerics/format.hpp"

namespace fp8q {
namespace {

std::filesystem::path data_dir() {
  if (const char* env = std::getenv("FP8Q_HOPPER_DATA")) return env;
  return FP8Q_HOPPER_DATA_DIR;
}

struct Samples {
  std::vector<std::vector<float>> a, b;
  std::vector<std::uint32_t> d;
};

// One line: 32 fp32 bit patterns in hex.
std::vector<std::vector<float>> read_rows(const std::filesystem::path& p) {
  std::ifstream f(p);
  if (!f) throw std::runtime_error("cannot open " + p.string());
  std::vector<std::vector<float>> rows;
  for (std::string line; std::getline(f, line);) {
    if (line.empty()) continue;
    std::istringstream ss(line);
    std::vector<float> row;
    for (std::string hex; ss >> hex;) row.push_back(float_of(static_cast<std::uint32_t>(std::stoul(hex, nullptr, 16))));
    if (row.size() != 32) throw std::runtime_error(p.string() + ": line " + std::to_string(rows.size() + 1) + " has " + std::to_string(row.size()) + " values");
    rows.push_back(std::move(row));
  }
  return rows;
}

// One line: 32 binary digits.
std::vector<std::uint32_t> read_results(const std::filesystem::path& p) {
  std::ifstream f(p);
  if (!f) throw std::runtime_error("cannot open " + p.string());
  std::vector<std::uint32_t> d;
  for (std::string line; std::getline(f, line);)
    if (!line.empty()) d.push_back(static_cast<std::uint32_t>(std::stoul(line, nullptr, 2)));
  return d;
}

Samples load(const std::string& fmt) {
  const auto dir = data_dir();
  Samples s{read_rows(dir / ("a_H100_" + fmt + ".txt")), read_rows(dir / ("b_H100_" + fmt + ".txt")),
            read_results(dir / ("d_H100_" + fmt + ".txt"))};
  if (s.a.size() != s.d.size() || s.b.size() != s.d.size()) throw std::runtime_error(fmt + ": files differ in length");
  return s;
}

// How many samples the model gets wrong (operands of `format`: its emin marks subnormals).
int mismatches(const Samples& s, const AccumulationModel& m, const Format& format) {
  int bad = 0;
  for (std::size_t i = 0; i < s.d.size(); ++i) {
    const float r = reference_dot(m, {.a = s.a[i], .b = s.b[i], .emin_a = format.emin(), .emin_b = format.emin()});
    bad += bits_of(r) != s.d[i] ? 1 : 0;
  }
  return bad;
}

class HopperData : public ::testing::TestWithParam<const Format*> {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(data_dir() / "d_H100_E4M3.txt"))
      GTEST_SKIP() << "H100 vectors not found in " << data_dir() << " (set FP8Q_HOPPER_DATA to their folder)";
  }
  std::string tag() const { return GetParam() == &kE4M3FN ? "E4M3" : "E5M2"; }
};

TEST_P(HopperData, Fused32_13_RtzReproducesEverySample) {
  const Samples s = load(tag());
  ASSERT_EQ(s.d.size(), 5000u);
  // every operand is a value of the format (the README says so; a wrong file would not be)
  for (const auto& rows : {s.a, s.b})
    for (const auto& row : rows)
      for (float v : row) ASSERT_EQ(decode_f32(encode_f32(v, *GetParam()), *GetParam()), v);
  EXPECT_EQ(mismatches(s, AccumulationModel::hopper(), *GetParam()), 0);
}

TEST_P(HopperData, NearbyModelsFail) {
  const Samples s = load(tag());
  const Format& f = *GetParam();
  const int narrower = mismatches(s, AccumulationModel::fused(32, 12, Rounding::kTowardZero), f);
  const int wider = mismatches(s, AccumulationModel::fused(32, 14, Rounding::kTowardZero), f);
  const int nearest = mismatches(s, AccumulationModel::fused(32, 13, Rounding::kNearestEven), f);
  const int plain = mismatches(s, AccumulationModel::fp32_sequential(), f);
  RecordProperty("fused_12_rtz_failures", narrower);
  RecordProperty("fused_14_rtz_failures", wider);
  RecordProperty("fused_13_rne_failures", nearest);
  RecordProperty("fp32_sequential_failures", plain);
  std::printf("%s mismatches of 5000: fused:32:12:rtz %d, fused:32:14:rtz %d, fused:32:13:rne %d, fp32_sequential %d\n",
              tag().c_str(), narrower, wider, nearest, plain);
  EXPECT_GT(narrower, 100);
  EXPECT_GT(wider, 100);
  EXPECT_GT(nearest, 100);
  EXPECT_GT(plain, 100);
}

// The vectors hold C = 0 only, so they pin where C enters only through C = +0 (the test above:
// DotInput::c defaults to +0). What they do support is the chain an instruction sequence forms:
// two wgmma with K = 32, the second taking the first's D (here the measured H100 result) as C,
// are the K = 64 fused dot, and an explicit accumulator input C = +0 changes no sample.
TEST_P(HopperData, MeasuredResultAsAccumulatorInputChains) {
  const Samples s = load(tag());
  const Format& f = *GetParam();
  int bad = 0;
  for (std::size_t i = 0; i + 1 < s.d.size(); i += 2) {
    const float d0 = float_of(s.d[i]);
    const float chained = reference_dot(AccumulationModel::hopper(),
                                        {.a = s.a[i + 1], .b = s.b[i + 1], .emin_a = f.emin(), .emin_b = f.emin(), .c = d0});
    std::vector<float> a = s.a[i], b = s.b[i];
    a.insert(a.end(), s.a[i + 1].begin(), s.a[i + 1].end());
    b.insert(b.end(), s.b[i + 1].begin(), s.b[i + 1].end());
    const float whole = reference_dot(AccumulationModel::hopper(), {.a = a, .b = b, .emin_a = f.emin(), .emin_b = f.emin()});
    bad += bits_of(chained) != bits_of(whole) ? 1 : 0;
    const float explicit_zero =
        reference_dot(AccumulationModel::hopper(), {.a = s.a[i], .b = s.b[i], .emin_a = f.emin(), .emin_b = f.emin(), .c = 0.0f});
    bad += bits_of(explicit_zero) != s.d[i] ? 1 : 0;
  }
  EXPECT_EQ(bad, 0);
}

INSTANTIATE_TEST_SUITE_P(Formats, HopperData, ::testing::Values(&kE4M3FN, &kE5M2),
                         [](const auto& info) { return std::string(info.param->name); });

}  // namespace
}  // namespace fp8q
