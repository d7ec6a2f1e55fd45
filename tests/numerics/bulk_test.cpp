// numerics/bulk.hpp: every fast path equals the scalar reference (convert_one) bit for bit,
// on every instruction set this CPU runs (the others are skipped, saying so); the bits do
// not depend on the thread count or the split of the array (the caller's FP environment:
// fp_env_test.cpp).
#include "fp8q/numerics/bulk.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "format_types.hpp"
#include "fp8q/numerics/block_scaled.hpp"
#include "fp8q/numerics/convert.hpp"
#include "on_isa.hpp"
#include "oracle.hpp"
#include "thread_counts.hpp"

namespace fp8q {
namespace {

// fp32 inputs that exercise every branch: each exponent, both signs, mantissas at, just
// below and just above the rounding point of every target width, plus random bit patterns.
std::vector<std::uint32_t> structured_f32(std::size_t random_count) {
  std::vector<std::uint32_t> v;
  std::vector<std::uint32_t> mantissas = {0, 1, 2, 3, 0x7FFFFF, 0x7FFFFE, 0x400000, 0x400001, 0x3FFFFF, 0x555555, 0x2AAAAA};
  for (int drop = 1; drop <= 23; ++drop) {  // half of 2^drop, +-1, with odd and even kept bits
    const std::uint32_t half = 1u << (drop - 1);
    for (std::uint32_t kept : {0u, 1u}) {
      const std::uint32_t base = drop < 23 ? kept << drop : 0;
      for (std::uint32_t d : {half - 1, half, half + 1}) mantissas.push_back((base | d) & 0x7FFFFF);
    }
  }
  for (std::uint32_t s = 0; s < 2; ++s)
    for (std::uint32_t e = 0; e < 256; ++e)
      for (std::uint32_t m : mantissas) v.push_back(s << 31 | e << 23 | m);
  std::mt19937_64 rng(20261129);
  for (std::size_t i = 0; i < random_count; ++i) v.push_back(static_cast<std::uint32_t>(rng()));
  v.push_back(0x7FC00001);  // a NaN with payload
  v.push_back(0xFF800001);  // a negative signalling NaN
  return v;
}

std::vector<std::uint16_t> all_16bit_codes() {
  std::vector<std::uint16_t> v(65536 + 13);  // + a tail that is no multiple of any vector width
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::uint16_t>(i * 40503u);
  return v;
}

// Expected output of convert() computed with the scalar reference.
std::vector<std::byte> reference(std::span<const std::byte> in, const Format& from, const Format& to,
                                 const ConvertOptions& o) {
  const std::size_t ib = from.storage_bytes(), ob = to.storage_bytes(), n = in.size() / ib;
  std::vector<std::byte> out(n * ob);
  for (std::size_t i = 0; i < n; ++i) {
    std::uint64_t c = 0;
    std::memcpy(&c, in.data() + i * ib, ib);
    const std::uint64_t r = convert_one(c, from, to, o, i).code;
    std::memcpy(out.data() + i * ob, &r, ob);
  }
  return out;
}

std::size_t first_difference(const std::vector<std::byte>& a, const std::vector<std::byte>& b) {
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) return i;
  return a.size();
}

class BulkOnIsa : public test::OnIsa {
 protected:
  // Every narrow target, rounding, overflow and scale: convert() == reference.
  void check_all(std::span<const std::byte> in, const Format& from) {
    constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
    constexpr float kInf = std::numeric_limits<float>::infinity();
    // NaN scales: the product's NaN sign is x's when x is NaN (whatever the operand order
    // of the SIMD multiply); 0 and Inf make 0 * Inf, the negative default NaN.
    const std::optional<float> scales[] = {std::nullopt, 3.5f, std::ldexp(1.0f, -20), 1e30f, 1e-40f, -0.75f,
                                           kNaN, -kNaN, kInf, 0.0f};
    for (FormatId id : kNarrowFormats) {
      const Format& to = format_of(id);
      for (Rounding r : test::kAllRoundings)
        for (Overflow ov : test::kAllOverflows)
          for (const auto& scale : scales)
          for (ScaleOp op : {ScaleOp::kMultiply, ScaleOp::kDivide}) {
            if (op == ScaleOp::kDivide && !scale) continue;
            ConvertOptions o;
            o.scale_op = op;
            o.rounding = r;
            o.overflow = ov;
            o.nan = NanPolicy::kZero;
            o.scale = scale;
            o.seed = 42;
            o.offset = 7;
            const std::size_t n = in.size() / from.storage_bytes();
            std::vector<std::byte> got(n * to.storage_bytes());
            convert(in, from, got, to, o, {1, GetParam()});
            const auto want = reference(in, from, to, o);
            const std::size_t at = first_difference(got, want);
            ASSERT_EQ(at, got.size()) << from.name << " -> " << to.name << " " << rounding_name(r) << "/"
                                      << overflow_name(ov) << (op == ScaleOp::kDivide ? " divisor " : " scale ")
                                      << scale.value_or(1.0f) << ": element "
                                      << at / to.storage_bytes() << " differs";
          }
    }
  }
};

TEST_P(BulkOnIsa, Fp32StructuredAndRandomEqualsScalar) {
  const auto v = structured_f32(50000);
  check_all(std::as_bytes(std::span(v)), kF32);
}

TEST_P(BulkOnIsa, AllBf16InputsEqualScalar) {
  const auto v = all_16bit_codes();
  check_all(std::as_bytes(std::span(v)), kBF16);
}

// The patterns of v with the target's normals times 2^d (and zeros) first, in order: the
// 16-bit kernel runs its normal form on chunks free of lanes below the normals and of NaN, and
// the general form on the others and on the chunks after them, so in natural order the
// normal form would meet few normal lanes.
std::vector<std::uint16_t> normals_first(std::span<const std::uint16_t> v, const Format& to, int d) {
  const int lowest = (127 + to.emin() - d) * 128;  // the smallest |x| pattern of a normal
  std::vector<std::uint16_t> out(v.begin(), v.end());
  std::stable_partition(out.begin(), out.end(), [&](std::uint16_t p) {
    const int a = p & 0x7FFF;
    return a == 0 || (a >= lowest && a <= 0x7F80);
  });
  return out;
}

// bf16 under nearest-even with a power-of-two scale (1 included) takes the 16-bit kernel
// (narrow_bf16_kernel.hpp) for 0 <= d <= 127 + emin - m - 3, the fp32 kernel otherwise: every
// target's edge offsets on both sides, both operations, all 2^16 inputs, in natural order and
// with the normals first.
TEST_P(BulkOnIsa, AllBf16InputsWithPowerOfTwoScalesEqualScalar) {
  if (GetParam() == Isa::kGeneric) GTEST_SKIP() << "the generic path is the scalar reference itself";
  const auto v = all_16bit_codes();
  std::vector<float> scales = {-1.0f, -8.0f};  // negative: the fp32 kernel
  for (int e : {0, 1, 20, 106, 107, 108, 109, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122, 123, 124, 127, -1})
    scales.push_back(std::ldexp(1.0f, e));
  for (FormatId id : kNarrowFormats) {
    const Format& to = format_of(id);
    for (Overflow ov : test::kAllOverflows)
      for (float scale : scales)
        for (ScaleOp op : {ScaleOp::kMultiply, ScaleOp::kDivide}) {
          const int d = std::ilogb(scale) * (op == ScaleOp::kDivide ? -1 : 1);
          for (const bool natural : {true, false}) {
            const std::vector<std::uint16_t> order = natural ? v : normals_first(v, to, d);
            const auto in = std::as_bytes(std::span(order));
            ConvertOptions o;
            o.scale_op = op;
            o.overflow = ov;
            o.nan = NanPolicy::kZero;
            o.scale = scale;
            std::vector<std::byte> got(order.size());
            convert(in, kBF16, got, to, o, {1, GetParam()});
            const auto want = reference(in, kBF16, to, o);
            const std::size_t at = first_difference(got, want);
            ASSERT_EQ(at, got.size()) << "bf16 -> " << to.name << " " << overflow_name(ov)
                                      << (op == ScaleOp::kDivide ? " divisor " : " scale ") << *o.scale
                                      << (natural ? "" : ", normals first") << ": element " << at << " (0x"
                                      << std::hex << order[at] << ") differs";
          }
        }
  }
}

// A descriptor with more fraction bits than any named format (m = 6: the 16-bit bf16 kernel
// takes m <= 4 only) converts like the scalar reference on every path, all 2^16 bf16 inputs,
// in the modes and scales that reach each kernel, and through MX.
TEST_P(BulkOnIsa, CustomFormatWithSixFractionBitsEqualsScalar) {
  static constexpr Format kE1M6{"e1m6", 1, 6, 1, true, Specials::kFinite};
  const auto v = all_16bit_codes();
  const auto in = std::as_bytes(std::span(v));
  for (Rounding r : {Rounding::kNearestEven, Rounding::kTowardZero})
    for (float scale : {1.0f, 4.0f, 1.7f}) {
      const ConvertOptions o{.rounding = r, .nan = NanPolicy::kZero, .scale = scale};
      std::vector<std::byte> got(v.size());
      convert(in, kBF16, got, kE1M6, o, {1, GetParam()});
      const auto want = reference(in, kBF16, kE1M6, o);
      const std::size_t at = first_difference(got, want);
      ASSERT_EQ(at, got.size()) << "bf16 -> e1m6 " << rounding_name(r) << " scale " << scale << ": element " << at
                                << " (0x" << std::hex << v[at] << ") differs";
    }
  Pow2ScaleTable table;  // code = E - 1 (emax of e1m6 is 1), clamped to 0 .. 254
  for (int e = 1; e < 255; ++e) {
    table.base[e] = static_cast<std::uint8_t>(std::clamp(e - 1, 0, 254));
    table.threshold[e] = 1u << 23;
  }
  std::vector<std::uint8_t> got(65536), scales(65536 / 32);  // the first 2^16 codes: every pattern once
  convert_mx(in.first(2 * 65536), kBF16, 256, 256, 32, got, scales, kE1M6, table, {}, {1, GetParam()});
  for (std::size_t i = 0; i < got.size(); ++i) {
    std::uint32_t amax = 0;
    for (std::size_t j = i / 32 * 32; j < i / 32 * 32 + 32; ++j) amax = std::max(amax, (std::uint32_t{v[j]} << 16) & 0x7FFFFFFFu);
    const std::uint8_t code = table.code(amax);
    ASSERT_EQ(scales[i / 32], code) << "block " << i / 32;
    const std::uint64_t want =
        code == 0xFF ? 0 : convert_one(v[i], kBF16, kE1M6, {.scale = std::ldexp(1.0f, 127 - code)}, i).code;
    ASSERT_EQ(got[i], want) << "MX bf16 0x" << std::hex << v[i] << " -> e1m6";
  }
}

// Outputs of 1 MiB and more, split between threads: misaligned input and output starts
// (unaligned vector stores), a length that leaves a scalar tail, one and two threads, a
// power-of-two scale (the 16-bit bf16 kernel) and a target without -0.
TEST_P(BulkOnIsa, LargeBf16OutputsEqualScalar) {
  std::vector<std::uint16_t> v((std::size_t{3} << 19) + 77);
  std::mt19937 rng(5);
  for (auto& c : v) c = static_cast<std::uint16_t>(rng());
  for (std::size_t shift : {0, 1, 31}) {
    const auto in = std::as_bytes(std::span(v)).subspan(2 * shift);
    for (const Format* to : {&kE4M3FN, &kE5M2FNUZ})
      for (int threads : test::kThreadCounts) {
        ConvertOptions o;
        o.scale = 4.0f;
        o.nan = NanPolicy::kZero;
        std::vector<std::byte> buffer(in.size() / 2 + 64);
        const auto got = std::span(buffer).subspan(shift + 3, in.size() / 2);
        convert(in, kBF16, got, *to, o, {threads, GetParam()});
        const auto want = reference(in, kBF16, *to, o);
        ASSERT_TRUE(std::equal(got.begin(), got.end(), want.begin()))
            << to->name << ", start shifted by " << shift << ", " << threads << " thread(s)";
      }
  }
}

TEST_P(BulkOnIsa, AllFp16InputsEqualScalar) {
  const auto v = all_16bit_codes();
  check_all(std::as_bytes(std::span(v)), kF16);
}

TEST_P(BulkOnIsa, DecodingTablePathEqualsScalar) {  // narrow -> wide, every code, with scales
  std::vector<std::uint8_t> codes(1000);
  for (FormatId id : kNarrowFormats) {
    const Format& from = format_of(id);
    for (std::size_t i = 0; i < codes.size(); ++i) codes[i] = static_cast<std::uint8_t>(i % (1u << from.bits()));
    for (const Format* to : {&kF32, &kF64, &kBF16, &kF16, &kE4M3FN})
      for (std::optional<float> scale : {std::optional<float>{}, std::optional<float>{1e-3f}})
        for (Rounding r : test::kAllRoundings) {
          ConvertOptions o;
          o.rounding = r;
          o.scale = scale;
          o.nan = NanPolicy::kZero;
          std::vector<std::byte> got(codes.size() * to->storage_bytes());
          convert(std::as_bytes(std::span(codes)), from, got, *to, o, {2, GetParam()});
          EXPECT_EQ(got, reference(std::as_bytes(std::span(codes)), from, *to, o)) << from.name << " -> " << to->name;
        }
  }
}

// The exact value of every code of `from` as a code of `to` (numerics.md section 2, "Widening
// conversions are exact"), from the format table's formula (the test Oracle), not convert_one:
// Inf stays Inf, NaN is the canonical NaN with the sign where `from` has signed NaNs.
std::vector<std::byte> widened_codes(const Format& from, const Format& to) {
  const test::Oracle src(from), dst(to.bits() <= 16 ? to : kF16);  // dst: only for 8- and 16-bit targets
  const std::size_t n = std::size_t{1} << from.bits(), ob = to.storage_bytes();
  std::vector<std::byte> out(n * ob);
  for (std::uint64_t c = 0; c < n; ++c) {
    const std::uint64_t mag = c & from.magnitude_mask();
    const bool negative = (c & from.sign_bit()) != 0;
    const std::uint64_t sign = negative ? to.sign_bit() : 0;
    const bool uz_nan = from.specials == Specials::kFiniteNanUz && c == from.sign_bit();
    std::uint64_t want;
    if (uz_nan || (src.is_special(mag) && !(from.has_inf() && mag == from.inf_code()))) {
      want = to.canonical_nan() | (from.has_signed_nan() ? sign : 0);
    } else if (src.is_special(mag)) {
      want = to.inf_code() | sign;
    } else {
      const double x = (negative ? -1 : 1) * src.value_of(mag);
      // exact in each target: the hardware casts do not round here
      want = to == kF64 ? bits_of(x) : to == kF32 ? bits_of(static_cast<float>(x))
                                                  : dst(x, Rounding::kNearestEven, Overflow::kInfOrNan);
    }
    std::memcpy(out.data() + c * ob, &want, ob);
  }
  return out;
}

// Every code of every narrow format into each wide format that holds it (and e4m3fn, fp6 and
// fp4 into e4m3fn), every rounding and both overflow policies, every test thread count: the exact value, Inf
// kept. Bulk takes the 256-entry table (the sr table is skipped: element-wise scalar path).
// The codes come in order, then each code alone in a run of 64: a vector step holding a
// special code (NaN, Inf) decodes from the table, so only the runs take every other code
// through the arithmetic.
TEST_P(BulkOnIsa, WideningDecodeIsExactUnderEveryPolicy) {
  constexpr std::size_t kRun = 64;
  int checked = 0;
  for (FormatId id : kNarrowFormats) {
    const Format& from = format_of(id);
    const std::size_t n = std::size_t{1} << from.bits();
    std::vector<std::uint8_t> codes(n * (1 + kRun));
    for (std::size_t c = 0; c < n; ++c) {
      codes[c] = static_cast<std::uint8_t>(c);
      std::fill_n(codes.begin() + static_cast<std::ptrdiff_t>(n + c * kRun), kRun, static_cast<std::uint8_t>(c));
    }
    for (const Format* to : {&kF32, &kF64, &kBF16, &kF16, &kE4M3FN}) {
      if (!is_widening(from, *to)) continue;
      const auto one = widened_codes(from, *to);
      const std::size_t ob = to->storage_bytes();
      std::vector<std::byte> want(one);
      for (std::size_t c = 0; c < n; ++c)
        for (std::size_t k = 0; k < kRun; ++k) want.insert(want.end(), one.begin() + c * ob, one.begin() + (c + 1) * ob);
      for (Rounding r : test::kAllRoundings)
        for (Overflow ov : test::kAllOverflows)
          for (int threads : test::kThreadCounts) {
            ConvertOptions o;
            o.rounding = r;
            o.overflow = ov;
            o.seed = 3;
            std::vector<std::byte> got(want.size());
            convert(std::as_bytes(std::span(codes)), from, got, *to, o, {threads, GetParam()});
            const std::size_t at = first_difference(got, want);
            ASSERT_EQ(at, got.size()) << from.name << " -> " << to->name << " " << rounding_name(r) << "/"
                                      << overflow_name(ov) << ": code " << at / to->storage_bytes() << " differs";
            ++checked;
          }
    }
  }
  // all 10 into f32, f64 and bf16 (e8m0 too), 9 into f16 (not e8m0), e4m3fn and fp6 / fp4 into e4m3fn
  EXPECT_EQ(checked, (10 + 10 + 10 + 9 + 4) * 7 * 2 * static_cast<int>(std::size(test::kThreadCounts)));
}

// A scaled value is an fp32 value: into fp32 / fp64 it is kept (Inf included, also the Inf of
// an overflowing product); into bf16 / fp16 (which do not hold fp32) Inf saturates.
TEST_P(BulkOnIsa, ScaledDecodeKeepsInfOnlyWhereTheTargetHoldsFp32) {
  const std::vector<std::uint8_t> codes = {0x7C, 0xFC, 0x7B};  // e5m2 +Inf, -Inf, 57344
  ConvertOptions o;
  o.scale = 1e35f;  // 57344 * 1e35 overflows fp32
  std::vector<float> f32(3);
  convert(codes, kE5M2, f32, o, {1, GetParam()});
  for (float v : f32) EXPECT_TRUE(std::isinf(v)) << v;
  std::vector<std::uint16_t> f16(3);
  convert(std::as_bytes(std::span(codes)), kE5M2, std::as_writable_bytes(std::span(f16)), kF16, o, {1, GetParam()});
  EXPECT_EQ(f16, (std::vector<std::uint16_t>{0x7BFF, 0xFBFF, 0x7BFF}));
}

TEST_P(BulkOnIsa, SameBitsForAnyThreadCountAndSplit) {
  std::vector<float> x(300001);
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 100.0f);
  for (float& v : x) v = normal(rng);
  for (Rounding r : {Rounding::kNearestEven, Rounding::kStochastic}) {
    ConvertOptions o;
    o.rounding = r;
    o.seed = 99;
    std::vector<std::uint8_t> one(x.size());
    convert(x, one, kE5M2, o, {1, GetParam()});
    for (int t : {2, 3, 7}) {
      std::vector<std::uint8_t> many(x.size());
      convert(x, many, kE5M2, o, {t, GetParam()});
      EXPECT_EQ(one, many) << t << " threads, " << rounding_name(r);
    }
    // Two calls over halves, the second with offset k, equal one call over the whole.
    const std::size_t k = 123457;
    std::vector<std::uint8_t> parts(x.size());
    convert(std::span(x).first(k), std::span(parts).first(k), kE5M2, o, {1, GetParam()});
    ConvertOptions o2 = o;
    o2.offset = k;
    convert(std::span(x).subspan(k), std::span(parts).subspan(k), kE5M2, o2, {2, GetParam()});
    EXPECT_EQ(one, parts) << rounding_name(r);
  }
}


TEST_P(BulkOnIsa, NanIntoAFormatWithoutNanNamesTheFirstIndex) {
  std::vector<float> x(100000, 1.0f);
  x[77777] = std::numeric_limits<float>::quiet_NaN();
  x[88888] = std::numeric_limits<float>::quiet_NaN();
  std::vector<std::uint8_t> out(x.size());
  try {
    convert(x, out, kE2M1, {}, {2, GetParam()});
    FAIL() << "expected NanError";
  } catch (const NanError& e) {
    EXPECT_EQ(e.index(), 77777u);
    EXPECT_NE(std::string(e.what()).find("element 77777"), std::string::npos) << e.what();
  }
  // NaNs in both threads' chunks: the error names the first by element order.
  x[20000] = std::numeric_limits<float>::quiet_NaN();
  for (int t : {2, 3}) {
    try {
      convert(x, out, kE2M1, {}, {t, GetParam()});
      FAIL() << "expected NanError";
    } catch (const NanError& e) {
      EXPECT_EQ(e.index(), 20000u) << t << " threads";
    }
  }
  // Inf * 0 becomes NaN after scaling: caught as well.
  x.assign(64, std::numeric_limits<float>::infinity());
  out.resize(64);
  ConvertOptions o;
  o.scale = 0.0f;
  EXPECT_THROW(convert(x, out, kE3M2, o, {1, GetParam()}), NanError);
  o.nan = NanPolicy::kZero;
  EXPECT_NO_THROW(convert(x, out, kE3M2, o, {1, GetParam()}));
}

TEST_P(BulkOnIsa, NanErrorInEveryModeAndSource) {  // the SIMD kernels' NaN flag, not the tail
  for (const Format* from : {&kF32, &kBF16, &kF16}) {
    std::vector<std::uint64_t> codes(1000, from == &kF32 ? 0x3F800000u : from == &kBF16 ? 0x3F80u : 0x3C00u);
    codes[40] = from->canonical_nan();
    std::vector<std::byte> in(codes.size() * from->storage_bytes()), out(codes.size());
    for (std::size_t i = 0; i < codes.size(); ++i)
      std::memcpy(in.data() + i * from->storage_bytes(), &codes[i], from->storage_bytes());
    for (Rounding r : test::kAllRoundings)
      for (const Format* to : {&kE2M3, &kE3M2, &kE2M1}) {
        ConvertOptions o;
        o.rounding = r;
        try {
          convert(in, *from, out, *to, o, {1, GetParam()});
          ADD_FAILURE() << from->name << " -> " << to->name << " " << rounding_name(r) << ": no NanError";
        } catch (const NanError& e) {
          EXPECT_EQ(e.index(), 40u) << from->name << " -> " << to->name << " " << rounding_name(r);
        }
      }
  }
}

INSTANTIATE_TEST_SUITE_P(EveryIsa, BulkOnIsa, test::every_isa(), test::isa_test_name);

// fp32 patterns v converted to a 16-bit format in bulk == convert_one, under both overflow
// policies, over 1, 2, 3 and 8 threads, on every ISA this CPU has.
void expect_f32_patterns_equal_scalar(const std::vector<std::uint32_t>& v, const Format& to) {
  const auto in = std::as_bytes(std::span(v));
  for (Overflow overflow : {Overflow::kSaturate, Overflow::kInfOrNan}) {
    ConvertOptions o;
    o.overflow = overflow;
    std::vector<std::uint16_t> want(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) want[i] = static_cast<std::uint16_t>(convert_one(v[i], kF32, to, o, i).code);
    for (Isa isa : kAllIsas)
      for (int threads : test::kThreadCounts) {
        if (!isa_supported(isa)) continue;
        std::vector<std::uint16_t> got(v.size());
        convert(in, kF32, std::as_writable_bytes(std::span(got)), to, o, {threads, isa});
        for (std::size_t i = 0; i < v.size(); ++i)
          ASSERT_EQ(got[i], want[i]) << "fp32 0x" << std::hex << v[i] << " to " << to.name << " under "
                                     << overflow_name(overflow) << ", " << std::dec << threads << " thread(s), "
                                     << isa_name(isa);
      }
  }
}

// Every stride-th of v, shuffled: NaNs, overflows and finite values side by side in one vector.
std::vector<std::uint32_t> shuffled_sample(const std::vector<std::uint32_t>& v, std::size_t stride, std::mt19937& rng) {
  std::vector<std::uint32_t> mixed;
  for (std::size_t i = 0; i < v.size(); i += stride) mixed.push_back(v[i]);
  std::shuffle(mixed.begin(), mixed.end(), rng);
  return mixed;
}

// fp32 -> bf16 nearest-even (the pattern path, numerics/src/narrow_f32_16.hpp) == convert_one:
// every 16-bit tail (the discarded half) under every kept last bit, sign and exponent
// (2^26 patterns), under both overflow policies, over 1, 2, 3 and 8 threads. The kept bits
// 17-22 are random, except at the two top exponents: all ones under a kept 1 (the largest
// finite values, and those that round to Inf), zeros under a kept 0 (Inf and the NaN payloads);
// then a shuffled sample, so that special and ordinary values share vectors.
TEST(BulkF32ToBf16, EveryDiscardedHalfUnderEveryExponentEqualsScalar) {
  std::vector<std::uint32_t> v;
  v.reserve(std::size_t{1} << 26);
  std::mt19937 rng(2026);
  for (std::uint32_t top = 0; top < 1024; ++top) {  // sign, exponent, kept last bit
    const bool edge = (top >> 1 & 0xFF) >= 254;
    const std::uint32_t middle = edge ? ((top & 1) != 0 ? 0x3Fu : 0u) : rng() & 0x3Fu;
    const std::uint32_t kept = (top & 1) << 16 | middle << 17;
    for (std::uint32_t low = 0; low < 65536; ++low) v.push_back((top >> 1) << 23 | kept | low);
  }
  expect_f32_patterns_equal_scalar(v, kBF16);
  expect_f32_patterns_equal_scalar(shuffled_sample(v, 64, rng), kBF16);
}

// fp32 -> fp16 nearest-even (the pattern path, numerics/src/narrow_f32_16.hpp) == convert_one:
// every sign and exponent, every pattern of the 13 bits a normal fp16 drops under both values of
// the kept last bit (2^24 patterns), the other kept bits random, except at the top exponents:
// all ones under a kept 1 (65504 and what rounds to Inf; NaN payloads), zeros under a kept 0
// (Inf). Exponents 102-112 put every rounding of fp16's subnormals under test, and the random
// bits above them their ties; then a shuffled sample, so that special and ordinary values share
// vectors.
TEST(BulkF32ToF16, EveryDiscardedPatternUnderEveryExponentEqualsScalar) {
  std::vector<std::uint32_t> v;
  v.reserve(std::size_t{1} << 24);
  std::mt19937 rng(2027);
  for (std::uint32_t top = 0; top < 1024; ++top) {  // sign, exponent, kept last bit
    const std::uint32_t e = top >> 1 & 0xFF;
    const bool edge = e >= 142;  // from 2^15 up: 65504's binade, the overflow, Inf and NaN
    const std::uint32_t middle = edge ? ((top & 1) != 0 ? 0x1FFu : 0u) : rng() & 0x1FFu;
    const std::uint32_t kept = (top & 1) << 13 | middle << 14;
    for (std::uint32_t low = 0; low < 8192; ++low) v.push_back((top >> 9) << 31 | e << 23 | kept | low);
  }
  expect_f32_patterns_equal_scalar(v, kF16);
  expect_f32_patterns_equal_scalar(shuffled_sample(v, 16, rng), kF16);
}

TEST(BulkErrors, SizesAndCodesAreChecked) {
  std::vector<std::byte> in(10), out(2);
  EXPECT_THROW(convert(in, kF32, out, kE4M3FN), std::invalid_argument);  // 10 bytes: not whole fp32s
  std::vector<std::byte> in8(8), out3(3);
  EXPECT_THROW(convert(in8, kF32, out3, kE4M3FN), std::invalid_argument);  // 2 elements, 3 bytes
  std::vector<std::byte> fp4{std::byte{0x03}, std::byte{0x1F}}, f32out(8);
  try {
    convert(fp4, kE2M1, f32out, kF32);
    FAIL() << "expected invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("element 1"), std::string::npos) << e.what();
  }
  // ... on every path: the stochastic one does not use the table.
  ConvertOptions sr;
  sr.rounding = Rounding::kStochastic;
  EXPECT_THROW(convert(fp4, kE2M1, f32out, kF32, sr), std::invalid_argument);
  std::vector<std::byte> ok(4), ok_out(1);
  EXPECT_THROW(convert(ok, kF32, ok_out, kE4M3FN, {}, {0}), std::invalid_argument);
}

TEST(BulkDispatch, ActiveIsaIsSupported) {
  EXPECT_TRUE(isa_supported(active_isa())) << isa_name(active_isa());
  EXPECT_TRUE(isa_supported(Isa::kGeneric));
}

}  // namespace
}  // namespace fp8q
