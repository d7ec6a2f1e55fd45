// numerics/src/isa/narrow_kernel.hpp at 16 lanes: the paths of the AVX-512 build (bf16 widened
// in natural order, codes in the plain form up to the store, MX in groups of 64 through the
// general kernel, 16 Philox counters per vector, the plain bf16 kernel on 32 lanes in groups of
// 64), run over OpsLanes16 (ops_lanes16.hpp) and Ops16Pair (ops16_pair.hpp), equal
// the scalar reference bit for bit: every bf16 and fp16 pattern and structured fp32 values, in
// every rounding, both overflow policies, with no scale, a power-of-two scale (the 16-bit bf16
// kernel), a plain one, a divisor and a NaN scale; MX elements and scales for every source.
// Needs AVX2 (the 16-bit bf16 kernel the AVX-512 build shares); skipped, saying so, without it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "format_types.hpp"
#include "fp8q/numerics/convert.hpp"
#include "fp8q/numerics/fp_env.hpp"
#include "fp8q/numerics/isa.hpp"
#include "fp8q/numerics/philox.hpp"
#include "isa/narrow.hpp"
#include "oracle.hpp"

namespace fp8q::test {
detail::NarrowFn narrow_kernel_lanes16(detail::Source s, Rounding r);
detail::MxFn mx_kernel_lanes16(detail::Source s, Rounding r);
}  // namespace fp8q::test

namespace fp8q {
namespace {

using detail::Source;

class NarrowLanes16 : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!isa_supported(Isa::kAvx2)) GTEST_SKIP() << "needs AVX2 (the bf16 16-bit kernel); not tested here";
  }
};

Source source_of(const Format& f) { return f == kF32 ? Source::kF32 : f == kBF16 ? Source::kBF16 : Source::kF16; }

// Every 16-bit pattern, in a scattered order, plus a tail that is no multiple of 64.
std::vector<std::byte> every_16bit_pattern() {
  std::vector<std::uint16_t> v(65536 + 45);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::uint16_t>(i * 40503u);
  std::vector<std::byte> out(v.size() * 2);
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

// fp32: every exponent field with fractions at and around the rounding points of 1 to 7
// kept bits, both signs, plus random patterns.
std::vector<std::byte> structured_f32() {
  std::vector<std::uint32_t> v;
  for (std::uint32_t sign = 0; sign < 2; ++sign)
    for (std::uint32_t e = 0; e < 256; ++e)
      for (int kept = 1; kept <= 7; ++kept) {
        const std::uint32_t half = 1u << (22 - kept);
        for (std::uint32_t f : {0u, 1u, half - 1, half, half + 1, 3 * half, 0x7FFFFFu})
          v.push_back(sign << 31 | e << 23 | (f & 0x7FFFFFu));
      }
  std::mt19937_64 rng(16);
  for (int i = 0; i < 20000; ++i) v.push_back(static_cast<std::uint32_t>(rng()));
  std::vector<std::byte> out(v.size() * 4);
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

// The kernel for (from, options) over `in` against convert_one per element, with the
// element indices starting at index0 (the stochastic counters: offset + index0 + i).
void expect_kernel_equals_reference(const std::vector<std::byte>& in, const Format& from, const Format& to,
                                    const ConvertOptions& o, std::uint64_t index0) {
  const std::size_t ib = from.storage_bytes(), n = in.size() / ib;
  const detail::NarrowParams p = detail::make_narrow_params(from, to, o);
  const detail::NarrowFn fn = test::narrow_kernel_lanes16(source_of(from), o.rounding);
  std::vector<std::uint8_t> out(n, 0xEE);
  bool nan = false;
  {
    ScopedDefaultFpEnv env;  // as the drivers run the kernels
    nan = fn(in.data(), out.data(), n, index0, p);
  }
  bool want_nan = false;
  for (std::size_t i = 0; i < n; ++i) {
    std::uint64_t code = 0;
    std::memcpy(&code, in.data() + i * ib, ib);
    const Converted c = convert_one(code, from, to, o, index0 + i);
    want_nan = want_nan || c.nan_unrepresentable;
    ASSERT_EQ(out[i], c.code) << from.name << " 0x" << std::hex << code << std::dec << " -> " << to.name << " "
                              << rounding_name(o.rounding) << " " << overflow_name(o.overflow)
                              << (o.scale_op == ScaleOp::kDivide ? " / " : " * ") << *o.scale << ", element " << i;
  }
  EXPECT_EQ(nan, want_nan) << from.name << " -> " << to.name << " " << rounding_name(o.rounding);
}

void expect_every_path(const std::vector<std::byte>& in, const Format& from) {
  const float scales[] = {1.0f, 4.0f, 1.7f};
  for (FormatId id : kNarrowFormats) {
    const Format& to = format_of(id);
    if (!detail::narrow_supported(from, to)) continue;
    for (Rounding r : test::kAllRoundings)
      for (Overflow ov : test::kAllOverflows) {
        ConvertOptions o{.rounding = r, .overflow = ov, .nan = NanPolicy::kZero, .seed = 77,
                         .offset = (std::uint64_t{1} << 32) - 1000};  // the counters' low word wraps
        for (float s : scales) {
          o.scale = s;
          expect_kernel_equals_reference(in, from, to, o, 5);
        }
        o.scale = 3.0f;
        o.scale_op = ScaleOp::kDivide;
        expect_kernel_equals_reference(in, from, to, o, 5);
        if (r == Rounding::kNearestEven) {
          o.scale = -std::numeric_limits<float>::quiet_NaN();
          o.scale_op = ScaleOp::kMultiply;
          expect_kernel_equals_reference(in, from, to, o, 5);
        }
        if (::testing::Test::HasFatalFailure()) return;
      }
  }
}

TEST_F(NarrowLanes16, EveryBf16Pattern) { expect_every_path(every_16bit_pattern(), kBF16); }
TEST_F(NarrowLanes16, EveryF16Pattern) { expect_every_path(every_16bit_pattern(), kF16); }
TEST_F(NarrowLanes16, StructuredF32) { expect_every_path(structured_f32(), kF32); }

// MX through the general kernel in groups of 64 (4 vectors of 16): the kernel converts the
// whole groups (the driver finishes an odd last block); each block's scale is table.code(amax)
// and each element the exact x * 2^(127 - code) rounded once (the independent Oracle).
TEST_F(NarrowLanes16, MxInGroupsOf64) {
  Pow2ScaleTable table;  // a floor rule with emax 8, and a step at mantissa 1.5 in odd binades
  for (int e = 1; e < 255; ++e) {
    table.base[e] = static_cast<std::uint8_t>(std::clamp(e - 8, 0, 254));
    table.threshold[e] = e % 2 == 0 ? 1u << 23 : 0x400000u;
  }
  detail::MxParams m;
  m.table = &table;
  for (std::uint32_t c = 0; c < 254; ++c) m.multiplier[c] = float_of((254 - c) << 23);
  m.multiplier[254] = float_of(0x00400000u);
  m.multiplier[255] = 1.0f;
  detail::fill_bf16_codes(m);
  constexpr std::size_t kBlocks = 2 * 40 + 1, n = 32 * kBlocks;
  std::mt19937_64 rng(21);
  for (const Format* from : {&kF32, &kBF16, &kF16}) {
    std::vector<std::byte> in(n * from->storage_bytes());
    for (std::size_t i = 0; i < n; ++i) {
      float x = std::ldexp(static_cast<float>(rng() % 100000) / 1000.0f, static_cast<int>(rng() % 60) - 40);
      if (i / 32 == 7) x = std::ldexp(x, -100);  // a block far below 1: tiny products
      if (rng() % 2) x = -x;
      if (rng() % 300 == 0) x = 0.0f;
      if (rng() % 900 == 0) x = rng() % 2 ? INFINITY : NAN;
      const std::uint64_t code = convert_one(bits_of(x), kF32, *from, {.overflow = Overflow::kInfOrNan}).code;
      std::memcpy(in.data() + i * from->storage_bytes(), &code, from->storage_bytes());
    }
    for (FormatId id : {FormatId::kE4M3FN, FormatId::kE4M3, FormatId::kE5M2, FormatId::kE2M3, FormatId::kE3M2,
                        FormatId::kE2M1}) {
      const Format& to = format_of(id);
      const test::Oracle oracle(to);
      for (Rounding r : test::kAllRoundings) {
        const ConvertOptions o{.rounding = r, .seed = 5};
        m.nan_fill = static_cast<std::uint8_t>(to.has_nan() ? to.canonical_nan() : 0);
        const detail::NarrowParams p = detail::make_narrow_params(*from, to, o);
        std::vector<std::uint8_t> out(n, 0xEE), scales(kBlocks, 0xEE);
        std::size_t done = 0;
        {
          ScopedDefaultFpEnv env;
          done = test::mx_kernel_lanes16(source_of(*from), r)(in.data(), out.data(), scales.data(), n, 0, p, m);
        }
        ASSERT_EQ(done, n / 64 * 64) << "whole groups of 64";
        for (std::size_t b = 0; b < done / 32; ++b) {
          std::uint32_t amax = 0;
          std::vector<std::uint32_t> f32(32);
          for (std::size_t j = 0; j < 32; ++j) {
            std::uint64_t code = 0;
            std::memcpy(&code, in.data() + (32 * b + j) * from->storage_bytes(), from->storage_bytes());
            f32[j] = static_cast<std::uint32_t>(convert_one(code, *from, kF32, {.overflow = Overflow::kInfOrNan}).code);
            amax = std::max(amax, f32[j] & 0x7FFFFFFFu);
          }
          const std::uint8_t sc = table.code(amax);
          ASSERT_EQ(scales[b], sc) << from->name << " -> " << to.name << " block " << b;
          for (std::size_t j = 0; j < 32; ++j) {
            const std::size_t i = 32 * b + j;
            std::uint64_t want = m.nan_fill;
            if (sc != 0xFF)
              want = oracle(std::ldexp(static_cast<double>(float_of(f32[j])), 127 - sc), r, o.overflow,
                            sr_random(o.seed, o.offset + i));
            ASSERT_EQ(out[i], want) << from->name << " -> " << to.name << " " << rounding_name(r) << " element " << i
                                    << " (block scale " << int{sc} << ")";
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace fp8q
