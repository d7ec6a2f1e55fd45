// The 16-lane histogram kernels of the AVX-512 build (calib/src/isa/hist_kernel16.hpp), run
// over a lane-by-lane emulation of the AVX-512 operations (hist_ops_lanes16.hpp), equal the
// generic kernels bit for bit: every kernel of HistKernels, on all zeros, NaN and Inf, subnormals
// in and out of tally slot 0, runs of one value, every bf16 pattern, the adversarial and
// ReLU-like data of histogram_paths_test.cpp, at lengths around 16 lanes and the runs of the
// tallies, from unaligned starts, adding to tables that already hold counts. The same checks
// run on the real AVX2 and AVX-512 kernels where this CPU has them.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <string>
#include <type_traits>
#include <vector>

#include "fp8q/numerics/isa.hpp"
#include "histogram_data.hpp"
#include "isa/hist_kernels.hpp"

namespace {
#include "hist_ops_lanes16.hpp"
#include "isa/hist_kernel16.hpp"
}  // namespace

namespace fp8q::calib {
namespace {

using detail::HistKernels;
using detail::ScanResult;

struct Named {
  std::string name;
  const HistKernels* k;
};
std::vector<Named> kernel_sets() {
  std::vector<Named> v = {{"lanes16", &HistKernel16<OpsHistLanes16>::table()}};
  if (isa_supported(Isa::kAvx2) && detail::hist_kernels_avx2()) v.push_back({"avx2", detail::hist_kernels_avx2()});
  if (isa_supported(Isa::kAvx512) && detail::hist_kernels_avx512())
    v.push_back({"avx512", detail::hist_kernels_avx512()});
  return v;
}

void expect_scan(const ScanResult& got, const ScanResult& want, const std::string& what) {
  EXPECT_EQ(got.max_bits, want.max_bits) << what;
  EXPECT_EQ(got.zeros, want.zeros) << what;
  EXPECT_EQ(got.min_nonzero_bits, want.min_nonzero_bits) << what;
}

// A table that already holds counts, so that a kernel must add to it.
std::vector<std::uint32_t> seeded_table() {
  std::vector<std::uint32_t> t(detail::kTallySlots);
  for (std::size_t i = 0; i < t.size(); ++i) t[i] = static_cast<std::uint32_t>(i * 2654435761u >> 29);
  return t;
}

// The binned count's inputs: the finite elements; base and shift from their max as
// HistogramObserver computes them (every bin then lies below `bins`).
void expect_count(const HistKernels& k, const std::vector<float>& x, int log2_sub, const std::string& what) {
  std::vector<float> finite;
  std::uint32_t amax = 0;
  for (float v : x) {
    const std::uint32_t a = std::bit_cast<std::uint32_t>(v) & 0x7FFFFFFFu;
    if (a >= 0x7F800000u) continue;
    finite.push_back(v);
    amax = std::max(amax, a);
  }
  const int top = std::max(31, static_cast<int>(amax >> 23));
  const int base = (top - 31) << log2_sub, shift = 23 - log2_sub;
  const std::size_t bins = std::size_t{32} << log2_sub;
  std::vector<std::uint32_t> want(detail::kTables * bins, 1), got = want;
  detail::hist_kernels_generic().count_f32(finite.data(), finite.size(), shift, base, want.data(), bins);
  k.count_f32(finite.data(), finite.size(), shift, base, got.data(), bins);
  EXPECT_TRUE(got == want) << what << " count, " << log2_sub << " log2 sub-bins";
}

// Every kernel against the generic one on in[0, n).
void expect_kernels_equal(const HistKernels& k, const std::uint32_t* bits, std::size_t n, const std::string& what) {
  const HistKernels& g = detail::hist_kernels_generic();
  std::vector<float> x(n);
  std::vector<std::uint16_t> h(n);
  for (std::size_t i = 0; i < n; ++i) {
    x[i] = std::bit_cast<float>(bits[i]);
    h[i] = static_cast<std::uint16_t>(bits[i] >> 16);
  }
  expect_scan(k.scan_f32(x.data(), n), g.scan_f32(x.data(), n), what + " scan");
  const auto tally = [&](auto fk, auto fg, const auto& in, const char* name) {
    std::vector<std::uint32_t> want = seeded_table(), got = want;
    if constexpr (std::is_same_v<decltype(fk(in.data(), n, got.data())), void>) {
      fk(in.data(), n, got.data());
      fg(in.data(), n, want.data());
    } else {
      expect_scan(fk(in.data(), n, got.data()), fg(in.data(), n, want.data()), what + " " + name);
    }
    EXPECT_TRUE(got == want) << what << " " << name;
  };
  tally(k.tally_f32, g.tally_f32, x, "tally_f32");
  tally(k.tally_f32_zeros, g.tally_f32_zeros, x, "tally_f32_zeros");
  tally(k.tally_bf16, g.tally_bf16, h, "tally_bf16");
  tally(k.tally_bf16_zeros, g.tally_bf16_zeros, h, "tally_bf16_zeros");
  for (std::uint32_t above : {0u, 0x00010000u, 0x3F000000u, 0x7F7FFFFEu, 0x7F7FFFFFu}) {
    std::vector<std::uint32_t> want(n + 1, 7), got = want;
    const std::size_t kw = g.select_f32(x.data(), n, above, want.data());
    const std::size_t kg = k.select_f32(x.data(), n, above, got.data());
    EXPECT_EQ(kg, kw) << what << " select above " << above;
    EXPECT_TRUE(got == want) << what << " select above " << above;
  }
  for (int log2_sub : {8, 11}) expect_count(k, x, log2_sub, what);
}

// The kernels on `bits` cut at lengths around the 16 lanes, the runs of 256 and 512 elements
// and the 4096-element blocks, from aligned and unaligned starts, and whole.
void check(const std::vector<std::uint32_t>& bits, const std::string& what) {
  const std::size_t lengths[] = {0, 1, 15, 16, 17, 31, 32, 33, 47, 255, 256, 257, 511, 512, 513, 527, 1039, 4096, 4111};
  for (const Named& ks : kernel_sets()) {
    for (std::size_t start : {std::size_t{0}, std::size_t{1}, std::size_t{7}})
      for (std::size_t n : lengths)
        if (start + n <= bits.size())
          expect_kernels_equal(*ks.k, bits.data() + start, n,
                               what + " " + ks.name + " start " + std::to_string(start) + " n " + std::to_string(n));
    expect_kernels_equal(*ks.k, bits.data(), bits.size(), what + " " + ks.name + " whole");
  }
}

TEST(HistLanes16, OneKindOnly) {
  // +0, -0, +/-0 mixed, one normal value, a NaN, -Inf, subnormals of slot 0 and of slot 1, the
  // largest finite value: many equal bins, slots and statistics with nothing to find
  for (std::uint32_t u : {0x00000000u, 0x80000000u, 0x3FC00000u, 0x7FC00001u, 0xFF800000u, 0x0000ABCDu, 0x8001ABCDu,
                          0x7F7FFFFFu}) {
    std::vector<std::uint32_t> bits(5000, u);
    check(bits, "pattern " + std::to_string(u));
  }
  std::vector<std::uint32_t> zeros(5000);
  for (std::size_t i = 0; i < zeros.size(); ++i) zeros[i] = (i * 7 % 3 == 0) ? 0x80000000u : 0u;
  check(zeros, "signed zeros");
}

TEST(HistLanes16, Specials) {
  std::vector<std::uint32_t> bits;
  for (int r = 0; r < 300; ++r)
    for (std::size_t i = 0; i < std::size(test::kSpecials); ++i) bits.push_back(test::kSpecials[(i * 5 + r) % std::size(test::kSpecials)]);
  check(bits, "specials");
}

TEST(HistLanes16, EveryBf16Pattern) {
  // every 16-bit pattern as the top half, in a scattered order, the low halves random (fp32) or
  // zero (bf16 exactly), plus a tail that is no multiple of 16
  std::vector<std::uint32_t> bits(65536 + 45), exact(bits.size());
  std::uint32_t r = 12345;
  for (std::size_t i = 0; i < bits.size(); ++i) {
    r = r * 1664525u + 1013904223u;
    exact[i] = static_cast<std::uint32_t>(i * 40503u & 0xFFFFu) << 16;
    bits[i] = exact[i] | (r >> 16);
  }
  check(exact, "every bf16 pattern");
  check(bits, "every top half");
}

TEST(HistLanes16, AdversarialAndReluLike) {
  check(test::adversarial(30011, 30011), "adversarial");
  check(test::relu_like(20011, 20018), "relu-like");
}

}  // namespace
}  // namespace fp8q::calib
