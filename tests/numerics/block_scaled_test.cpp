// numerics/block_scaled.hpp: convert_block_scaled() and convert_mx() equal the scalar
// reference (convert_one with each block's scale) bit for bit, on every instruction set this
// CPU runs, for every rounding, both scale operations, partial edge blocks and any thread count.
#include "fp8q/numerics/block_scaled.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "format_types.hpp"
#include "fp8q/numerics/philox.hpp"
#include "oracle.hpp"
#include "fp8q/numerics/convert.hpp"
#include "on_isa.hpp"
#include "thread_counts.hpp"

namespace fp8q {
namespace {

// Elements: random magnitudes over a wide range of binades, both signs, zeros, subnormals,
// and a few +/-Inf and NaN where `specials` asks for them.
std::vector<std::byte> random_matrix(const Format& from, std::size_t n, std::uint64_t seed, bool specials) {
  std::mt19937_64 rng(seed);
  std::vector<std::byte> out(n * from.storage_bytes());
  for (std::size_t i = 0; i < n; ++i) {
    float x = std::ldexp(static_cast<float>(rng() % 100000) / 1000.0f, static_cast<int>(rng() % 60) - 40);
    if (rng() % 2) x = -x;
    const auto pick = rng() % 200;
    if (pick == 0) x = 0.0f;
    if (pick == 1) x = std::ldexp(1.0f, -140);
    if (specials && pick == 2) x = INFINITY;
    if (specials && pick == 3) x = -NAN;
    const std::uint64_t code = convert_one(bits_of(x), kF32, from, {.overflow = Overflow::kInfOrNan}).code;
    std::memcpy(out.data() + i * from.storage_bytes(), &code, from.storage_bytes());
  }
  return out;
}

std::uint64_t load(const std::vector<std::byte>& v, std::size_t i, const Format& f) {
  std::uint64_t c = 0;
  std::memcpy(&c, v.data() + i * f.storage_bytes(), f.storage_bytes());
  return c;
}

class BlockScaledOnIsa : public test::OnIsa {};

TEST_P(BlockScaledOnIsa, EveryElementUsesItsBlocksScale) {
  // {150, 130, 150, 1}, {300, 70, 128, 1} and {130, 90, 7, 2} take the transposed tiles of narrow
  // blocks (bands of 64 rows, tiles of 64 columns) but under stochastic rounding, which the
  // row-scaled path takes; blocks 16 to 63 wide (NVFP4's 16) are scaled a row at a time first
  const BlockGrid grids[] = {{7, 300, 1, 128}, {130, 70, 128, 128}, {5, 33, 2, 3},  {3, 40, 3, 1},
                             {1, 1, 1, 1},      {9, 256, 1, 256},    {150, 130, 150, 1}, {300, 70, 128, 1},
                             {130, 90, 7, 2},   {6, 100, 1, 16},     {20, 70, 16, 16},   {4, 50, 3, 40}};
  for (const Format* from : {&kF32, &kBF16, &kF16})
    for (const BlockGrid& g : grids) {
      const auto in = random_matrix(*from, g.rows * g.cols, g.rows * 1000 + g.cols, false);
      std::vector<float> scales(g.grid_size());
      std::mt19937 rng(static_cast<unsigned>(g.cols));
      for (float& s : scales) s = std::ldexp(1.0f + static_cast<float>(rng() % 1000) / 999.0f, static_cast<int>(rng() % 30) - 15);
      for (FormatId id : {FormatId::kE4M3FN, FormatId::kE5M2, FormatId::kE2M1, FormatId::kE4M3FNUZ})
        for (Rounding r : test::kAllRoundings)
          for (ScaleOp op : {ScaleOp::kMultiply, ScaleOp::kDivide}) {
            const Format& to = format_of(id);
            ConvertOptions o;
            o.rounding = r;
            o.scale_op = op;
            o.seed = 99;
            o.offset = 5;
            std::vector<std::uint8_t> got(g.rows * g.cols);
            convert_block_scaled(in, *from, got, to, g, scales, o, {1, GetParam()});
            for (std::size_t row = 0; row < g.rows; ++row)
              for (std::size_t c = 0; c < g.cols; ++c) {
                ConvertOptions e = o;
                e.scale = scales[g.scale_index(row, c)];
                const std::size_t i = row * g.cols + c;
                ASSERT_EQ(got[i], convert_one(load(in, i, *from), *from, to, e, i).code)
                    << from->name << " -> " << to.name << " " << rounding_name(r) << " grid " << g.rows << "x" << g.cols
                    << " / " << g.block_rows << "x" << g.block_cols << " at (" << row << ", " << c << ")";
              }
          }
    }
}

// fp32(x / s) is the correctly rounded quotient: x a few ulps around fp32(t * s) for t on an
// e4m3fn rounding midpoint, so that a quotient one ulp off lands on the other side of the tie
// (xsimd's NEON division, a reciprocal estimate and Newton steps, did; fdiv does not).
TEST_P(BlockScaledOnIsa, DivideIsTheCorrectlyRoundedQuotient) {
  std::mt19937_64 rng(17);
  const BlockGrid g{1024, 64, 1, 64};  // a scale per row, the vector path's blocks
  std::vector<float> x(g.rows * g.cols), scales(g.rows);
  for (std::size_t r = 0; r < g.rows; ++r) {
    const float s = std::ldexp(1.0f + static_cast<float>(rng() % (1u << 23)) / 8388608.0f, static_cast<int>(rng() % 40) - 20);
    scales[r] = s;
    for (std::size_t c = 0; c < g.cols; ++c) {
      const float tie = std::ldexp(static_cast<float>(17 + 2 * (rng() % 8)), static_cast<int>(rng() % 12) - 8);  // 1.mmm1
      float v = tie * s;
      for (int k = static_cast<int>(rng() % 5) - 2; k != 0; k += k > 0 ? -1 : 1) v = std::nextafter(v, k > 0 ? INFINITY : 0.0f);
      x[r * g.cols + c] = rng() % 2 ? -v : v;
    }
  }
  ConvertOptions o;
  o.scale_op = ScaleOp::kDivide;
  for (const Format* from : {&kF32, &kBF16}) {
    std::vector<std::byte> in(x.size() * from->storage_bytes());
    for (std::size_t i = 0; i < x.size(); ++i) {  // bf16: x rounded, still near the tie's quotient
      const std::uint64_t code = convert_one(bits_of(x[i]), kF32, *from, {}).code;
      std::memcpy(in.data() + i * from->storage_bytes(), &code, from->storage_bytes());
    }
    std::vector<std::uint8_t> got(x.size());
    convert_block_scaled(in, *from, got, kE4M3FN, g, scales, o, {1, GetParam()});
    for (std::size_t i = 0; i < x.size(); ++i) {
      ConvertOptions e = o;
      e.scale = scales[i / g.cols];
      ASSERT_EQ(got[i], convert_one(load(in, i, *from), *from, kE4M3FN, e, i).code) << from->name << " element " << i;
    }
  }
}

TEST_P(BlockScaledOnIsa, SameBitsForAnyThreadCount) {
  for (const BlockGrid& g : {BlockGrid{600, 1000, 128, 128}, BlockGrid{600, 1000, 1, 16}}) {
    const auto in = random_matrix(kBF16, g.rows * g.cols, 7, false);
    std::vector<float> scales(g.grid_size(), 3.0f);
    ConvertOptions o;
    o.rounding = Rounding::kStochastic;
    std::vector<std::uint8_t> one(g.rows * g.cols), many(g.rows * g.cols);
    convert_block_scaled(in, kBF16, one, kE4M3FN, g, scales, o, {1, GetParam()});
    for (int t : {2, 3, 8}) {
      convert_block_scaled(in, kBF16, many, kE4M3FN, g, scales, o, {t, GetParam()});
      ASSERT_EQ(one, many) << t << " threads, blocks of " << g.block_cols;
    }
  }
}

TEST_P(BlockScaledOnIsa, NanErrorNamesTheFirstElement) {
  const BlockGrid g{4, 64, 1, 32};
  std::vector<float> x(256, 1.0f);
  x[200] = NAN;
  x[77] = -NAN;
  std::vector<float> scales(g.grid_size(), 2.0f);
  std::vector<std::uint8_t> out(256);
  try {
    convert_block_scaled(std::as_bytes(std::span(x)), kF32, out, kE2M1, g, scales, {}, {2, GetParam()});
    FAIL() << "expected NanError";
  } catch (const NanError& e) {
    EXPECT_EQ(e.index(), 77u);
  }
}

TEST_P(BlockScaledOnIsa, NanErrorNamesTheFirstElementUnderNarrowBlocks) {
  // per-column blocks run in transposed tiles; the error still names the first NaN in row order
  const BlockGrid g{70, 130, 70, 1};
  std::vector<float> x(g.rows * g.cols, 1.0f);
  x[10 * 130 + 3] = NAN;     // first in column order
  x[5 * 130 + 120] = -NAN;   // first in row order
  x[66 * 130] = NAN;         // in the second band of rows
  std::vector<float> scales(g.grid_size(), 2.0f);
  std::vector<std::uint8_t> out(x.size());
  for (int threads : test::kThreadCounts) {
    try {
      convert_block_scaled(std::as_bytes(std::span(x)), kF32, out, kE2M1, g, scales, {}, {threads, GetParam()});
      FAIL() << "expected NanError";
    } catch (const NanError& e) {
      EXPECT_EQ(e.index(), 5u * 130 + 120) << threads << " threads";
    }
  }
}

// A table in the form of a floor rule with emax 8, one whose code steps at mantissa 1 (ceil)
// and one that steps at a random point in every binade.
std::vector<Pow2ScaleTable> tables() {
  std::vector<Pow2ScaleTable> t(3);
  std::mt19937 rng(3);
  for (int e = 1; e < 255; ++e) {
    for (auto& table : t) table.base[e] = static_cast<std::uint8_t>(std::clamp(e - 127 - 8, -127, 126) + 127);
    t[0].threshold[e] = 1u << 23;
    t[1].threshold[e] = 1;
    t[2].threshold[e] = rng() & 0x7FFFFF;
  }
  return t;
}

TEST_P(BlockScaledOnIsa, MxEqualsThePerBlockReference) {
  const std::pair<std::size_t, std::size_t> shapes[] = {{3, 256}, {5, 100}, {2, 31}, {4, 64 + 32}, {1, 1}, {2, 4096 + 96 + 7}};
  int t_index = 0;
  for (const Pow2ScaleTable& table : tables()) {
    ++t_index;
    for (const Format* from : {&kF32, &kBF16, &kF16})
      for (auto [rows, cols] : shapes) {
        const auto in = random_matrix(*from, rows * cols, rows * 31 + cols, true);
        for (FormatId id : {FormatId::kE4M3FN, FormatId::kE5M2, FormatId::kE2M1, FormatId::kE3M2, FormatId::kE2M3})
          for (Rounding r : test::kAllRoundings)
            for (Overflow ov : test::kAllOverflows) {
              const Format& to = format_of(id);
              const test::Oracle oracle(to);
              ConvertOptions o;
              o.rounding = r;
              o.overflow = ov;
              o.seed = 1234;
              const std::size_t per_row = (cols + 31) / 32;
              std::vector<std::uint8_t> got(rows * cols), got_scales(rows * per_row);
              convert_mx(in, *from, rows, cols, 32, got, got_scales, to, table, o, {1, GetParam()});
              for (std::size_t row = 0; row < rows; ++row)
                for (std::size_t b = 0; b < per_row; ++b) {
                  const std::size_t c0 = b * 32, c1 = std::min(cols, c0 + 32);
                  std::uint32_t amax = 0;
                  for (std::size_t c = c0; c < c1; ++c) {
                    const auto f32 = static_cast<std::uint32_t>(
                        convert_one(load(in, row * cols + c, *from), *from, kF32, {.overflow = Overflow::kInfOrNan}).code);
                    amax = std::max(amax, f32 & 0x7FFFFFFFu);
                  }
                  const std::uint8_t code = table.code(amax);
                  ASSERT_EQ(got_scales[row * per_row + b], code) << "table " << t_index << " block " << row << "," << b;
                  for (std::size_t c = c0; c < c1; ++c) {
                    const std::size_t i = row * cols + c;
                    std::uint64_t want = to.has_nan() ? to.canonical_nan() : 0;
                    if (code != 0xFF) {  // the independent model, on the exact x * 2^(127 - code)
                      const auto f32 = static_cast<std::uint32_t>(
                          convert_one(load(in, i, *from), *from, kF32, {.overflow = Overflow::kInfOrNan}).code);
                      const double exact = std::ldexp(static_cast<double>(float_of(f32)), 127 - code);
                      want = oracle(exact, r, o.overflow, sr_random(o.seed, o.offset + i));
                    }
                    ASSERT_EQ(got[i], want) << from->name << " -> " << to.name << " " << rounding_name(r) << " "
                                            << overflow_name(ov) << " table "
                                            << t_index << " element (" << row << ", " << c << ")";
                  }
                }
            }
      }
  }
}

// convert_mx of the bf16 matrix x (cols wide) on `isa`, for every scale table and signed
// narrow target: each block's scale code is table.code(amax) and each element the scalar
// reference of x * 2^(127 - code) (the target's NaN, or 0, in a block whose code is 0xFF).
void expect_mx_bf16_equals_reference(const std::vector<std::uint16_t>& x, std::size_t cols, Isa isa) {
  const std::size_t rows = x.size() / cols, blocks = x.size() / 32;
  const auto in = std::as_bytes(std::span(x));
  for (const Pow2ScaleTable& table : tables())
    for (FormatId id : kNarrowFormats) {
      const Format& to = format_of(id);
      if (!to.is_signed) continue;  // e8m0 holds scales, not elements
      std::vector<std::uint8_t> got(x.size()), got_scales(blocks);
      convert_mx(in, kBF16, rows, cols, 32, got, got_scales, to, table, {}, {1, isa});
      for (std::size_t b = 0; b < blocks; ++b) {
        std::uint32_t amax = 0;
        for (std::size_t i = 32 * b; i < 32 * b + 32; ++i) amax = std::max(amax, (std::uint32_t{x[i]} << 16) & 0x7FFFFFFFu);
        const std::uint8_t code = table.code(amax);
        ASSERT_EQ(got_scales[b], code) << "block " << b;
        const ConvertOptions o{.scale = std::ldexp(1.0f, 127 - code)};
        for (std::size_t i = 32 * b; i < 32 * b + 32; ++i) {
          const std::uint64_t want = code != 0xFF ? convert_one(x[i], kBF16, to, o, i).code
                                     : to.has_nan() ? to.canonical_nan()
                                                    : 0;
          ASSERT_EQ(got[i], want) << "bf16 0x" << std::hex << x[i] << std::dec << " -> " << to.name << ", scale code "
                                  << int{code} << ", element " << i;
        }
      }
    }
}

// bf16 MX under nearest-even takes the 16-bit kernel for blocks whose 2^(127 - code) is at
// most 2^(127 + emin - m - 3), the fp32 kernel for the rest (amax below ~2^-100, zeros,
// subnormals). Blocks anchored at every bf16 binade hold every pattern of the 40 binades
// below their anchor (both signs), plus blocks of zeros, subnormals, NaN and Inf: each
// element and scale equals the reference, for every narrow target and three scale tables.
TEST_P(BlockScaledOnIsa, MxBf16EveryPatternUnderEveryScale) {
  std::vector<std::uint16_t> x;
  auto block = [&](std::uint16_t anchor, const std::vector<std::uint16_t>& rest, std::size_t at) {
    std::vector<std::uint16_t> b(rest);
    b.resize(31, 0);
    b.insert(b.begin() + static_cast<std::ptrdiff_t>(at % 32), anchor);
    x.insert(x.end(), b.begin(), b.end());
  };
  for (std::uint16_t ea = 0; ea < 255; ++ea) {
    const auto anchor = static_cast<std::uint16_t>(ea << 7 | 0x7F | (ea % 2) << 15);
    std::vector<std::uint16_t> rest;
    for (int e = std::max(0, ea - 40); e <= ea; ++e)
      for (std::uint16_t f = 0; f < 128; ++f)
        for (std::uint16_t s : {0, 0x8000}) {
          rest.push_back(static_cast<std::uint16_t>(s | e << 7 | f));
          if (rest.size() == 31) {
            block(anchor, rest, x.size() / 32);
            rest.clear();
          }
        }
    if (!rest.empty()) block(anchor, rest, x.size() / 32);
  }
  block(0x0000, {}, 0);                                      // +0
  block(0x8000, {0x8000, 0, 0x8000}, 1);                     // +-0
  block(0x0001, {0x8001, 0x007F, 0x807F, 0x0040}, 2);        // subnormals only
  block(0x7F80, {0x3F80, 0xBF80}, 3);                        // Inf
  block(0x7FC1, {0x3F80, 0xFF80}, 4);                        // NaN
  block(0x7F7F, {0xFF7F, 0x0001, 0x3F80}, 5);                // the largest finite
  while (x.size() % 2048 != 0) block(0x3F80, {0xBF00, 0x3E80}, x.size() / 32);
  expect_mx_bf16_equals_reference(x, 2048, GetParam());
}

// The MX bf16 kernel converts a block by its normal form when no nonzero |x| lies below the
// target's smallest normal binade, else by the general form. Here every block holds an anchor
// (which sets the scale) and one probe pattern, the rest zeros: each probe pattern of the 24
// binades below each anchor binade, both signs, is the block's smallest nonzero |x| once, so
// both sides of the switch and every pattern at the boundary are compared with the reference.
TEST_P(BlockScaledOnIsa, MxBf16NormalFormBoundaryEveryProbe) {
  std::vector<std::uint16_t> x;
  for (int ea = 2; ea < 255; ea += 9) {
    for (int e = std::max(0, ea - 24); e <= ea; ++e)
      for (std::uint16_t f = 0; f < 128; ++f)
        for (std::uint16_t s : {0, 0x8000}) {
          std::uint16_t b[32] = {};
          b[(e + f) % 32] = static_cast<std::uint16_t>(ea << 7 | 0x40);  // the anchor
          b[(e + f + 1 + s / 0x8000) % 32] = static_cast<std::uint16_t>(s | e << 7 | f);
          x.insert(x.end(), b, b + 32);
        }
  }
  while (x.size() % 1024 != 0) x.push_back(0);
  expect_mx_bf16_equals_reference(x, 1024, GetParam());
}

// MX outputs of 1 MiB and more, split between threads: every source through the fp32
// kernel (nearest-away, stochastic), one and two threads, against the per-block reference.
TEST_P(BlockScaledOnIsa, LargeMxOutputsEqualThePerBlockReference) {
  const std::size_t rows = 260, cols = 4096;
  const Pow2ScaleTable table = tables()[2];
  for (const Format* from : {&kF32, &kBF16, &kF16}) {
    const auto in = random_matrix(*from, rows * cols, 99, true);
    for (Rounding r : {Rounding::kNearestAway, Rounding::kStochastic})
      for (int threads : test::kThreadCounts) {
        ConvertOptions o;
        o.rounding = r;
        std::vector<std::uint8_t> got(rows * cols), got_scales(rows * cols / 32);
        convert_mx(in, *from, rows, cols, 32, got, got_scales, kE4M3FN, table, o, {threads, GetParam()});
        for (std::size_t b = 0; b < got_scales.size(); ++b) {
          std::uint32_t amax = 0;
          for (std::size_t i = 32 * b; i < 32 * b + 32; ++i)
            amax = std::max(amax, static_cast<std::uint32_t>(convert_one(load(in, i, *from), *from, kF32, {.overflow = Overflow::kInfOrNan}).code) & 0x7FFFFFFFu);
          const std::uint8_t code = table.code(amax);
          ASSERT_EQ(got_scales[b], code) << from->name << " block " << b;
          for (std::size_t i = 32 * b; i < 32 * b + 32; ++i) {
            ConvertOptions e = o;
            e.scale = std::ldexp(1.0f, 127 - code);
            const std::uint64_t want = code == 0xFF ? kE4M3FN.canonical_nan() : convert_one(load(in, i, *from), *from, kE4M3FN, e, i).code;
            ASSERT_EQ(got[i], want) << from->name << " " << rounding_name(r) << " element " << i;
          }
        }
      }
  }
}

TEST(BlockScaled, SizesAreChecked) {
  std::vector<float> x(10);
  std::vector<std::uint8_t> out(10), scales(1);
  std::vector<float> s(1);
  EXPECT_THROW(convert_block_scaled(std::as_bytes(std::span(x)), kF32, out, kE4M3FN, {2, 5, 1, 5}, s), std::invalid_argument);
  ConvertOptions with_scale;
  with_scale.scale = 2.0f;
  std::vector<float> s2(2);
  EXPECT_THROW(convert_block_scaled(std::as_bytes(std::span(x)), kF32, out, kE4M3FN, {2, 5, 1, 5}, s2, with_scale),
               std::invalid_argument);
  EXPECT_THROW(convert_mx(std::as_bytes(std::span(x)), kF32, 2, 5, 32, out, scales, kE4M3FN, Pow2ScaleTable{}),
               std::invalid_argument);  // two rows need two scales
}

TEST(BlockScaled, MatricesTooLargeToAddressAreRefused) {
  // 2^33 x 2^31 elements: the element count wraps to 0 in 64 bits, so empty spans would match
  const std::size_t rows = std::size_t{1} << 33, cols = std::size_t{1} << 31;
  std::vector<float> none;
  try {
    convert_block_scaled({}, kF32, {}, kE4M3FN, {rows, cols, rows, cols}, none);
    FAIL() << "expected invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("convert_block_scaled: a 8589934592 x 2147483648 matrix is too large"),
              std::string::npos) << e.what();
  }
  try {
    convert_mx({}, kF32, rows, cols, 1, {}, {}, kE4M3FN, Pow2ScaleTable{});
    FAIL() << "expected invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("convert_mx: a 8589934592 x 2147483648 matrix is too large"),
              std::string::npos) << e.what();
  }
}

// fp6 / fp4 sources hold one code per byte, in the low bits: a byte with a high bit set is
// refused, naming the element, as convert() does (the scalar branch masked it away).
TEST_P(BlockScaledOnIsa, NarrowSourceBytesWithHighBitsAreRefused) {
  const std::vector<std::uint8_t> codes = {0x01, 0x1F, 0x02, 0x03};  // 0x1F is not an e2m1 code
  std::vector<std::uint8_t> out(4, 0xAA);
  const std::vector<float> scales(1, 1.0f);
  try {
    convert_block_scaled(std::as_bytes(std::span(codes)), kE2M1, out, kE4M3FN, {1, 4, 1, 4}, scales, {}, {1, GetParam()});
    FAIL() << "expected invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("element 1: byte 31 is not a e2m1 code"), std::string::npos) << e.what();
  }
  const std::vector<std::uint8_t> valid = {0x01, 0x0F, 0x02, 0x03};
  convert_block_scaled(std::as_bytes(std::span(valid)), kE2M1, out, kE4M3FN, {1, 4, 1, 4}, scales, {}, {1, GetParam()});
  for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(out[i], convert_one(valid[i], kE2M1, kE4M3FN, {}).code) << i;
}

// A table whose top binade steps to code 0xFF: a block whose amax lands there has the NaN
// scale, and every element is the target's NaN (0 where it has none), on every path; the bf16
// kernel takes its codes eight blocks at a time where the table is affine in the exponent,
// which this table is everywhere, so that shortcut must see the 0xFF too.
TEST_P(BlockScaledOnIsa, MxScaleCode255FromAFiniteAmaxIsTheNanScale) {
  Pow2ScaleTable table;
  for (int e = 1; e < 255; ++e) {
    table.base[e] = static_cast<std::uint8_t>(e);
    table.threshold[e] = 0x400000;  // code e + 1 from mantissa 1.5 on
  }
  // 16 blocks (the kernel's group of eight, twice); block 3 has amax 1.5 * 2^127 (code 255),
  // block 12 amax 1.25 * 2^127 (code 254); the rest small values
  std::vector<std::uint16_t> x(16 * 32);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<std::uint16_t>(0x3F80 + (i * 7) % 128);
  x[3 * 32 + 5] = 0x7F40;
  x[12 * 32 + 9] = 0xFF20;
  const auto in = std::as_bytes(std::span(x));
  for (FormatId id : kNarrowFormats) {
    const Format& to = format_of(id);
    if (!to.is_signed) continue;
    for (std::size_t cols : {std::size_t{32 * 16}, std::size_t{32 * 8}}) {
      std::vector<std::uint8_t> got(x.size()), got_scales(16);
      convert_mx(in, kBF16, x.size() / cols, cols, 32, got, got_scales, to, table, {}, {1, GetParam()});
      for (std::size_t b = 0; b < 16; ++b) {
        std::uint32_t amax = 0;
        for (std::size_t i = 32 * b; i < 32 * b + 32; ++i) amax = std::max(amax, (std::uint32_t{x[i]} << 16) & 0x7FFFFFFFu);
        const std::uint8_t code = table.code(amax);
        ASSERT_EQ(got_scales[b], code) << to.name << " block " << b;
        EXPECT_EQ(code == 0xFF, b == 3) << "block " << b;
        const ConvertOptions o{.scale = std::ldexp(1.0f, 127 - code)};
        for (std::size_t i = 32 * b; i < 32 * b + 32; ++i) {
          const std::uint64_t want = code != 0xFF ? convert_one(x[i], kBF16, to, o, i).code
                                     : to.has_nan() ? to.canonical_nan()
                                                    : 0;
          ASSERT_EQ(got[i], want) << to.name << " element " << i << " scale code " << int{code};
        }
      }
    }
  }
}

// base 255 plus a step would be code 256: such a table is refused, naming the binade.
TEST(BlockScaled, MxTableSteppingPast255IsRefused) {
  Pow2ScaleTable table;
  table.base[200] = 0xFF;
  table.threshold[200] = 5;
  std::vector<float> x(32, 1.0f);
  std::vector<std::uint8_t> out(32), scales(1);
  try {
    convert_mx(std::as_bytes(std::span(x)), kF32, 1, 32, 32, out, scales, kE4M3FN, table);
    FAIL() << "expected invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("binade 200 steps from code 255"), std::string::npos) << e.what();
  }
  table.threshold[200] = 1u << 23;  // 255 without a step is the NaN scale: accepted
  EXPECT_NO_THROW(convert_mx(std::as_bytes(std::span(x)), kF32, 1, 32, 32, out, scales, kE4M3FN, table));
}

INSTANTIATE_TEST_SUITE_P(EveryIsa, BlockScaledOnIsa, test::every_isa(), test::isa_test_name);

}  // namespace
}  // namespace fp8q
