// numerics/cast_transpose.hpp: the fused pass equals convert() + a plain transpose + the
// amax of the input, bit for bit, on every instruction set this CPU runs, for shapes that are
// no multiple of the tiles, every rounding (stochastic keyed by the input index) and any
// thread count. The paths of cast_transpose.cpp each case reaches are named beside it: bands
// of 256 rows (the first one cut short when rows % 64 == 0 and qt is not 64-byte aligned),
// chunks of 4096 columns converted in pieces of 512, tile columns of 64 columns walked forward
// and (every other chunk) backward, 8 x 32 (AVX2) or 16 x 16 (baseline) transposed blocks with
// byte-wise edges, non-temporal stores for outputs of 4 Mi codes or more, and the per-thread
// workspace kept from call to call (the cases run one after another, on shapes that need
// more or less of it than the call before).
#include "fp8q/numerics/cast_transpose.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "format_types.hpp"
#include "fp8q/numerics/convert.hpp"
#include "on_isa.hpp"
#include "thread_counts.hpp"

namespace fp8q {
namespace {

std::vector<std::byte> random_matrix(const Format& from, std::size_t n, std::uint64_t seed, bool nan) {
  std::mt19937_64 rng(seed);
  std::vector<std::byte> out(n * from.storage_bytes());
  for (std::size_t i = 0; i < n; ++i) {
    float x = std::ldexp(static_cast<float>(rng() % 100000) / 1000.0f, static_cast<int>(rng() % 30) - 20);
    if (rng() % 2) x = -x;
    if (nan && i == n / 2) x = NAN;
    const std::uint64_t code = convert_one(bits_of(x), kF32, from, {.overflow = Overflow::kInfOrNan}).code;
    std::memcpy(out.data() + i * from.storage_bytes(), &code, from.storage_bytes());
  }
  return out;
}

// q, qt and amax of cast_transpose() against convert() + a plain transpose + a scalar amax;
// q and qt start `q_off` / `qt_off` bytes into their buffers (which moves the band split and
// the streaming stores' partial lines).
void expect_equal_to_separate(const std::vector<std::byte>& in, const Format& from, std::size_t rows,
                              std::size_t cols, const Format& to, const ConvertOptions& o, BulkOptions bulk,
                              std::size_t q_off = 0, std::size_t qt_off = 0) {
  const std::size_t n = rows * cols, ib = from.storage_bytes();
  std::vector<std::uint8_t> qbuf(n + q_off, 0xA5), qtbuf(n + qt_off, 0x5A), want(n);
  const std::span<std::uint8_t> q(qbuf.data() + q_off, n), qt(qtbuf.data() + qt_off, n);
  const float amax = cast_transpose(in, from, rows, cols, q, qt, to, o, bulk);
  convert(in, from, std::as_writable_bytes(std::span(want)), to, o, {1, bulk.isa});
  const std::string what = std::string(from.name) + " " + std::to_string(rows) + "x" + std::to_string(cols) + " " +
                           std::string(rounding_name(o.rounding)) + " threads " + std::to_string(bulk.threads) +
                           " offsets " + std::to_string(q_off) + "/" + std::to_string(qt_off);
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(q[i], want[i]) << what << ": q[" << i << "]";
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t j = 0; j < cols; ++j)
      ASSERT_EQ(qt[j * rows + i], want[i * cols + j]) << what << ": qt[" << j << ", " << i << "]";
  for (std::size_t i = 0; i < q_off; ++i) ASSERT_EQ(qbuf[i], 0xA5) << what << ": wrote before q";
  for (std::size_t i = 0; i < qt_off; ++i) ASSERT_EQ(qtbuf[i], 0x5A) << what << ": wrote before qt";
  std::uint32_t m = 0;
  bool nan = false;
  for (std::size_t i = 0; i < n; ++i) {
    std::uint64_t c = 0;
    std::memcpy(&c, in.data() + i * ib, ib);
    const float x = decode_f32(c, from);
    nan = nan || std::isnan(x);
    m = std::max(m, bits_of(x) & 0x7FFFFFFFu);
  }
  if (nan) {
    EXPECT_TRUE(std::isnan(amax)) << what;
  } else {
    EXPECT_EQ(bits_of(amax), m) << what;
  }
}

class CastTransposeOnIsa : public test::OnIsa {};

TEST_P(CastTransposeOnIsa, EqualsConvertTransposeAndAmax) {
  const std::pair<std::size_t, std::size_t> shapes[] = {{1, 1}, {16, 16}, {65, 129}, {200, 37}, {3, 300}, {130, 256}};
  for (const Format* from : {&kF32, &kBF16, &kF16})
    for (auto [rows, cols] : shapes)
      for (Rounding r : test::kAllRoundings)
        for (bool nan : {false, true})
        for (const Format* to : {&kE4M3FN, &kE5M2, &kE4M3, &kE4M3FNUZ, &kE2M3, &kE2M1}) {
          const auto in = random_matrix(*from, rows * cols, rows * 7 + cols, nan);
          ConvertOptions o;
          o.rounding = r;
          o.scale = 3.0f;
          o.seed = 17;
          o.offset = 12345;  // stochastic rounding keyed by offset + index, in both passes
          o.nan = NanPolicy::kZero;  // e2m3 / e2m1 have no NaN
          const std::size_t n = rows * cols;
          std::vector<std::uint8_t> q(n), qt(n), want(n);
          const float amax = cast_transpose(in, *from, rows, cols, q, qt, *to, o, {1, GetParam()});
          convert(in, *from, std::as_writable_bytes(std::span(want)), *to, o, {1, GetParam()});
          ASSERT_EQ(q, want) << from->name << " -> " << to->name << " " << rows << "x" << cols << " "
                             << rounding_name(r);
          for (std::size_t i = 0; i < rows; ++i)
            for (std::size_t j = 0; j < cols; ++j) ASSERT_EQ(qt[j * rows + i], want[i * cols + j]) << i << "," << j;
          std::uint32_t m = 0;
          for (std::size_t i = 0; i < n; ++i) {
            std::uint64_t c = 0;
            std::memcpy(&c, in.data() + i * from->storage_bytes(), from->storage_bytes());
            m = std::max(m, bits_of(decode_f32(c, *from)) & 0x7FFFFFFFu);
          }
          if (nan) {
            EXPECT_TRUE(std::isnan(amax));
          } else {
            EXPECT_EQ(bits_of(amax), m);
          }
        }
}

TEST_P(CastTransposeOnIsa, SameBitsForAnyThreadCount) {
  const std::size_t rows = 700, cols = 333;
  const auto in = random_matrix(kBF16, rows * cols, 5, false);
  ConvertOptions o;
  o.rounding = Rounding::kStochastic;
  std::vector<std::uint8_t> q1(rows * cols), t1(rows * cols), q2(rows * cols), t2(rows * cols);
  const float a1 = cast_transpose(in, kBF16, rows, cols, q1, t1, kE5M2, o, {1, GetParam()});
  for (int t : {2, 3, 4, 5, 8}) {
    const float a2 = cast_transpose(in, kBF16, rows, cols, q2, t2, kE5M2, o, {t, GetParam()});
    ASSERT_EQ(q1, q2);
    ASSERT_EQ(t1, t2);
    ASSERT_EQ(bits_of(a1), bits_of(a2));
  }
}

TEST(CastTranspose, NanErrorAndSizes) {
  std::vector<float> x(40, 1.0f);
  x[33] = NAN;
  std::vector<std::uint8_t> q(40), qt(40);
  try {
    cast_transpose(std::as_bytes(std::span(x)), kF32, 4, 10, q, qt, kE2M1);
    FAIL();
  } catch (const NanError& e) {
    EXPECT_EQ(e.index(), 33u);
  }
  std::vector<std::uint8_t> short_out(39);
  EXPECT_THROW(cast_transpose(std::as_bytes(std::span(x)), kF32, 4, 10, q, short_out, kE4M3FN), std::invalid_argument);
  // rows * cols beyond the address space: refused, not wrapped around to a size that matches
  const std::size_t big = std::size_t{1} << 33, wide = std::size_t{1} << 31;  // 2^64 elements
  EXPECT_THROW(cast_transpose({}, kF32, big, wide, {}, {}, kE4M3FN), std::invalid_argument);
}

// Shapes that reach every edge of the band / chunk / piece / block split: rows around the
// 256-row band and the 64-row alignment cut, columns around the 4096-column chunk, the
// 512-column piece and the 64-, 32- and 16-wide blocks, a single row or column, bands of two
// chunks (one of them 4 columns wide: walked backward) and a 1-row last band, qt at each
// offset within a 64-byte line that changes the first band.
TEST_P(CastTransposeOnIsa, BandChunkAndAlignmentEdges) {
  struct Shape {
    std::size_t rows, cols;
  };
  const Shape shapes[] = {{257, 65},  {320, 70},   {64, 4100}, {513, 33}, {256, 31},  {2, 8193},  {129, 4096},
                          {1, 4100},  {1100, 1},   {7, 513},   {300, 1023}, {257, 4100}, {1, 511}, {600, 2}};
  for (const Format* from : {&kBF16, &kF32, &kF16})
    for (const Shape& s : shapes)
      for (std::size_t qt_off : {0, 1, 16, 48}) {
        const auto in = random_matrix(*from, s.rows * s.cols, s.rows * 31 + s.cols, true);
        ConvertOptions o;
        o.scale = 56.0f;
        o.rounding = qt_off == 1 ? Rounding::kStochastic : Rounding::kNearestEven;
        o.seed = 3;
        expect_equal_to_separate(in, *from, s.rows, s.cols, kE4M3FN, o, {1, GetParam()}, qt_off % 7, qt_off);
        if (HasFatalFailure()) return;
      }
}

// Outputs of 4 Mi codes or more take the non-temporal stores: whole lines streamed, partial
// lines at either end of each q row and qt segment stored normally (offsets 0, 1, 16, 63).
TEST_P(CastTransposeOnIsa, LargeOutputsStreamed) {
  const std::pair<std::size_t, std::size_t> shapes[] = {{2112, 2000}, {1024, 4100}};
  for (auto [rows, cols] : shapes) {
    const auto in = random_matrix(kBF16, rows * cols, rows + cols, false);
    ConvertOptions o;
    o.scale = 56.0f;
    for (std::size_t off : {0, 1, 16, 63}) {
      expect_equal_to_separate(in, kBF16, rows, cols, kE4M3FN, o, {1, GetParam()}, off, (off * 5) % 64);
      if (HasFatalFailure()) return;
    }
    expect_equal_to_separate(in, kBF16, rows, cols, kE5M2, o, {3, GetParam()}, 16, 16);
    if (HasFatalFailure()) return;
  }
}

// NaN and +/-Inf anywhere: codes as convert() gives them, amax Inf without a NaN and NaN with
// one, on every thread count from 1 to 8 (1600 rows: 7 bands, the last one short).
TEST_P(CastTransposeOnIsa, NanAndInfForEveryThreadCount) {
  const std::size_t rows = 1600, cols = 130;
  for (const Format* from : {&kBF16, &kF32, &kF16})
    for (bool with_nan : {false, true}) {
      auto in = random_matrix(*from, rows * cols, 11, false);
      const auto put = [&](std::size_t i, float x) {
        const std::uint64_t code = convert_one(bits_of(x), kF32, *from, {.overflow = Overflow::kInfOrNan}).code;
        std::memcpy(in.data() + i * from->storage_bytes(), &code, from->storage_bytes());
      };
      put(5, INFINITY);
      put(300 * cols + 100, -INFINITY);
      if (with_nan) put(1599 * cols + 7, -NAN);
      for (int threads = 1; threads <= 8; ++threads) {
        ConvertOptions o;
        o.scale = 2.0f;
        o.overflow = Overflow::kSaturate;
        expect_equal_to_separate(in, *from, rows, cols, kE4M3FN, o, {threads, GetParam()}, 0, 16);
        if (HasFatalFailure()) return;
      }
    }
}

// With the NaN policy `error`, the element named is the first NaN in index order, even when a
// later one sits in a chunk that is converted earlier (row 6, column 0 is in the first 4096
// columns; row 5, column 4097 in the second chunk of the same band), for any thread count.
TEST_P(CastTransposeOnIsa, NanErrorNamesFirstInIndexOrder) {
  const std::size_t rows = 600, cols = 4100;
  std::vector<float> x(rows * cols, 1.0f);
  x[6 * cols + 0] = NAN;
  x[5 * cols + 4097] = NAN;
  x[590 * cols + 3] = NAN;  // a later band, perhaps another thread
  std::vector<std::uint8_t> q(x.size()), qt(x.size());
  for (int threads : test::kThreadCounts) {
    try {
      cast_transpose(std::as_bytes(std::span(x)), kF32, rows, cols, q, qt, kE2M1, {}, {threads, GetParam()});
      FAIL() << "no NanError with " << threads << " threads";
    } catch (const NanError& e) {
      EXPECT_EQ(e.index(), 5 * cols + 4097) << threads << " threads";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(EveryIsa, CastTransposeOnIsa, test::every_isa(), test::isa_test_name);

}  // namespace
}  // namespace fp8q
