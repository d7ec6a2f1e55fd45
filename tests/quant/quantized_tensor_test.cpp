// quant/quantized_tensor.hpp (and the rule tables of scale_rules.hpp it runs on): quantize()
// equals a per-element reference written from the formulas (brute-force block amax, the scale
// functions, convert_one), for every granularity, element format and scale convention,
// including partial edge blocks and the adversarial amaxes; dequantize() is one rounding.
#include "fp8q/quant/quantized_tensor.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <cstring>
#include <random>
#include <vector>

#include "fp8q/numerics/arith.hpp"
#include "fp8q/numerics/convert.hpp"
#include "thread_counts.hpp"

namespace fp8q {
namespace {

constexpr MxScaleRule kRules[] = {MxScaleRule::kFloor,     MxScaleRule::kCeil,
                                  MxScaleRule::kEven,      MxScaleRule::kRceil,
                                  MxScaleRule::kTrainium3, MxScaleRule::kCompressedTensors};
constexpr FormatId kElements[] = {FormatId::kE4M3FN, FormatId::kE4M3, FormatId::kE5M2, FormatId::kE4M3FNUZ,
                                  FormatId::kE5M2FNUZ, FormatId::kE3M4, FormatId::kE2M3, FormatId::kE3M2,
                                  FormatId::kE2M1};

TEST(MxScaleTable, EqualsTheRuleAtEveryBinadeEdgeStepAndRandomly) {
  std::mt19937 rng(11);
  for (FormatId id : {FormatId::kE4M3FN, FormatId::kE5M2, FormatId::kE2M3, FormatId::kE3M2, FormatId::kE2M1})
    for (MxScaleRule rule : kRules) {
      const Format& f = format_of(id);
      const Pow2ScaleTable t = mx_scale_table(f, rule);
      auto check = [&](std::uint32_t bits) {
        ASSERT_EQ(t.code(bits), mx_scale_code(float_of(bits), f, rule))
            << f.name << " " << mx_scale_rule_name(rule) << " amax bits " << std::hex << bits;
      };
      for (std::uint32_t e = 0; e < 256; ++e) {
        const std::uint32_t lo = e << 23;
        for (std::uint32_t m : {0u, 1u, 0x400000u, 0x7FFFFEu, 0x7FFFFFu}) check(lo | m);
        if (e > 0 && e < 255 && t.threshold[e] < (1u << 23)) {
          check(lo | t.threshold[e]);
          check(lo | (t.threshold[e] - 1));
        }
        for (int k = 0; k < 64; ++k) check(lo | (rng() & 0x7FFFFF));
      }
    }
}

TEST(ScaleInvFromAmax, DivideConvention) {
  EXPECT_EQ(scale_inv_from_amax(448.0f, kE4M3FN), 1.0f);
  EXPECT_EQ(scale_inv_from_amax(0.0f, kE4M3FN), 1.0f);
  EXPECT_EQ(scale_inv_from_amax(NAN, kE4M3FN), 1.0f);
  EXPECT_EQ(scale_inv_from_amax(INFINITY, kE4M3FN), 1.0f);
  // one nearest-even rounding of the quotient (double of two floats rounds to the same float)
  const float a = 255.99998f;
  EXPECT_EQ(scale_inv_from_amax(a, kE4M3FN), static_cast<float>(static_cast<double>(a) / 448.0));
  // power of two: up, so that amax / s never exceeds max
  EXPECT_EQ(scale_inv_from_amax(a, kE4M3FN, {.power_of_two = true}), 1.0f);    // 0.571.. -> 1
  EXPECT_EQ(scale_inv_from_amax(448.0f, kE4M3FN, {.power_of_two = true}), 1.0f);
  EXPECT_EQ(scale_inv_from_amax(449.0f, kE4M3FN, {.power_of_two = true}), 2.0f);
  EXPECT_EQ(scale_inv_from_amax(448.0f, kE4M3FN, {.margin = 2}), 4.0f);
  // below the smallest subnormal: the smallest subnormal
  EXPECT_EQ(scale_inv_from_amax(std::ldexp(1.0f, -149), kE4M3FN), std::ldexp(1.0f, -149));
  EXPECT_THROW(scale_inv_from_amax(-1.0f, kE4M3FN), std::invalid_argument);
}

// --- the per-element reference ---------------------------------------------------------------
std::vector<float> random_tensor(std::size_t n, std::uint64_t seed, bool nan_ok) {
  std::mt19937_64 rng(seed);
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    float x = std::ldexp(static_cast<float>(rng() % 1000000) / 1e5f, static_cast<int>(rng() % 24) - 12);
    if (rng() % 2) x = -x;
    switch (rng() % 97) {
      case 0: x = 255.99998f; break;      // just below a power of two
      case 1: x = 256.0f; break;          // exactly one
      case 2: x = std::ldexp(1.0f, -130); break;  // fp32 subnormal
      case 3: x = -0.0f; break;
      case 4: x = nan_ok ? INFINITY : 1e30f; break;
      case 5: x = nan_ok ? NAN : 3.0e38f; break;
      default: break;
    }
    v[i] = x;
  }
  if (n > 40) std::fill(v.begin() + 1, v.begin() + 36, 0.0f);  // a zero block somewhere
  return v;
}

struct Case {
  std::vector<std::uint64_t> shape;
  Granularity g;
};

void check_against_reference(const std::vector<float>& x, const Case& c, const QuantizeOptions& o) {
  const QuantizedTensor q = quantize(std::as_bytes(std::span(x)), kF32, c.shape, o);
  const MatrixShape m = matrix_shape(c.shape);
  const BlockGrid g = block_grid(c.g, m);
  const Format& elem = format_of(o.element);
  std::vector<std::uint8_t> codes(m.rows * m.cols);
  if (q.packed()) {
    unpack_fp4(q.codes, codes);
  } else {
    codes = q.codes;
  }
  for (std::size_t br = 0; br < g.grid_rows(); ++br)
    for (std::size_t bc = 0; bc < g.grid_cols(); ++bc) {
      std::uint32_t amax_bits = 0;
      const std::size_t r1 = std::min(m.rows, (br + 1) * g.block_rows), c1 = std::min(m.cols, (bc + 1) * g.block_cols);
      for (std::size_t r = br * g.block_rows; r < r1; ++r)
        for (std::size_t col = bc * g.block_cols; col < c1; ++col)
          amax_bits = std::max(amax_bits, bits_of(x[r * m.cols + col]) & 0x7FFFFFFFu);
      const float amax = float_of(amax_bits);
      const std::size_t b = br * g.grid_cols() + bc;
      ConvertOptions e = o.convert;
      std::uint8_t mx_code = 0;
      if (c.g.kind == GranularityKind::kMx) {
        mx_code = mx_scale_code(amax, elem, o.mx_rule);
        ASSERT_EQ(q.scales[b], mx_code) << "MX block " << b;
        e.scale = std::ldexp(1.0f, 127 - mx_code);
      } else if (o.apply == ScaleOp::kDivide) {
        const float s = scale_inv_from_amax(amax, elem, o.amax);
        ASSERT_EQ(bits_of(q.scale_inv[b]), bits_of(s)) << "block " << b;
        e.scale = s;
        e.scale_op = ScaleOp::kDivide;
      } else {
        const float s = scale_from_amax(amax, elem, o.amax);
        ASSERT_EQ(bits_of(q.scale_inv[b]), bits_of(static_cast<float>(1.0 / static_cast<double>(s)))) << "block " << b;
        e.scale = s;
      }
      for (std::size_t r = br * g.block_rows; r < r1; ++r)
        for (std::size_t col = bc * g.block_cols; col < c1; ++col) {
          const std::size_t i = r * m.cols + col;
          std::uint64_t want = elem.has_nan() ? elem.canonical_nan() : 0;
          if (mx_code != 0xFF || c.g.kind != GranularityKind::kMx) want = convert_one(bits_of(x[i]), kF32, elem, e, i).code;
          ASSERT_EQ(codes[i], want) << elem.name << " " << granularity_name(c.g) << " element " << i << " x=" << x[i];
        }
    }
}

TEST(Quantize, EveryGranularityElementAndConventionEqualsTheReference) {
  const Case cases[] = {
      {{130, 258}, Granularity::block(128, 128)}, {{130, 258}, Granularity::block(1, 128)},
      {{7, 3, 66}, Granularity::row()},           {{7, 66}, Granularity::column()},
      {{40, 34}, Granularity::tensor()},          {{5, 70}, Granularity::block(3, 5)},
      {{2}, Granularity::block(1, 128)},          {{9, 100}, Granularity::mx()},
      {{3, 4, 64}, Granularity::mx()},            {{}, Granularity::tensor()},
      {{200, 150}, Granularity::column()},        {{260, 70}, Granularity::block(128, 1)},
  };
  int seed = 0;
  for (const Case& c : cases)
    for (FormatId id : kElements) {
      if (id == FormatId::kE2M1 && (c.shape.empty() || c.shape.back() % 2 != 0)) continue;
      const bool has_nan = format_of(id).has_nan();
      const MatrixShape m = matrix_shape(c.shape);
      const auto x = random_tensor(m.rows * m.cols, ++seed, has_nan || c.g.kind == GranularityKind::kMx);
      QuantizeOptions o;
      o.element = id;
      o.granularity = c.g;
      if (c.g.kind == GranularityKind::kMx) {
        for (MxScaleRule rule : kRules) {
          o.mx_rule = rule;
          check_against_reference(x, c, o);
        }
        continue;
      }
      for (ScaleOp op : {ScaleOp::kMultiply, ScaleOp::kDivide})
        for (bool pow2 : {false, true}) {
          o.apply = op;
          o.amax.power_of_two = pow2;
          o.amax.margin = pow2 ? 1 : 0;
          o.convert.rounding = pow2 ? Rounding::kTowardZero : Rounding::kNearestEven;
          check_against_reference(x, c, o);
        }
    }
}

// Tall blocks (their rows folded into one row of maxima before the block amaxes are taken),
// rows, and narrow blocks: the same bits as the reference for any thread count and under each
// NaN policy.
TEST(Quantize, TallAndNarrowBlocksEqualTheReferenceForAnyThreadCount) {
  const Case cases[] = {{{700, 1024}, Granularity::block(128, 128)},
                        {{2100, 130}, Granularity::row()},
                        {{9, 40}, Granularity::block(2, 7)},
                        {{300, 64}, Granularity::block(128, 1)}};
  int seed = 100;
  for (const Case& c : cases)
    for (FormatId id : {FormatId::kE4M3FN, FormatId::kE5M2, FormatId::kE3M2}) {
      const MatrixShape m = matrix_shape(c.shape);
      const bool has_nan = format_of(id).has_nan();
      const auto with_nan = random_tensor(m.rows * m.cols, ++seed, true);
      const auto without = random_tensor(m.rows * m.cols, seed, false);
      for (int threads : test::kThreadCounts)
        for (NanPolicy nan : {NanPolicy::kError, NanPolicy::kZero}) {
          const auto& x = has_nan || nan == NanPolicy::kZero ? with_nan : without;
          QuantizeOptions o;
          o.element = id;
          o.granularity = c.g;
          o.bulk.threads = threads;
          o.convert.nan = nan;
          o.apply = threads % 2 ? ScaleOp::kMultiply : ScaleOp::kDivide;
          check_against_reference(x, c, o);
        }
    }
}

// bf16 and fp16 inputs are their exact fp32 values: quantizing them equals quantizing the
// decoded fp32 tensor, codes and scales, for every granularity kind.
TEST(Quantize, SixteenBitInputsEqualTheirExactFp32Values) {
  const std::uint64_t shape[] = {6, 260};
  const auto x = random_tensor(6 * 260, 91, true);
  for (const Format* from : {&kBF16, &kF16}) {
    std::vector<std::uint16_t> h(x.size());
    std::vector<float> exact(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
      h[i] = static_cast<std::uint16_t>(convert_one(bits_of(x[i]), kF32, *from, {.overflow = Overflow::kInfOrNan}).code);
      exact[i] = decode_f32(h[i], *from);
    }
    for (Granularity g : {Granularity::tensor(), Granularity::row(), Granularity::block(128, 128), Granularity::mx()})
      for (FormatId id : {FormatId::kE4M3FN, FormatId::kE5M2, FormatId::kE2M1}) {
        QuantizeOptions o;
        o.granularity = g;
        o.element = id;
        o.convert.nan = NanPolicy::kZero;  // the tensor holds NaN; e2m1 has none
        const QuantizedTensor a = quantize(std::as_bytes(std::span(h)), *from, shape, o);
        const QuantizedTensor b = quantize(std::as_bytes(std::span(exact)), kF32, shape, o);
        EXPECT_EQ(a.codes, b.codes) << from->name << " " << granularity_name(g) << " " << format_of(id).name;
        EXPECT_EQ(a.scales, b.scales) << from->name << " " << granularity_name(g);
        ASSERT_EQ(a.scale_inv.size(), b.scale_inv.size());
        for (std::size_t k = 0; k < a.scale_inv.size(); ++k)
          EXPECT_EQ(bits_of(a.scale_inv[k]), bits_of(b.scale_inv[k])) << from->name << " " << granularity_name(g);
      }
  }
}

TEST(Quantize, MxMatchesTheBlockReferenceOfScaleRules) {
  // mx_quantize_block is the one-block reference (nearest-even, saturating).
  const auto x = random_tensor(4 * 96, 5, true);
  for (MxScaleRule rule : kRules) {
    QuantizeOptions o;
    o.granularity = Granularity::mx();
    o.mx_rule = rule;
    const std::uint64_t shape[] = {4, 96};
    const QuantizedTensor q = quantize(std::as_bytes(std::span(x)), kF32, shape, o);
    for (std::size_t b = 0; b < 12; ++b) {
      std::uint8_t codes[32];
      EXPECT_EQ(q.scales[b], mx_quantize_block(std::span(x).subspan(b * 32, 32), kE4M3FN, rule, codes));
      EXPECT_EQ(0, std::memcmp(codes, q.codes.data() + b * 32, 32)) << "block " << b;
    }
  }
}

TEST(Quantize, AdversarialAmaxes) {
  // amax 255.99998 under the MX floor rule for e4m3fn: floor(log2) = 7, e = 7 - 8 = -1
  std::vector<float> x(32, 1.0f);
  x[3] = 255.99998f;
  QuantizeOptions o;
  o.granularity = Granularity::mx();
  const std::uint64_t shape[] = {32};
  EXPECT_EQ(quantize(std::as_bytes(std::span(x)), kF32, shape, o).scales[0], 126);
  o.mx_rule = MxScaleRule::kEven;  // rounds 255.99998 up to 256 at e4m3fn's width: e = 0
  EXPECT_EQ(quantize(std::as_bytes(std::span(x)), kF32, shape, o).scales[0], 127);
  // all-zero MX block: e = -127; a NaN or Inf block: the NaN scale and NaN elements
  std::fill(x.begin(), x.end(), 0.0f);
  EXPECT_EQ(quantize(std::as_bytes(std::span(x)), kF32, shape, o).scales[0], 0);
  x[9] = INFINITY;
  const auto q = quantize(std::as_bytes(std::span(x)), kF32, shape, o);
  EXPECT_EQ(q.scales[0], 0xFF);
  EXPECT_EQ(q.codes[0], 0x7F);
}

TEST(Quantize, ErrorsNameTheProblem) {
  std::vector<float> x(6, 1.0f);
  QuantizeOptions o;
  o.element = FormatId::kE2M1;
  const std::uint64_t odd[] = {2, 3};
  try {
    quantize(std::as_bytes(std::span(x)), kF32, odd, o);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("last dimension must be even; it is 3"), std::string::npos) << e.what();
  }
  o.element = FormatId::kE8M0;
  const std::uint64_t ok[] = {2, 3};
  EXPECT_THROW(quantize(std::as_bytes(std::span(x)), kF32, ok, o), std::invalid_argument);
  o.element = FormatId::kE2M3;
  x[4] = NAN;
  try {
    quantize(std::as_bytes(std::span(x)), kF32, ok, o);
    FAIL();
  } catch (const NanError& e) {
    EXPECT_EQ(e.index(), 4u);
  }
}

// quantize_into writes quantize()'s codes and scales into the caller's storage; a span of
// another size is refused, naming it, with every span left as it was.
TEST(QuantizeInto, EqualsQuantizeAndRefusesSpansOfAnotherSize) {
  const Case cases[] = {{{9, 100}, Granularity::mx()},         {{130, 258}, Granularity::block(128, 128)},
                        {{40, 34}, Granularity::tensor()},     {{}, Granularity::tensor()},
                        {{7, 66}, Granularity::column()},      {{0, 64}, Granularity::mx()}};
  int seed = 100;
  for (const Case& c : cases)
    for (FormatId id : {FormatId::kE4M3FN, FormatId::kE5M2, FormatId::kE2M1}) {
      const MatrixShape m = matrix_shape(c.shape);
      if (id == FormatId::kE2M1 && (c.shape.empty() || m.cols % 2 != 0)) continue;
      const auto x = random_tensor(m.rows * m.cols, ++seed, false);
      QuantizeOptions o;
      o.element = id;
      o.granularity = c.g;
      o.mx_rule = MxScaleRule::kRceil;
      const QuantizedTensor q = quantize(std::as_bytes(std::span(x)), kF32, c.shape, o);
      const std::string name = std::string(format_of(id).name) + " " + granularity_name(c.g);
      std::vector<std::uint8_t> codes(q.codes.size(), 0xA5), scales(q.scales.size(), 0xA5);
      std::vector<float> scale_inv(q.scale_inv.size(), -1.0f);
      quantize_into(std::as_bytes(std::span(x)), kF32, c.shape, o, {codes, scales, scale_inv});
      EXPECT_EQ(codes, q.codes) << name;
      EXPECT_EQ(scales, q.scales) << name;
      ASSERT_EQ(scale_inv.size(), q.scale_inv.size()) << name;
      for (std::size_t i = 0; i < scale_inv.size(); ++i) EXPECT_EQ(bits_of(scale_inv[i]), bits_of(q.scale_inv[i])) << name;

      std::vector<std::uint8_t> big(q.codes.size() + 1, 0xA5), more(q.scales.size() + 1, 0xA5);
      std::vector<float> other(q.scale_inv.size() + 1, -1.0f);
      const QuantizedOut wrong[] = {{big, scales, scale_inv}, {codes, more, scale_inv}, {codes, scales, other}};
      const char* named[] = {"codes", "scales", "scale_inv"};
      for (int w = 0; w < 3; ++w) {
        std::fill(codes.begin(), codes.end(), 0xA5), std::fill(scales.begin(), scales.end(), 0xA5);
        std::fill(scale_inv.begin(), scale_inv.end(), -1.0f);
        try {
          quantize_into(std::as_bytes(std::span(x)), kF32, c.shape, o, wrong[w]);
          ADD_FAILURE() << name << ": a " << named[w] << " span of another size was taken";
        } catch (const std::invalid_argument& e) {
          EXPECT_NE(std::string(e.what()).find(std::string("quantize_into: ") + named[w] + " holds"), std::string::npos)
              << e.what();
        }
        for (const auto* v : {&codes, &scales, &big, &more})
          EXPECT_TRUE(std::all_of(v->begin(), v->end(), [](std::uint8_t b) { return b == 0xA5; })) << name;
        for (const auto* v : {&scale_inv, &other})
          EXPECT_TRUE(std::all_of(v->begin(), v->end(), [](float f) { return f == -1.0f; })) << name;
      }
    }
}

TEST(Quantize, ElementCountsThatOverflowAreRefused) {
  // 2^62 fp32 elements need 2^64 bytes: the size check must not wrap around to 0
  const std::uint64_t huge[] = {std::uint64_t{1} << 62};
  try {
    quantize({}, kF32, huge, {});
    FAIL() << "an empty buffer passed for 2^62 elements";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("do not hold"), std::string::npos) << e.what();
  }
  const std::uint64_t too_many[] = {std::uint64_t{1} << 40, std::uint64_t{1} << 40};
  EXPECT_THROW(quantize({}, kF32, too_many, {}), std::invalid_argument);
}

TEST(Dequantize, RefusesAGridScalesOrOutputThatDoNotFitTheTensor) {
  const auto x = random_tensor(4 * 64, 3, false);
  const std::uint64_t shape[] = {4, 64};
  QuantizeOptions o;
  o.granularity = Granularity::block(2, 32);
  const QuantizedTensor good = quantize(std::as_bytes(std::span(x)), kF32, shape, o);
  std::vector<float> y(x.size());
  auto refused = [&](const QuantizedTensor& q, const std::string& says) {
    try {
      dequantize(q, std::as_writable_bytes(std::span(y)), kF32);
      ADD_FAILURE() << "accepted; expected an error saying '" << says << "'";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  QuantizedTensor q = good;
  q.grid.block_rows = 0;  // would divide by zero
  refused(q, "is not the block2x32 grid of the shape");
  q = good;
  q.grid.block_cols = 64;  // a grid of fewer blocks than the scales describe
  refused(q, "grid");
  q = good;
  q.scale_inv.push_back(1.0f);  // one scale too many
  refused(q, "5 scale_inv values for 4 blocks");
  q = good;
  q.scale_inv.pop_back();
  refused(q, "3 scale_inv values for 4 blocks");
  q = good;
  q.shape = {8, 32};  // same element count, another matrix
  refused(q, "grid");
  // a byte that is no e2m3 code (6-bit codes): named, not decoded as NaN
  o.element = FormatId::kE2M3;
  QuantizedTensor six = quantize(std::as_bytes(std::span(x)), kF32, shape, o);
  six.codes[77] = 0xFF;
  refused(six, "element 77: byte 255 is not a e2m3 code");
  std::vector<float> short_y(x.size() - 1);
  EXPECT_THROW(dequantize(good, std::as_writable_bytes(std::span(short_y)), kF32), std::invalid_argument);
  q = good;
  q.scale_inv[2] = -std::numeric_limits<float>::quiet_NaN();  // not a multiplier quantize() makes
  refused(q, "scale_inv[2] = -nan is not a finite positive multiplier");
  q = good;
  q.scale_inv[1] = 0.0f;
  refused(q, "scale_inv[1] = 0 is not a finite positive multiplier");
  EXPECT_THROW(dequantize(good, std::as_writable_bytes(std::span(y)), kF32, 0), std::invalid_argument);
  // e2m1 of an odd last dimension: the same words as quantize(), not the unpacker's
  QuantizedTensor odd;
  odd.element = FormatId::kE2M1;
  odd.shape = {3};
  odd.granularity = Granularity::tensor();
  odd.grid = {1, 3, 1, 3};
  odd.codes = {0x11};
  odd.scale_inv = {1.0f};
  std::vector<float> three(3);
  try {
    dequantize(odd, std::as_writable_bytes(std::span(three)), kF32);
    ADD_FAILURE() << "an odd e2m1 tensor was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("the last dimension must be even; it is 3"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(dequantize(good, std::as_writable_bytes(std::span(y)), kF32));
}

// A block far larger than the tensor is one block: its ceiling must not wrap around (a block
// of 2^64 - 1 rows made a grid of 0 blocks, and quantize() and dequantize() crashed).
TEST(Quantize, BlocksLargerThanTheTensorAreOneBlock) {
  const auto x = random_tensor(4 * 6, 5, false);
  const std::uint64_t shape[] = {4, 6};
  const auto g = parse_granularity("block18446744073709551615x1");
  ASSERT_TRUE(g.has_value());
  QuantizeOptions o;
  o.granularity = *g;
  const QuantizedTensor q = quantize(std::as_bytes(std::span(x)), kF32, shape, o);
  EXPECT_EQ(q.grid.grid_rows(), 1u);
  EXPECT_EQ(q.grid.grid_cols(), 6u);
  ASSERT_EQ(q.scale_inv.size(), 6u);
  QuantizeOptions per_col;
  per_col.granularity = Granularity::column();
  const QuantizedTensor want = quantize(std::as_bytes(std::span(x)), kF32, shape, per_col);
  EXPECT_EQ(q.codes, want.codes);
  EXPECT_EQ(q.scale_inv, want.scale_inv);
  std::vector<float> y(x.size());
  dequantize(q, std::as_writable_bytes(std::span(y)), kF32);
}

TEST(Dequantize, OneRoundingOfCodeTimesScale) {
  const auto x = random_tensor(6 * 260, 77, true);
  const std::uint64_t shape[] = {6, 260};
  for (FormatId id : {FormatId::kE4M3FN, FormatId::kE2M1, FormatId::kE2M3, FormatId::kE3M2, FormatId::kE5M2FNUZ})
  for (Granularity g : {Granularity::block(1, 128), Granularity::mx(), Granularity::tensor()}) {
    QuantizeOptions o;
    o.granularity = g;
    o.element = id;
    o.convert.nan = NanPolicy::kZero;  // the tensor holds NaN; some formats have none
    const Format& elem = format_of(id);
    const QuantizedTensor q = quantize(std::as_bytes(std::span(x)), kF32, shape, o);
    std::vector<float> y(x.size());
    dequantize(q, std::as_writable_bytes(std::span(y)), kF32);
    for (std::size_t i = 0; i < y.size(); ++i) {
      const std::size_t b = q.grid.scale_index(i / 260, i % 260);
      // e2m1: two codes per byte, element 2k in the low nibble
      const std::uint8_t code = q.packed() ? (q.codes[i / 2] >> (4 * (i % 2))) & 0xF : q.codes[i];
      const double v = decode_f64(code, elem);
      const double s = g.kind == GranularityKind::kMx ? (q.scales[b] == 0xFF ? NAN : std::ldexp(1.0, q.scales[b] - 127))
                                                      : static_cast<double>(q.scale_inv[b]);
      const float want = static_cast<float>(v * s);  // exact product in double, one rounding
      if (std::isnan(want)) {
        ASSERT_TRUE(std::isnan(y[i])) << i;
      } else {
        ASSERT_EQ(bits_of(y[i]), bits_of(want)) << elem.name << " " << granularity_name(g) << " element " << i;
      }
    }
    std::vector<std::uint16_t> bf(x.size());
    dequantize(q, std::as_writable_bytes(std::span(bf)), kBF16, 2);
    for (std::size_t i = 0; i < y.size(); ++i)
      ASSERT_EQ(bf[i], convert_one(bits_of(y[i]), kF32, kBF16, {.overflow = Overflow::kInfOrNan}).code) << i;
  }
}

TEST(Fp4Packing, EvenElementInTheLowNibble) {
  const std::uint8_t codes[] = {0x1, 0x2, 0xF, 0x0};
  std::uint8_t packed[2];
  pack_fp4(codes, packed);
  EXPECT_EQ(packed[0], 0x21);
  EXPECT_EQ(packed[1], 0x0F);
  std::uint8_t back[4];
  unpack_fp4(packed, back);
  EXPECT_EQ(0, std::memcmp(back, codes, 4));
}

// Every pair of byte values (high bits set too: the low nibble of the even code, the low nibble
// of the odd one shifted up) in arrays long enough for the vector body, at every length to 40
// pairs for the tail.
TEST(Fp4Packing, EveryPairOfBytesAtEveryLength) {
  std::vector<std::uint8_t> codes(2 * 65536);
  for (std::size_t i = 0; i < 65536; ++i) {
    codes[2 * i] = static_cast<std::uint8_t>(i & 0xFF);
    codes[2 * i + 1] = static_cast<std::uint8_t>(i >> 8);
  }
  auto formula = [&](std::size_t i) { return static_cast<std::uint8_t>((codes[2 * i] & 0xF) | ((codes[2 * i + 1] & 0xF) << 4)); };
  std::vector<std::uint8_t> packed(65536);
  pack_fp4(codes, packed);
  for (std::size_t i = 0; i < packed.size(); ++i) ASSERT_EQ(packed[i], formula(i)) << "pair " << i;
  for (std::size_t pairs = 0; pairs <= 40; ++pairs) {
    std::vector<std::uint8_t> p(pairs, 0xAA);
    pack_fp4(std::span<const std::uint8_t>(codes).subspan(2 * 997, 2 * pairs), p);
    for (std::size_t i = 0; i < pairs; ++i) ASSERT_EQ(p[i], formula(997 + i)) << pairs << " pairs, pair " << i;
  }
}

}  // namespace
}  // namespace fp8q
