// Every observation path of the |x| histogram (calib/src/histogram_observe.cpp) against a plain
// definition on the bits, on adversarial data: NaN of every payload (some share the +Inf slot of
// the pattern tally), +/-Inf, +/-0, subnormals (in and out of tally slot 0), the largest finite
// value, magnitudes that grow the range block after block, stretches of zeros that switch the
// tally kernels, ReLU-like data at several zero densities (the zero-counting kernels keep few,
// half or almost all of their elements), runs of one value, and lengths that are no multiple of
// a vector, a packing run or a block.
// Each case runs on every compiled kernel set, fp32 and bf16, several bin counts (the fp32
// tally for <= 128 sub-bins per binade, the binned path above), tail sizes, chunkings (calls
// small enough for the element-by-element path mixed with large ones) and thread counts.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <functional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "fp8q/calib/histogram.hpp"
#include "histogram_data.hpp"
#include "thread_counts.hpp"

namespace fp8q::calib {
namespace {

using test::adversarial;
using test::as_bf16;
using test::as_f32;
using test::relu_like;
using test::widened;

// ---- the definition --------------------------------------------------------------------------
// From the multiset of fp32 patterns alone (histogram.hpp): finite |x| patterns a; E =
// max(31, amax >> 23); S = bins / 32; bin of a = max((a >> (23 - log2 S)) - (E - 31) S, 0); zeros;
// amax; smallest nonzero; non-finite by kind; tail = the largest min(T, #nonzero) nonzero |x|
// (the observer never keeps zeros in its tail).
struct Expected {
  std::vector<std::uint64_t> counts;
  int range_exponent = 0;
  std::uint64_t count = 0, zeros = 0;
  std::uint32_t amax = 0, min_nonzero = 0;
  NonFiniteCounts non_finite;
  std::vector<std::uint32_t> tail;
};

Expected define(const std::vector<std::uint32_t>& bits, int bins, int tail) {
  Expected e;
  std::vector<std::uint32_t> finite;
  for (std::uint32_t u : bits) {
    const std::uint32_t a = u & 0x7FFFFFFFu;
    if (a > 0x7F800000u) ++e.non_finite.nan;
    else if (a == 0x7F800000u) ++(u >> 31 ? e.non_finite.neg_inf : e.non_finite.pos_inf);
    else finite.push_back(a);
  }
  std::sort(finite.begin(), finite.end(), std::greater<>());
  e.count = finite.size();
  e.amax = finite.empty() ? 0 : finite.front();
  for (std::uint32_t a : finite) e.zeros += a == 0;
  for (std::uint32_t a : finite)
    if (a != 0) e.min_nonzero = a;  // descending: the last nonzero is the smallest
  const int top = std::max(31, static_cast<int>(e.amax >> 23));
  const int log2_sub = std::countr_zero(static_cast<unsigned>(bins)) - 5;
  const std::int64_t base = static_cast<std::int64_t>(top - 31) << log2_sub;
  e.counts.assign(static_cast<std::size_t>(bins), 0);
  for (std::uint32_t a : finite) {
    const std::int64_t i = std::max<std::int64_t>(static_cast<std::int64_t>(a >> (23 - log2_sub)) - base, 0);
    EXPECT_LT(i, bins);  // every finite sample is below the range 2^(E - 126)
    ++e.counts[static_cast<std::size_t>(std::min<std::int64_t>(i, bins - 1))];
  }
  e.range_exponent = top - 126;
  for (std::uint32_t a : finite)
    if (a != 0 && e.tail.size() < static_cast<std::size_t>(tail)) e.tail.push_back(a);
  return e;
}

void expect_state(const HistogramObserver& h, const Expected& e, const std::string& what) {
  EXPECT_EQ(h.counts(), e.counts) << what;
  EXPECT_EQ(h.range_exponent(), e.range_exponent) << what;
  EXPECT_EQ(h.count(), e.count) << what;
  EXPECT_EQ(h.zeros(), e.zeros) << what;
  EXPECT_EQ(std::bit_cast<std::uint32_t>(h.amax()), e.amax) << what;
  EXPECT_EQ(std::bit_cast<std::uint32_t>(h.min_nonzero()), e.min_nonzero) << what;
  EXPECT_EQ(h.non_finite().nan, e.non_finite.nan) << what;
  EXPECT_EQ(h.non_finite().pos_inf, e.non_finite.pos_inf) << what;
  EXPECT_EQ(h.non_finite().neg_inf, e.non_finite.neg_inf) << what;
  std::vector<std::uint32_t> tail;
  for (float v : h.tail()) tail.push_back(std::bit_cast<std::uint32_t>(v));
  EXPECT_EQ(tail, e.tail) << what;
}

std::vector<Isa> compiled_isas() {
  std::vector<Isa> v;
  for (Isa i : kAllIsas)
    if (isa_supported(i)) v.push_back(i);
  return v;
}

// Chunkings: the whole array; cuts at random points, some chunks below the element-by-element
// threshold and some above it.
std::vector<std::vector<std::size_t>> chunkings(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<std::vector<std::size_t>> all = {{0, n}};
  for (int t = 0; t < 2; ++t) {
    std::vector<std::size_t> cuts = {0, n};
    for (int c = 0; c < 6; ++c) cuts.push_back(rng() % n);
    cuts.push_back(n / 2 + 1), cuts.push_back(n / 2 + 100);  // a short chunk
    std::sort(cuts.begin(), cuts.end());
    all.push_back(cuts);
  }
  return all;
}

template <class T>
void observe_chunks(HistogramObserver& h, const std::vector<T>& x, const std::vector<std::size_t>& cuts,
                    int threads) {
  for (std::size_t c = 0; c + 1 < cuts.size(); ++c) {
    const std::span<const T> part = std::span<const T>(x).subspan(cuts[c], cuts[c + 1] - cuts[c]);
    if constexpr (std::is_same_v<T, float>) h.observe(part, threads);
    else h.observe_bf16(part, threads);
  }
}

// ---- the cases -------------------------------------------------------------------------------
// Every bin count, tail size, compiled kernel set, chunking and thread count against the
// definition computed on the widened bits.
template <class T>
void check_every_path(const char* kind, const std::vector<T>& x, const std::vector<std::uint32_t>& bits,
                      std::initializer_list<int> bin_counts, unsigned chunking_seed) {
  const auto cuts_all = chunkings(x.size(), chunking_seed);
  for (int bins : bin_counts)
    for (int tail : {0, 7, 256}) {
      const Expected e = define(bits, bins, tail);
      for (Isa isa : compiled_isas())
        for (std::size_t c = 0; c < cuts_all.size(); ++c)
          for (int threads : fp8q::test::kThreadCounts) {
            HistogramObserver h({bins, tail, isa});
            observe_chunks(h, x, cuts_all[c], threads);
            expect_state(h, e, std::string(kind) + " n " + std::to_string(x.size()) + " bins " + std::to_string(bins) +
                                   " tail " + std::to_string(tail) + " " + std::string(isa_name(isa)) + " chunking " +
                                   std::to_string(c) + " threads " + std::to_string(threads));
          }
    }
}

TEST(HistogramPaths, AdversarialFp32MatchesTheDefinitionOnEveryPath) {
  // 64 and 4096 bins take the fp32 tally (2 and 128 sub-bins), 8192 and 65536 the binned path
  for (std::size_t n : {std::size_t{50021}, std::size_t{8192 + 13}}) {
    const auto bits = adversarial(n, static_cast<unsigned>(n));
    check_every_path("fp32", as_f32(bits), bits, {64, 2048, 4096, 8192, 65536}, 3);
  }
}

TEST(HistogramPaths, AdversarialBf16MatchesTheDefinitionOnEveryPath) {
  for (std::size_t n : {std::size_t{50021}, std::size_t{8192 + 13}}) {
    const auto h16 = as_bf16(adversarial(n, static_cast<unsigned>(n) + 1));
    check_every_path("bf16", h16, widened(h16), {64, 2048, 65536}, 4);
  }
}

TEST(HistogramPaths, ReluLikeDataMatchesTheDefinitionOnEveryPath) {
  for (std::size_t n : {std::size_t{70001}, std::size_t{8192 + 4096 + 129}}) {
    const auto bits = relu_like(n, static_cast<unsigned>(n) + 7);
    check_every_path("relu fp32", as_f32(bits), bits, {64, 2048, 4096, 8192}, 5);
    const auto h16 = as_bf16(bits);
    check_every_path("relu bf16", h16, widened(h16), {64, 2048, 65536}, 6);
  }
}

TEST(HistogramPaths, SingleKindsAndEdgeLengths) {
  // one kind of element over a whole tally call, at lengths around the vector widths and blocks:
  // every zero (counted, not tallied, after the first block), one repeated value, only NaN, only
  // -Inf, only subnormals of tally slot 0
  const std::uint32_t kinds[] = {0x00000000u, 0x80000000u, 0x3F800000u, 0x7FC00001u, 0xFF800000u, 0x0000ABCDu};
  for (std::uint32_t u : kinds)
    for (std::size_t n : {std::size_t{8192}, std::size_t{8192 + 1}, std::size_t{12288 + 15}, std::size_t{20000 - 7}})
    for (std::uint32_t other : {0x3E000000u, 0x00000000u}) {  // NaN or Inf with only zeros: no finite max or min
      std::vector<std::uint32_t> bits(n, u);
      bits[n / 2] = other;  // one other value mid-stream
      const auto x = as_f32(bits);
      const auto h16 = as_bf16(bits);
      for (Isa isa : compiled_isas()) {
        HistogramObserver f({2048, 256, isa}), b({2048, 256, isa});
        f.observe(x);
        b.observe_bf16(h16);
        const std::string what = "pattern " + std::to_string(u) + " and " + std::to_string(other) + " n " +
                                 std::to_string(n) + " " + std::string(isa_name(isa));
        expect_state(f, define(bits, 2048, 256), "fp32 " + what);
        expect_state(b, define(widened(h16), 2048, 256), "bf16 " + what);
      }
    }
}

}  // namespace
}  // namespace fp8q::calib
