// The row kernels of quantized-input conversion (checkpoint/src/reencode/rows.hpp): each ISA's
// instance against the generic one, bit for bit and count for count, and the generic one
// against the scalar statements of round-to-odd, nearest-even, exact quotients and changes; then
// the conversions on every ISA against the generic path.
#include <gtest/gtest.h>

#include <bit>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "fp8q/numerics/convert.hpp"
#include "reencode/reencode.hpp"
#include "reencode/rows.hpp"

namespace fp8q::checkpoint::reencode {
namespace {

std::vector<std::pair<Isa, const RowKernels*>> instances() {
  std::vector<std::pair<Isa, const RowKernels*>> v{{Isa::kGeneric, row_kernels_generic()}};
  if (isa_supported(Isa::kAvx2) && row_kernels_avx2()) v.emplace_back(Isa::kAvx2, row_kernels_avx2());
  if (isa_supported(Isa::kAvx512) && row_kernels_avx512()) v.emplace_back(Isa::kAvx512, row_kernels_avx512());
  return v;
}

std::uint64_t bits(double x) { return std::bit_cast<std::uint64_t>(x); }

// fp32's edges (2^-126, 2^128, the largest float, the subnormals), nearest-even ties and their
// neighbours, fp64 subnormals, both zeros, infinities and NaNs of both signs and several
// payloads, then random patterns of every exponent and random values of at most 28 bits.
std::vector<double> hostile_values() {
  std::vector<double> v;
  const double edges[] = {0x1p-126, 0x1p128, FLT_MAX, 0x1p-149, 0x1p-127, 1.0, 1.0 + 0x1p-24, 1.0 + 0x1p-23 + 0x1p-24,
                          0x1.fffffep127 + 0x1p103, 3.0, 448.0, 0x1p-1074, DBL_MIN, DBL_MAX, 0x1.000001p-126};
  for (double e : edges)
    for (double x : {e, std::nextafter(e, 0.0), std::nextafter(e, HUGE_VAL)}) {
      v.push_back(x);
      v.push_back(-x);
    }
  for (double x : {0.0, -0.0, HUGE_VAL, -HUGE_VAL, std::numeric_limits<double>::quiet_NaN(),
                   -std::numeric_limits<double>::quiet_NaN(), std::bit_cast<double>(0x7FF0000000000001ull),
                   std::bit_cast<double>(0xFFF8000000000123ull)})
    v.push_back(x);
  std::mt19937_64 g(7);
  for (int i = 0; i < 3000; ++i) v.push_back(std::bit_cast<double>(g()));
  for (int i = 0; i < 3000; ++i)
    v.push_back(std::ldexp(static_cast<double>(static_cast<std::int64_t>(g() >> 36) - (1 << 27)), static_cast<int>(g() % 300) - 170));
  return v;
}

bool in_fp32_normals(double x) {
  const double a = std::fabs(x);
  return a >= 0x1p-126 && a < 0x1p128;
}

TEST(ReencodeRows, ToOddAndNearestFollowTheScalarRoundingsInFp32sNormalRange) {
  const auto x = hostile_values();
  const RowKernels& k = *row_kernels_generic();
  std::vector<float> odd(x.size());
  std::vector<std::uint32_t> near(x.size());
  std::uint64_t rounded = 0, expected_rounded = 0;
  const std::size_t outside = k.to_odd(x.data(), x.size(), odd.data(), rounded);
  EXPECT_EQ(k.nearest(x.data(), x.size(), near.data()), outside);
  ConvertOptions to_odd, nearest;
  to_odd.rounding = Rounding::kOdd;
  nearest.overflow = Overflow::kInfOrNan;
  std::size_t expected_outside = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (x[i] == 0) {
      EXPECT_EQ(bits_of(odd[i]), std::signbit(x[i]) ? 0x80000000u : 0u);
      EXPECT_EQ(near[i], bits_of(odd[i]));
      continue;
    }
    if (!in_fp32_normals(x[i])) {
      ++expected_outside;
      continue;
    }
    const auto spec = static_cast<std::uint32_t>(encode_f64(x[i], kF32, to_odd));
    EXPECT_EQ(bits_of(odd[i]), spec) << std::hexfloat << x[i];
    EXPECT_EQ(near[i], static_cast<std::uint32_t>(encode_f64(x[i], kF32, nearest))) << std::hexfloat << x[i];
    expected_rounded += static_cast<double>(odd[i]) != x[i];
  }
  EXPECT_EQ(outside, expected_outside);
  EXPECT_EQ(rounded, expected_rounded);
  EXPECT_GT(expected_rounded, 1000u);
}

TEST(ReencodeRows, QuotientsChangesAndMaximaFollowTheirScalarStatements) {
  std::mt19937_64 g(11);
  const std::size_t n = 1000;
  std::vector<std::uint8_t> q(n);
  std::vector<double> table(256), s(n), x(n), y(n), v(n);
  for (std::size_t i = 0; i < 256; ++i) table[i] = (i & 0x7F) == 0x7F ? 0.0 : decode_f64(i, kE4M3FN);
  for (std::size_t i = 0; i < n; ++i) {
    q[i] = static_cast<std::uint8_t>(g());
    s[i] = std::ldexp(1.0 + static_cast<double>(g() % 8) / 8, static_cast<int>(g() % 20) - 10);
    x[i] = table[q[i]] * s[i];
    if (i % 7 == 3) q[i] = 0x38, s[i] = 1.375, x[i] = 1.0;  // every 7th quotient 8/11: inexact
    y[i] = i % 5 == 0 ? x[i] : i % 11 == 0 ? std::numeric_limits<double>::quiet_NaN() : -x[i];
  }
  y[0] = x[0] = std::numeric_limits<double>::quiet_NaN();  // NaN against NaN: no change
  x[1] = HUGE_VAL, y[1] = HUGE_VAL;
  const RowKernels& k = *row_kernels_generic();
  EXPECT_FALSE(k.quotients(x.data() + 2, s.data() + 2, n - 2, v.data()));
  for (std::size_t i = 2; i < n; ++i) EXPECT_EQ(v[i - 2], x[i] / s[i]);
  std::vector<double> exact(x);
  for (std::size_t i = 0; i < n; ++i) exact[i] = table[q[i]] * s[i];
  EXPECT_TRUE(k.quotients(exact.data(), s.data(), n, v.data()));

  std::uint64_t changed = 0, want_changed = 0;
  double largest = 0, want_largest = 0;
  k.changes(q.data(), table.data(), s.data(), x.data() + 2, n - 2, changed, largest);
  for (std::size_t i = 0; i < n - 2; ++i) {
    const double d = std::fabs(table[q[i]] * s[i] - x[i + 2]);
    want_changed += d != 0;
    want_largest = std::max(want_largest, d);
  }
  EXPECT_EQ(changed, want_changed);
  EXPECT_EQ(largest, want_largest);

  changed = 0, largest = 0, want_changed = 0;
  bool infinite = false;
  k.differences(x.data(), y.data(), n, changed, largest);
  for (std::size_t i = 0; i < n; ++i) {
    const bool nx = std::isnan(x[i]), ny = std::isnan(y[i]);
    if (x[i] == y[i] || (nx && ny)) continue;
    ++want_changed;
    infinite |= nx != ny;
  }
  EXPECT_TRUE(infinite);
  EXPECT_EQ(changed, want_changed);
  EXPECT_EQ(largest, HUGE_VAL);  // a NaN against a number

  std::vector<double> m(8);
  EXPECT_FALSE(k.run_maxima(x.data(), 250, 32, m.data()));  // x[0] is NaN
  EXPECT_TRUE(k.run_maxima(exact.data(), 250, 32, m.data()));
  for (std::size_t b = 0; b < 8; ++b) {
    double want = 0;
    for (std::size_t c = 32 * b; c < std::min<std::size_t>(250, 32 * b + 32); ++c) want = std::max(want, std::fabs(exact[c]));
    EXPECT_EQ(m[b], want) << b;
  }
}

// Every element format's codes decoded by their fields equal the scalar decoding (the irregular
// ones counted and left to the table), on every ISA.
TEST(ReencodeRows, EveryCodeOfEveryElementFormatDecodesByItsFields) {
  std::vector<std::uint8_t> q(256 * 3);
  std::vector<double> s(q.size());
  for (std::size_t i = 0; i < q.size(); ++i) q[i] = static_cast<std::uint8_t>(i), s[i] = i < 256 ? 1.0 : i < 512 ? 0x1p-120 : 0x1.8p100;
  int described = 0;
  for (FormatId id : {FormatId::kE4M3FN, FormatId::kE4M3, FormatId::kE5M2, FormatId::kE4M3FNUZ, FormatId::kE5M2FNUZ,
                      FormatId::kE3M4, FormatId::kE2M3, FormatId::kE3M2, FormatId::kE2M1}) {
    const Format& f = format_of(id);
    const auto rule = minifloat_rule(f);
    ASSERT_TRUE(rule) << f.name;
    ++described;
    for (const auto& [isa, k] : instances()) {
      std::vector<double> out(q.size());
      std::size_t irregular = 0;
      for (std::size_t i = 0; i < q.size(); ++i) {
        const bool nonfinite = (q[i] >> f.bits()) != 0 || !std::isfinite(decode_f64(q[i], f));
        irregular += nonfinite;
      }
      EXPECT_EQ(k->decode_rule(q.data(), *rule, s.data(), q.size(), out.data()), irregular) << f.name << " " << isa_name(isa);
      for (std::size_t i = 0; i < q.size(); ++i) {
        if ((q[i] >> f.bits()) != 0 || !std::isfinite(decode_f64(q[i], f))) continue;
        ASSERT_EQ(bits(out[i]), bits(decode_f64(q[i], f) * s[i])) << f.name << " code " << int(q[i]) << " " << isa_name(isa);
      }
    }
  }
  EXPECT_EQ(described, 9);
  EXPECT_FALSE(minifloat_rule(kE8M0));  // unsigned, no zero
}

// Each ISA's instance gives the generic instance's results, over lengths that leave every
// possible vector tail.
TEST(ReencodeRows, EveryIsaGivesTheGenericBits) {
  const auto x = hostile_values();
  std::vector<double> y(x.rbegin(), x.rend()), s(x.size());
  std::vector<std::uint8_t> q(x.size());
  std::vector<double> table(256);
  for (std::size_t i = 0; i < 256; ++i) table[i] = decode_f64(i, kE5M2);  // NaN and Inf codes included
  std::mt19937_64 g(3);
  for (std::size_t i = 0; i < x.size(); ++i) q[i] = static_cast<std::uint8_t>(g()), s[i] = std::ldexp(1.0, static_cast<int>(g() % 60) - 30);
  const RowKernels& ref = *row_kernels_generic();
  for (const auto& [isa, k] : instances()) {
    SCOPED_TRACE(std::string(isa_name(isa)));
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{31}, std::size_t{67}, x.size()}) {
      SCOPED_TRACE(n);
      std::vector<double> a(n), b(n);
      ref.decode(q.data(), table.data(), s.data(), n, a.data());
      k->decode(q.data(), table.data(), s.data(), n, b.data());
      for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(bits(a[i]), bits(b[i])) << i;

      std::vector<float> fa(n), fb(n);
      std::uint64_t ra = 0, rb = 0;
      EXPECT_EQ(ref.to_odd(x.data(), n, fa.data(), ra), k->to_odd(x.data(), n, fb.data(), rb));
      EXPECT_EQ(ra, rb);
      for (std::size_t i = 0; i < n; ++i)
        if (x[i] == 0 || in_fp32_normals(x[i])) ASSERT_EQ(bits_of(fa[i]), bits_of(fb[i])) << i;

      std::vector<std::uint32_t> ua(n), ub(n);
      EXPECT_EQ(ref.nearest(x.data(), n, ua.data()), k->nearest(x.data(), n, ub.data()));
      for (std::size_t i = 0; i < n; ++i)
        if (x[i] == 0 || in_fp32_normals(x[i])) ASSERT_EQ(ua[i], ub[i]) << i;

      EXPECT_EQ(ref.quotients(x.data(), s.data(), n, a.data()), k->quotients(x.data(), s.data(), n, b.data()));
      for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(bits(a[i]), bits(b[i])) << i;

      std::uint64_t ca = 3, cb = 3;
      double la = 0.5, lb = 0.5;
      ref.differences(x.data(), y.data(), n, ca, la);
      k->differences(x.data(), y.data(), n, cb, lb);
      EXPECT_EQ(ca, cb);
      EXPECT_EQ(bits(la), bits(lb));

      // changes() is given finite values only
      std::vector<double> fin(n);
      for (std::size_t i = 0; i < n; ++i) fin[i] = std::isfinite(x[i]) ? x[i] : 1.5;
      std::vector<double> fin_table(table);
      for (auto& t : fin_table) t = std::isfinite(t) ? t : 0.0;
      ca = cb = 0, la = lb = 0;
      ref.changes(q.data(), fin_table.data(), s.data(), fin.data(), n, ca, la);
      k->changes(q.data(), fin_table.data(), s.data(), fin.data(), n, cb, lb);
      EXPECT_EQ(ca, cb);
      EXPECT_EQ(bits(la), bits(lb));

      for (std::size_t run : {std::size_t{1}, std::size_t{32}, std::size_t{128}}) {
        std::vector<double> ma((n + run - 1) / run + 1), mb(ma.size());
        EXPECT_EQ(ref.run_maxima(x.data(), n, run, ma.data()), k->run_maxima(x.data(), n, run, mb.data()));
        for (std::size_t i = 0; i + 1 < ma.size(); ++i) ASSERT_EQ(bits(ma[i]), bits(mb[i])) << run << " " << i;
      }
    }
  }
}

// A weight of random e4m3fn codes under random block scales (and an MX weight whose groups
// are not consecutive columns): every ISA's conversions equal the generic path's.
TEST(ReencodeRows, ConversionsOnEveryIsaEqualTheGenericPath) {
  std::mt19937_64 g(5);
  DequantView grid;
  grid.element = FormatId::kE4M3FN;
  grid.rows = 256, grid.cols = 384;
  grid.grid = BlockGrid{256, 384, 128, 128};
  for (std::size_t i = 0; i < grid.rows * grid.cols; ++i) grid.codes.push_back(static_cast<std::uint8_t>(g() % 0x7F | (g() & 0x80)));
  for (std::size_t b = 0; b < 6; ++b) grid.scale_inv.push_back(std::ldexp(static_cast<float>(g() % 1000 + 1), -12));
  DequantView mx;
  mx.element = FormatId::kE4M3FN;
  mx.rows = 64, mx.cols = 128, mx.mx = true, mx.groups_per_row = 4;
  for (std::size_t c = 0; c < mx.cols; ++c) mx.group_of_col.push_back(static_cast<std::uint32_t>(c % 4));  // strided
  for (std::size_t i = 0; i < mx.rows * mx.cols; ++i) mx.codes.push_back(static_cast<std::uint8_t>(g() % 0x7F));
  for (std::size_t i = 0; i < mx.rows * 4; ++i) mx.e8m0.push_back(static_cast<std::uint8_t>(120 + g() % 10));
  DequantView trn2 = grid;  // e4m3 (max 240) under the same blocks
  trn2.element = FormatId::kE4M3;
  DequantView mx_contiguous = mx;
  for (std::size_t c = 0; c < mx.cols; ++c) mx_contiguous.group_of_col[c] = static_cast<std::uint32_t>(c / 32);
  const std::pair<const DequantView*, const DequantView*> cases[] = {{&grid, &trn2}, {&mx, &mx}, {&mx_contiguous, &mx_contiguous}};
  for (const auto& [source, structure] : cases) {
    std::uint64_t rounded = 0;
    const auto values = fp32_values(*source, 2, rounded, Isa::kGeneric);
    const auto encoded = source_scaled_encoding(*source, *structure, 2, Isa::kGeneric);
    const auto dq = dequantize(*source, DType::kBF16, 2, Isa::kGeneric);
    ASSERT_TRUE(encoded);
    for (const auto& [isa, k] : instances()) {
      SCOPED_TRACE(std::string(isa_name(isa)));
      std::uint64_t r = 0;
      const auto v = fp32_values(*source, 3, r, isa);
      EXPECT_EQ(r, rounded);
      EXPECT_EQ(0, std::memcmp(v.data(), values.data(), v.size() * 4));
      const auto e = source_scaled_encoding(*source, *structure, 3, isa);
      ASSERT_TRUE(e);
      EXPECT_EQ(e->view.codes, encoded->view.codes);
      EXPECT_EQ(e->view.scale_inv, encoded->view.scale_inv);
      EXPECT_EQ(e->view.e8m0, encoded->view.e8m0);
      EXPECT_EQ(e->changed, encoded->changed);
      EXPECT_EQ(e->max_change, encoded->max_change);
      const auto d = dequantize(*source, DType::kBF16, 1, isa);
      EXPECT_EQ(d.bytes, dq.bytes);
      EXPECT_EQ(d.report.changed, dq.report.changed);
    }
  }
}

}  // namespace
}  // namespace fp8q::checkpoint::reencode
