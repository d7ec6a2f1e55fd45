// The trainium3_mx micro-kernel text (kernels/src/isa/trn3mx_kernel.hpp) equals gemm_reference bit
// for bit on any machine: instantiated here over the lane-by-lane emulation of its AVX-512
// operations (OpsTrn3Lanes8Odd, 8 fp64 lanes in the AVX-512 kernel's 4 x 2 tile; OpsTrn3Lanes8,
// the text without directed roundings, in 4 x 2 and 1 x 1) and
// run through the driver (trainium3_mx_rows_with), for 1x32 and wrapx: K across instructions of
// 512 and partial partitions, MX scales over E8M0's whole range (NaN included), specials, C and
// bias, partitions that nearly cancel the running sum, sums below fp32's normal range, fp64
// sums on an fp32 midpoint, e5m2 x e5m2 bounded by its codes. Every other kernel this binary
// and CPU have (generic, AVX2, the real AVX-512 one) runs on the same inputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "fp8q/kernels/gemm.hpp"
#include "fp8q/numerics/accumulation.hpp"
#include "gemm_fixture.hpp"
#include "isa/trn3mx.hpp"
#include "model_paths.hpp"

namespace {
#include "isa/trn3mx_kernel.hpp"
#include "ops_lanes16_models.hpp"
}  // namespace

namespace fp8q {
namespace {

using testing::Problem;
using testing::random_problem;
using F = FormatId;
using S = testing::Scales;

struct Named {
  detail::Trn3MxKernel kernel;
  const char* name;
};

std::vector<Named> kernels() {
  std::vector<Named> v = {{Trn3MxKernelT<OpsTrn3Lanes8Odd, 4, 2>::kernel(), "lanes8 round-to-odd 4x2"},
                          {Trn3MxKernelT<OpsTrn3Lanes8, 4, 2>::kernel(), "lanes8 4x2"},
                          {Trn3MxKernelT<OpsTrn3Lanes8, 1, 1>::kernel(), "lanes8 1x1"},
                          {detail::trn3mx_kernel_generic(), "generic"}};
  if (auto k = detail::trn3mx_kernel_avx2(); k.run != nullptr) v.push_back({k, "avx2"});
  if (auto k = detail::trn3mx_kernel_avx512(); k.run != nullptr) v.push_back({k, "avx512"});
  return v;
}

std::uint32_t bits_of(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}

// Each kernel's rows == gemm_reference, over all rows at once and split at an odd row.
void expect_same(const Problem& p, Trn3Layout layout) {
  const GemmArgs g = p.args();
  const GemmOptions o{.model = AccumulationModel::trainium3_mx(layout)};
  const std::string name = model_name(o.model) + " " + std::to_string(p.m) + "x" + std::to_string(p.n) + "x" +
                           std::to_string(p.k) + " " + std::string(format_of(p.fa).name) + "*" +
                           std::string(format_of(p.fb).name);
  ASSERT_NE(detail::trainium3_mx_path(g, o).rows, nullptr) << name;
  std::vector<float> ref(p.m * p.n), out(p.m * p.n);
  gemm_reference(g, o, std::span<float>(ref));
  const std::size_t split = p.m > 1 ? (p.m / 2) | 1 : p.m;
  for (const Named& k : kernels())
    for (std::size_t m1 : {p.m, split}) {
      std::fill(out.begin(), out.end(), -1.0f);
      detail::trainium3_mx_rows_with(k.kernel, g, o, 0, m1, out.data());
      if (m1 < p.m) detail::trainium3_mx_rows_with(k.kernel, g, o, m1, p.m, out.data() + m1 * p.n);
      for (std::size_t i = 0; i < ref.size(); ++i)
        ASSERT_EQ(bits_of(ref[i]), bits_of(out[i])) << name << " kernel " << k.name << " at [" << i / p.n << ", "
                                                     << i % p.n << "]: reference " << ref[i] << ", got " << out[i];
    }
}

// wrapx with group-consistent scales: the 4 groups one wrapx partition reads (16t + 4c + j,
// c = 0..3) share A's scale, as the hardware requires; B's spread by at most 1 (e5m2 x e4m3fn
// spans 52 bits, so that is the most its sums can take).
void wrapx_scales(Problem& p, std::mt19937_64& rng) {
  const std::size_t kg = (p.k + 31) / 32;
  for (std::size_t q = 0; q < kg; ++q) {
    const std::size_t lead = q / 16 * 16 + q % 4;
    for (std::size_t m = 0; m < p.m && !p.mx_a.empty(); ++m) p.mx_a[m * kg + q] = p.mx_a[m * kg + lead];
    for (std::size_t n = 0; n < p.n && !p.mx_b.empty(); ++n)
      p.mx_b[q * p.n + n] = static_cast<std::uint8_t>(std::min<int>(254, p.mx_b[lead * p.n + n] + rng() % 2));
  }
}

const std::tuple<F, F, S, S> kVariants[] = {
    {F::kE4M3FN, F::kE4M3FN, S::kMx32, S::kMx32}, {F::kE5M2, F::kE4M3FN, S::kMx32, S::kMx32},
    {F::kE4M3FN, F::kE5M2, S::kMx32, S::kNone},   {F::kE2M1, F::kE2M3, S::kMx32, S::kMx32},
    {F::kE3M2, F::kE4M3FN, S::kNone, S::kMx32},   {F::kE2M1, F::kE2M1, S::kMx32, S::kMx32},
};
const testing::Shape kShapes[] = {{1, 1, 1},    {7, 33, 130}, {3, 70, 33}, {13, 300, 40},
                                  {5, 17, 260}, {5, 9, 1030}, {3, 40, 513}, {3, 5, 0}, {9, 20, 1536}};

// Every shape and format pair of the tables, scales over E8M0's whole range (wrapx: made
// group-consistent).
void every_shape_and_variant(Trn3Layout layout, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (const auto& s : kShapes)
    for (const auto& [fa, fb, sa, sb] : kVariants) {
      Problem p = random_problem(rng, s.m, s.n, s.k, fa, fb, sa, sb, s.k % 2 == 0, s.m % 2 == 1, 60);
      testing::wide_mx_scales(p, rng);
      if (layout == Trn3Layout::kWrapX) wrapx_scales(p, rng);
      expect_same(p, layout);
    }
}

TEST(Trn3MxLanes8, EqualsTheReference1x32) { every_shape_and_variant(Trn3Layout::k1x32, 21); }

TEST(Trn3MxLanes8, EqualsTheReferenceWrapX) { every_shape_and_variant(Trn3Layout::kWrapX, 23); }

// e5m2 x e5m2: the formats' range (2^-16 .. 2^15) does not fit 53 bits, so the path bounds the
// codes present: exponents 2^-4 .. 2^15 here (40 bits), every code of that range and zeros.
TEST(Trn3MxLanes8, E5m2TimesE5m2OnTheCodesPresent) {
  std::mt19937_64 rng(24);
  auto code = [&] {
    const auto e = static_cast<std::uint8_t>(11 + rng() % 20), man = static_cast<std::uint8_t>(rng() % 4);
    return rng() % 16 == 0 ? std::uint8_t{0} : static_cast<std::uint8_t>((rng() % 2) << 7 | e << 2 | man);
  };
  for (Trn3Layout layout : {Trn3Layout::k1x32, Trn3Layout::kWrapX})
    for (const auto& s : {testing::Shape{5, 40, 1030}, testing::Shape{8, 17, 512}}) {
      Problem p = random_problem(rng, s.m, s.n, s.k, F::kE5M2, F::kE5M2, S::kMx32, S::kMx32, true, false, 0);
      for (auto& x : p.a) x = code();
      for (auto& x : p.b) x = code();
      wrapx_scales(p, rng);
      expect_same(p, layout);
    }
  // and the full range has no path: the reference runs
  Problem p = random_problem(rng, 4, 4, 64, F::kE5M2, F::kE5M2, S::kMx32, S::kMx32, false, false, 0);
  p.a[0] = 0x01, p.a[1] = 0x7B, p.b[0] = 0x01, p.b[4] = 0x7B;  // 2^-16 and 57344 on both sides
  EXPECT_EQ(detail::trainium3_mx_path(p.args(), {.model = AccumulationModel::trainium3_mx(Trn3Layout::k1x32)}).rows,
            nullptr);
}

// t + s_p exact only with the two-sum: one operand's MX scales alternate 2^0 and 2^-40, so
// small partitions meet a large running sum of either sign; and scales near E8M0's bottom, where
// sums fall below fp32's normal range.
TEST(Trn3MxLanes8, NearlyCancellingPartitions) {
  std::mt19937_64 rng(22);
  for (Trn3Layout layout : {Trn3Layout::k1x32, Trn3Layout::kWrapX})
    for (int rep = 0; rep < 4; ++rep) {
      Problem p = random_problem(rng, 4, 40, 1024, F::kE4M3FN, F::kE4M3FN, S::kMx32, S::kMx32, false, false, 0);
      for (std::size_t i = 0; i < p.mx_a.size(); ++i) {
        // groups alternate (wrapx: the 4 groups 16t + 4c + j of a partition share j's parity)
        p.mx_a[i] = static_cast<std::uint8_t>(i % 2 == 0 ? 127 : 87);
      }
      for (auto& e : p.mx_b) e = rep == 3 ? static_cast<std::uint8_t>(rng() % 8) : std::uint8_t{127};
      expect_same(p, layout);
    }
}

// fp64 sums on an fp32 midpoint: t = 1, then a partition (MX scale 2^-40) of 2^16 * 2^-40 and
// +-2^-18 * 2^-40, so x = fp64(1 + 2^-24 +- 2^-58) = 1 + 2^-24, a tie in fp32 that the exact sum
// is not: the suspect test must send the step to the two-sum (1 + 2^-23 and 1); and with 0 for
// the small product, the exact tie 1 + 2^-24, which goes to even (1).
TEST(Trn3MxLanes8, MidpointsTakeTheExactForm) {
  constexpr std::uint8_t kSmall[] = {0x81, 0x01, 0x00};  // -2^-9, 2^-9, 0
  std::mt19937_64 rng(25);
  for (Trn3Layout layout : {Trn3Layout::k1x32, Trn3Layout::kWrapX}) {
    // K of t's product, and of the partition's two slots (1x32: k 32, 33; wrapx: k 32, 160)
    const std::size_t k_one = 0, k_big = 32, k_small = layout == Trn3Layout::k1x32 ? 33 : 160;
    for (int noise = 0; noise < 2; ++noise) {
      Problem p = random_problem(rng, 8, 32, 512, F::kE4M3FN, F::kE4M3FN, S::kMx32, S::kMx32, false, false, 0);
      for (auto& x : p.a) x = noise != 0 && rng() % 4 == 0 ? static_cast<std::uint8_t>(rng() % 0x7F) : 0;
      std::fill(p.b.begin(), p.b.end(), std::uint8_t{0});
      std::fill(p.mx_a.begin(), p.mx_a.end(), std::uint8_t{127});
      std::fill(p.mx_b.begin(), p.mx_b.end(), std::uint8_t{127});
      const std::size_t kg = p.k / 32;
      for (std::size_t m = 0; m < p.m; ++m) {
        p.a[m * p.k + k_one] = 0x38, p.a[m * p.k + k_big] = 0x78, p.a[m * p.k + k_small] = 0x01;  // 1, 256, 2^-9
        for (std::size_t c = 0; c < 4; ++c)  // wrapx: all 4 groups of the partition
          p.mx_a[m * kg + (layout == Trn3Layout::k1x32 ? k_big / 32 : k_big / 32 + 4 * c)] = 127 - 40;
      }
      for (std::size_t n = 0; n < p.n; ++n)
        p.b[k_one * p.n + n] = 0x38, p.b[k_big * p.n + n] = 0x78, p.b[k_small * p.n + n] = kSmall[n % 3];
      if (noise == 0) {
        const GemmArgs g = p.args();
        std::vector<float> ref(p.m * p.n);
        gemm_reference(g, {.model = AccumulationModel::trainium3_mx(layout)}, std::span<float>(ref));
        EXPECT_EQ(ref[0], 1.0f) << model_name(AccumulationModel::trainium3_mx(layout));  // 1 + 2^-24 - 2^-58
        EXPECT_EQ(ref[1], 1.0f + 0x1p-23f) << model_name(AccumulationModel::trainium3_mx(layout));
        EXPECT_EQ(ref[2], 1.0f) << model_name(AccumulationModel::trainium3_mx(layout));  // the tie, to even
      }
      expect_same(p, layout);
    }
  }
}

// ---- tiles whose every t + s_p is exact (trn3_sums) ----------------------------------------

detail::Trn3Range range_of(std::initializer_list<double> values) {
  detail::Trn3Range r;
  for (double x : values) r.add(x);
  return r;
}

// The range of a problem's decoded operand (codes times their MX scales), as the driver forms
// it over each tile; over the whole operand it bounds every tile's.
detail::Trn3Range operand_range(const Problem& p, bool a) {
  const std::size_t kg = (p.k + 31) / 32;
  detail::Trn3Range r;
  for (std::size_t i = 0; i < (a ? p.m : p.n); ++i)
    for (std::size_t k = 0; k < p.k; ++k) {
      const std::uint8_t code = a ? p.a[i * p.k + k] : p.b[k * p.n + i];
      const std::uint8_t e = a ? p.mx_a[i * kg + k / 32] : p.mx_b[(k / 32) * p.n + i];
      r.add(std::ldexp(static_cast<double>(decode_f32(code, format_of(a ? p.fa : p.fb))), e - 127));
    }
  return r;
}

// Range::add keeps the largest exponent and the lowest set bit of nonzero finite values; the
// sums are exact when top_a + top_b + 12 - (low_a + low_b) <= 53, rounded by the bounded form
// when also low_a + low_b >= -149, top_a + top_b + 12 <= 127 and no operand is Inf or NaN.
TEST(Trn3Sums, ChosenFromTheOperandsRange) {
  using detail::Trn3Sums;
  const detail::Trn3Range r = range_of({3.0, -0.375, 0.0, -0.0});
  EXPECT_EQ(r.top, 1);
  EXPECT_EQ(r.low, -3);
  EXPECT_FALSE(r.special);
  EXPECT_TRUE(range_of({1.0, NAN}).special);
  EXPECT_TRUE(range_of({-INFINITY}).special);
  EXPECT_FALSE(range_of({0.0, INFINITY}).any());
  const detail::Trn3Range e4m3 = range_of({448.0, 1.0, 0x1p-9}), one = range_of({1.0});
  EXPECT_EQ(detail::trn3_sums(e4m3, e4m3), Trn3Sums::kExactBounded);  // 46 bits
  EXPECT_EQ(detail::trn3_sums(range_of({0x1p20, 0x1p-21}), one), Trn3Sums::kExactBounded);  // 53 bits
  EXPECT_EQ(detail::trn3_sums(range_of({0x1p20, 0x1p-22}), one), Trn3Sums::kChecked);      // 54 bits
  EXPECT_EQ(detail::trn3_sums(range_of({0x1p-80}), range_of({0x1p-70})), Trn3Sums::kExact);  // 2^-150
  EXPECT_EQ(detail::trn3_sums(range_of({0x1p-80, 0x1p-20}), range_of({0x1p-70})), Trn3Sums::kCheckedTiny);
  EXPECT_EQ(detail::trn3_sums(range_of({0x1p115}), one), Trn3Sums::kExactBounded);  // below 2^127
  EXPECT_EQ(detail::trn3_sums(range_of({0x1p116}), one), Trn3Sums::kExact);
  EXPECT_EQ(detail::trn3_sums(range_of({1.0, NAN}), one), Trn3Sums::kExact);
  EXPECT_EQ(detail::trn3_sums(range_of({0.0, NAN}), e4m3), Trn3Sums::kExact);  // no finite product
}

// Each exact form through every kernel: e4m3fn codes of the whole range with scales 2^-1 .. 2^1
// (46 + 4 bits: the bounded form, with many exact fp32 ties), and beside it e2m1 x e4m3fn; scales
// near 2^-75 (sums below 2^-149: the conversion), near 2^60 (sums past fp32's range), and NaN codes.
TEST(Trn3MxLanes8, ExactSumsInEveryForm) {
  using detail::Trn3Sums;
  std::mt19937_64 rng(26);
  struct Case {
    F fa, fb;
    int scale;
    unsigned special_odds;
    Trn3Sums sums;
  };
  const Case cases[] = {{F::kE4M3FN, F::kE4M3FN, 127, 0, Trn3Sums::kExactBounded},
                        {F::kE2M1, F::kE4M3FN, 127, 0, Trn3Sums::kExactBounded},
                        {F::kE4M3FN, F::kE4M3FN, 127 - 75, 0, Trn3Sums::kExact},
                        {F::kE4M3FN, F::kE4M3FN, 127 + 60, 0, Trn3Sums::kExact},
                        {F::kE4M3FN, F::kE4M3FN, 127, 40, Trn3Sums::kExact}};
  for (Trn3Layout layout : {Trn3Layout::k1x32, Trn3Layout::kWrapX})
    for (const Case& c : cases)
      for (const auto& s : {testing::Shape{5, 40, 1030}, testing::Shape{8, 17, 512}}) {
        Problem p = random_problem(rng, s.m, s.n, s.k, c.fa, c.fb, S::kMx32, S::kMx32, false, false, c.special_odds);
        for (auto& e : p.mx_a) e = static_cast<std::uint8_t>(c.scale - 1 + static_cast<int>(rng() % 2));
        for (auto& e : p.mx_b) e = static_cast<std::uint8_t>(c.scale);
        if (layout == Trn3Layout::kWrapX) wrapx_scales(p, rng);
        ASSERT_EQ(detail::trn3_sums(operand_range(p, true), operand_range(p, false)), c.sums)
            << "case " << (&c - cases);
        expect_same(p, layout);
      }
}

}  // namespace
}  // namespace fp8q
