// HistogramObserver::to_state / from_state: the round trip is exact for observers built every
// way (fp32, bf16, merged, grown, empty, tail 0), and from_state refuses each broken invariant
// with the field named (the states the torch operators receive may come from anywhere).
#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <string>

#include "fp8q/calib/calibrators.hpp"
#include "fp8q/calib/histogram.hpp"
#include "fp8q/numerics/format.hpp"
#include "samples.hpp"

namespace fp8q::calib {
namespace {

HistogramOptions opts(int bins, int tail) {
  HistogramOptions o;
  o.bins = bins, o.tail = tail;
  return o;
}

std::vector<float> data(std::size_t n, unsigned seed, float scale) {
  auto x = testing::student_t(n, 2.0, scale, seed);
  x[0] = 0.0f, x[1] = -0.0f, x[2] = std::numeric_limits<float>::quiet_NaN(),
  x[3] = std::numeric_limits<float>::infinity(), x[4] = 1e-42f;
  return x;
}

void expect_round_trip(const HistogramObserver& h) {
  const auto w = h.to_state();
  ASSERT_EQ(w.size(), HistogramObserver::state_words(h.bins(), h.tail_capacity()));
  const HistogramObserver back = HistogramObserver::from_state(w);
  EXPECT_TRUE(back == h);
  EXPECT_EQ(back.to_state(), w);
  EXPECT_EQ(mse_amax(back, kE4M3FN), mse_amax(h, kE4M3FN));
}

TEST(HistogramState, RoundTripsEveryKindOfObserver) {
  expect_round_trip(HistogramObserver{});                  // empty
  expect_round_trip(HistogramObserver(opts(64, 0)));       // no tail
  HistogramObserver a(opts(256, 16)), b(opts(256, 16));
  a.observe(data(5000, 1, 1e-3f));
  expect_round_trip(a);
  b.observe(data(3000, 2, 1e4f), 2);  // a range far above a's
  a.merge(b);
  expect_round_trip(a);
  HistogramObserver zeros(opts(64, 4));
  zeros.observe(std::vector<float>(10, 0.0f));
  expect_round_trip(zeros);
  HistogramObserver c(opts(2048, 256));
  std::vector<std::uint16_t> bf16(4096);
  std::mt19937 rng(3);
  for (auto& v : bf16) v = static_cast<std::uint16_t>(rng() & 0x7F7F);  // finite patterns
  c.observe_bf16(bf16);
  expect_round_trip(c);
}

// Changes one word of a valid state and expects from_state to name `what`.
void expect_refused(std::vector<std::uint64_t> w, std::size_t word, std::uint64_t value, const std::string& what) {
  w.at(word) = value;
  try {
    (void)HistogramObserver::from_state(w);
    ADD_FAILURE() << "word " << word << " = " << value << " was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

TEST(HistogramState, RefusesEachBrokenInvariant) {
  HistogramObserver h(opts(64, 4));
  h.observe(std::vector<float>{1.0f, 2.0f, 1.5f, 0.0f, 0.5f, 0.25f});  // amax 2: bin 62 of [0, 4)
  const auto w = h.to_state();
  const std::size_t bins = 13, tail = 13 + 64;  // where the counts and the tail start
  expect_refused(w, 0, 0, "tag");
  expect_refused(w, 1, 2, "version 2");
  expect_refused(w, 2, 5, "log2 bins 5");
  expect_refused(w, 3, 5, "words; a state of 64 bins and tail 5");
  expect_refused(w, 4, 40, "top exponent 40");
  expect_refused(w, 5, 7, "the bins hold 6 samples, the count is 7");
  expect_refused(w, 6, 9, "zeros 9 exceed the count");
  expect_refused(w, 7, 0x7F800000, "amax pattern");
  expect_refused(w, 8, 0x40800000, "smallest nonzero pattern");
  expect_refused(w, 12, 3, "tail size 3");
  expect_refused(w, bins + 63, 1, "bin 63");  // above the amax's bin
  expect_refused(w, tail, 0x3F000000, "tail value 0");
  expect_refused(w, tail + 1, 0x40400000, "tail value 1");  // 3.0: above the amax
  expect_refused(w, tail + 3, 0x3F800001, "tail value 3");  // above tail value 2 (1.0)
  auto short_state = w;
  short_state.resize(5);
  EXPECT_THROW((void)HistogramObserver::from_state(short_state), std::invalid_argument);
}

}  // namespace
}  // namespace fp8q::calib
