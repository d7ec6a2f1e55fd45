// The trainium3_mx:1x32 column kernel text (kernels/src/isa/trn3mx_kernel.hpp) equals the scalar
// loop and gemm_reference bit for bit on any machine: instantiated here over the lane-by-lane
// emulation of its AVX-512 operations (OpsTrn3Lanes8, 8 fp64 lanes, 32 columns a pass) and run
// through the driver (trainium3_mx_rows_with) on the inputs of GemmFastModels.Trainium3Mx*:
// K across instructions of 512 and partial partitions, MX scales over E8M0's whole range (NaN
// included), specials, C and bias, partitions that nearly cancel the running sum. Every other
// column kernel this binary and CPU have (AVX2, the real AVX-512 one) runs on the same inputs.
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
using S = OperandScaling;

struct Named {
  detail::Trn3MxColumns columns;
  const char* name;
};

std::vector<Named> column_kernels() {
  std::vector<Named> v = {{&Trn3MxKernelT<OpsTrn3Lanes8, 4>::columns, "lanes8 x4"},
                          {&Trn3MxKernelT<OpsTrn3Lanes8, 1>::columns, "lanes8 x1"},
                          {nullptr, "scalar"}};
  if (auto k = detail::trn3mx_columns_avx2()) v.push_back({k, "avx2"});
  if (auto k = detail::trn3mx_columns_avx512()) v.push_back({k, "avx512"});
  return v;
}

std::uint32_t bits_of(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}

// Each column kernel's rows == gemm_reference, over all rows at once and split at an odd row.
void expect_same(const Problem& p) {
  const GemmArgs g = p.args();
  const GemmOptions o{.model = AccumulationModel::trainium3_mx(Trn3Layout::k1x32)};
  const std::string name = std::to_string(p.m) + "x" + std::to_string(p.n) + "x" + std::to_string(p.k) + " " +
                           std::string(format_of(p.fa).name) + "*" + std::string(format_of(p.fb).name);
  ASSERT_NE(detail::trainium3_mx_path(g, o).rows, nullptr) << name;
  std::vector<float> ref(p.m * p.n), out(p.m * p.n);
  gemm_reference(g, o, std::span<float>(ref));
  const std::size_t split = p.m > 1 ? (p.m / 2) | 1 : p.m;
  for (const Named& k : column_kernels())
    for (std::size_t m1 : {p.m, split}) {
      std::fill(out.begin(), out.end(), -1.0f);
      detail::trainium3_mx_rows_with(k.columns, g, 0, m1, out.data());
      if (m1 < p.m) detail::trainium3_mx_rows_with(k.columns, g, m1, p.m, out.data() + m1 * p.n);
      for (std::size_t i = 0; i < ref.size(); ++i)
        ASSERT_EQ(bits_of(ref[i]), bits_of(out[i])) << name << " kernel " << k.name << " at [" << i / p.n << ", "
                                                     << i % p.n << "]: reference " << ref[i] << ", got " << out[i];
    }
}

TEST(Trn3MxLanes8, EqualsTheReference) {
  std::mt19937_64 rng(21);
  const std::tuple<F, F, S, S> variants[] = {
      {F::kE4M3FN, F::kE4M3FN, S::kMx32, S::kMx32}, {F::kE5M2, F::kE4M3FN, S::kMx32, S::kMx32},
      {F::kE4M3FN, F::kE5M2, S::kMx32, S::kNone},   {F::kE2M1, F::kE2M3, S::kMx32, S::kMx32},
      {F::kE3M2, F::kE4M3FN, S::kNone, S::kMx32},
  };
  const testing::Shape shapes[] = {{1, 1, 1},    {7, 33, 130}, {3, 70, 33}, {13, 300, 40},
                                   {5, 17, 260}, {5, 9, 1030}, {3, 40, 513}, {3, 5, 0}};
  for (const auto& s : shapes)
    for (const auto& [fa, fb, sa, sb] : variants) {
      Problem p = random_problem(rng, s.m, s.n, s.k, fa, fb, sa, sb, s.k % 2 == 0, s.m % 2 == 1, 60);
      testing::wide_mx_scales(p, rng);
      expect_same(p);
    }
}

// t + s_p exact only with the two-sum: one operand's MX scales alternate 2^0 and 2^-40, so
// small partitions meet a large running sum of either sign.
TEST(Trn3MxLanes8, NearlyCancellingPartitions) {
  std::mt19937_64 rng(22);
  for (int rep = 0; rep < 4; ++rep) {
    Problem p = random_problem(rng, 4, 40, 1024, F::kE4M3FN, F::kE4M3FN, S::kMx32, S::kMx32, false, false, 0);
    for (std::size_t i = 0; i < p.mx_a.size(); ++i) p.mx_a[i] = static_cast<std::uint8_t>(i % 2 == 0 ? 127 : 87);
    expect_same(p);
  }
}

}  // namespace
}  // namespace fp8q
