// measure_error() and first_nonfinite() (checkpoint/src/pipeline/error_stats.cpp): every
// kernel path against the plain definition, bit for bit.
//   - PlainDefinition: measure_error() against the formula of error_stats.hpp and
//     error_kernels.hpp written out here element by element (test_reference below);
//   - StretchKernels: each vector kernel (fast path and masked fallback) against the generic one
//     on adversarial stretches: NaN, +/-Inf, -0, zeros, subnormals, FLT_MAX, saturating
//     values, NaN / Inf codes, NaN / Inf / zero / subnormal / huge multipliers, per-element
//     (MX) multipliers, every length 0..70 (odd tails), F32 / BF16 / F16, five element formats;
//   - WholeViews: measure_error_isa() on the views the layouts make, generic vs each vector path, for
//     thread counts 1..4, and under a caller's flush-to-zero / denormals-are-zero;
//   - Scan: first_nonfinite() generic vs each vector path, each position and length.
// The vector paths are those of the kernel table this CPU runs: AVX2 + F16C (also on AVX-512
// CPUs) and NEON; a CPU with neither runs the generic cases only.
#include <gtest/gtest.h>

#include <bit>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include "fp8q/checkpoint/error_stats.hpp"
#include "fp8q/numerics/convert.hpp"
#include "fp8q/numerics/isa.hpp"
#include "pipeline/error_kernels.hpp"

#include "hostile_fp_env.hpp"
#include "thread_counts.hpp"

namespace fp8q::checkpoint {
namespace {

using detail::Stretch;

// The vector kernel tables this binary has and this CPU runs, with their ISA.
std::vector<std::pair<Isa, const detail::ErrorKernels*>> vector_kernels() {
  std::vector<std::pair<Isa, const detail::ErrorKernels*>> v;
  if (isa_supported(Isa::kAvx2) && detail::error_kernels_avx2() != nullptr)
    v.emplace_back(Isa::kAvx2, detail::error_kernels_avx2());
  if (isa_supported(Isa::kNeon) && detail::error_kernels_neon() != nullptr)
    v.emplace_back(Isa::kNeon, detail::error_kernels_neon());
  return v;
}
std::string name_of(Isa isa) { return std::string(isa_name(isa)); }

// Every field, doubles compared by their bits (so -0.0 != +0.0 and NaN payloads count).
void expect_same(const ErrorStats& a, const ErrorStats& b, const std::string& what) {
  EXPECT_EQ(a.count, b.count) << what;
  EXPECT_EQ(a.nonfinite, b.nonfinite) << what;
  EXPECT_EQ(a.saturated, b.saturated) << what;
  EXPECT_EQ(std::bit_cast<std::uint64_t>(a.sum_sq_signal), std::bit_cast<std::uint64_t>(b.sum_sq_signal))
      << what << ": " << a.sum_sq_signal << " vs " << b.sum_sq_signal;
  EXPECT_EQ(std::bit_cast<std::uint64_t>(a.sum_sq_error), std::bit_cast<std::uint64_t>(b.sum_sq_error))
      << what << ": " << a.sum_sq_error << " vs " << b.sum_sq_error;
  EXPECT_EQ(std::bit_cast<std::uint64_t>(a.max_abs_error), std::bit_cast<std::uint64_t>(b.max_abs_error))
      << what << ": " << a.max_abs_error << " vs " << b.max_abs_error;
}

// ---- raw inputs ---------------------------------------------------------------------------------

// One element's storage bits in `dtype`, from a pool of awkward values or random bits.
std::uint32_t awkward_bits(std::mt19937& rng, DType dtype, float typical) {
  const float pool[] = {0.0f,     -0.0f,     std::numeric_limits<float>::quiet_NaN(), INFINITY, -INFINITY,
                        FLT_MAX,  -FLT_MAX,  1e-45f /* min subnormal */,              -1e-40f,  1e30f,
                        typical,  -typical,  typical * 3.0f,                          448.0f,   65504.0f};
  const std::uint32_t pick = rng() % 24;
  float v;
  if (pick < std::size(pool)) {
    v = pool[pick];
  } else if (pick < 20) {  // random bits: every exponent, NaN payloads, subnormals
    const std::uint32_t r = rng();
    return dtype == DType::kF32 ? r : (r & 0xFFFF);
  } else {
    v = typical * static_cast<float>(static_cast<std::int32_t>(rng() % 2001) - 1000) / 1000.0f;
  }
  if (dtype == DType::kF32) return std::bit_cast<std::uint32_t>(v);
  ConvertOptions keep;
  keep.overflow = Overflow::kInfOrNan;
  return static_cast<std::uint32_t>(encode_f32(v, dtype == DType::kBF16 ? kBF16 : kF16, keep));
}

std::vector<std::byte> store(const std::vector<std::uint32_t>& bits, DType dtype) {
  const std::size_t w = dtype_bytes(dtype);
  std::vector<std::byte> out(bits.size() * w);
  for (std::size_t i = 0; i < bits.size(); ++i) std::memcpy(out.data() + i * w, &bits[i], w);
  return out;
}

float value_of(std::uint32_t bits, DType dtype) {
  if (dtype == DType::kF32) return std::bit_cast<float>(bits);
  return decode_f32(bits, dtype == DType::kBF16 ? kBF16 : kF16);
}

float awkward_scale(std::mt19937& rng) {
  const float pool[] = {0.0f, std::numeric_limits<float>::quiet_NaN(), INFINITY, FLT_MAX, 1e-45f, 1e-40f,
                        std::ldexp(1.0f, 127), std::ldexp(1.0f, -127), 1.0f};
  const std::uint32_t pick = rng() % 16;
  if (pick < std::size(pool)) return pool[pick];
  return std::ldexp(1.0f + static_cast<float>(rng() % 1000) / 1000.0f, static_cast<int>(rng() % 40) - 30);
}

// ---- the plain definition, written out ---------------------------------------------------------

// error_stats.hpp / error_kernels.hpp element by element: rows in chunks of 2^16 elements
// (whole rows), chunk sums merged in order; per stretch four partial sums, element 4j + k
// into k for the first 4 * floor(n / 4), the rest into 0; (p0 + p1) + (p2 + p3) per stretch.
ErrorStats test_reference(const std::vector<float>& x, const DequantView& v) {
  const Format& f = format_of(v.element);
  const double clip = f.max_finite() + std::ldexp(1.0, f.emax() - f.man_bits - 1);
  const std::size_t chunk_rows = std::max<std::size_t>(1, (std::size_t{1} << 16) / std::max<std::size_t>(v.cols, 1));
  ErrorStats total;
  for (std::size_t r0 = 0; r0 < v.rows; r0 += chunk_rows) {
    ErrorStats st;
    for (std::size_t r = r0; r < std::min(v.rows, r0 + chunk_rows); ++r) {
      std::vector<std::pair<std::size_t, std::size_t>> stretches;
      if (v.mx) {
        stretches.push_back({0, v.cols});
      } else {
        for (std::size_t c0 = 0; c0 < v.cols; c0 += v.grid.block_cols)
          stretches.push_back({c0, std::min(v.cols, c0 + v.grid.block_cols)});
      }
      for (auto [c0, c1] : stretches) {
        double sig[4] = {0, 0, 0, 0}, err[4] = {0, 0, 0, 0};
        const std::size_t n = c1 - c0, full = n / 4 * 4;
        for (std::size_t i = 0; i < n; ++i) {
          const std::size_t c = c0 + i, k = i < full ? i % 4 : 0;
          const float xv = x[r * v.cols + c];
          const float s = v.scale(r, c);
          const float xh = static_cast<float>(decode_f32(v.codes[r * v.cols + c], f)) * s;
          if (!std::isfinite(xv) || !std::isfinite(xh)) {
            ++st.nonfinite;
            continue;
          }
          const double d = xv, e = d - static_cast<double>(xh);
          ++st.count;
          sig[k] += d * d;
          err[k] += e * e;
          st.max_abs_error = std::max(st.max_abs_error, std::fabs(e));
          if (std::fabs(d) > clip * static_cast<double>(s)) ++st.saturated;
        }
        st.sum_sq_signal += (sig[0] + sig[1]) + (sig[2] + sig[3]);
        st.sum_sq_error += (err[0] + err[1]) + (err[2] + err[3]);
      }
    }
    total.merge(st);
  }
  return total;
}

// ---- views --------------------------------------------------------------------------------------

struct Case {
  std::string name;
  DType dtype;
  std::vector<std::uint32_t> bits;  // the original, [rows, cols]
  DequantView view;
};

// Codes as a quantizer would give them (x / s nearest-even, saturating), with some NaN codes
// and random bytes mixed in when `wild`.
std::uint8_t code_for(float x, float s, const Format& f, std::mt19937& rng, bool wild) {
  if (wild && rng() % 16 == 0) return static_cast<std::uint8_t>(rng());
  ConvertOptions sat;
  sat.overflow = Overflow::kSaturate;
  return static_cast<std::uint8_t>(encode_f32(x / s, f, sat));
}

Case grid_case(std::string name, DType dtype, FormatId element, std::size_t rows, std::size_t cols, std::size_t br,
               std::size_t bc, std::uint32_t seed, bool wild) {
  std::mt19937 rng(seed);
  Case c{std::move(name), dtype, {}, {}};
  const Format& f = format_of(element);
  c.bits.resize(rows * cols);
  for (auto& b : c.bits) {
    if (wild) {
      b = awkward_bits(rng, dtype, 0.03f);
    } else {
      const float v = 0.05f * static_cast<float>(static_cast<std::int32_t>(rng() % 20001) - 10000) / 10000.0f;
      b = dtype == DType::kF32 ? std::bit_cast<std::uint32_t>(v)
                               : static_cast<std::uint32_t>(encode_f32(v, dtype == DType::kBF16 ? kBF16 : kF16));
    }
  }
  DequantView& v = c.view;
  v.element = element;
  v.rows = rows;
  v.cols = cols;
  v.grid = {rows, cols, br, bc};
  v.scale_inv.resize(v.grid.grid_size());
  for (auto& s : v.scale_inv) s = wild ? awkward_scale(rng) : 0.05f / static_cast<float>(f.max_finite()) * (1.0f + (rng() % 8) / 8.0f);
  v.codes.resize(rows * cols);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t col = 0; col < cols; ++col) {
      const float s = v.scale_inv[v.grid.scale_index(r, col)];
      v.codes[r * cols + col] = code_for(value_of(c.bits[r * cols + col], dtype), s, f, rng, wild);
    }
  return c;
}

// MX: E8M0 multipliers per group; `groups_of` maps a column to its group (OCP: c / 32).
Case mx_case(std::string name, DType dtype, std::size_t rows, std::size_t cols, bool permuted, std::uint32_t seed,
             bool wild) {
  Case c = grid_case(std::move(name), dtype, FormatId::kE4M3FN, rows, cols, 1, cols, seed, wild);
  std::mt19937 rng(seed + 1);
  DequantView& v = c.view;
  v.mx = true;
  v.groups_per_row = (cols + 31) / 32;
  v.group_of_col.resize(cols);
  for (std::size_t col = 0; col < cols; ++col)
    v.group_of_col[col] = static_cast<std::uint32_t>(permuted ? (col * 7 + col / 5) % v.groups_per_row : col / 32);
  v.e8m0.resize(rows * v.groups_per_row);
  for (auto& e : v.e8m0) {
    const std::uint32_t pick = rng() % 32;
    e = wild && pick == 0 ? 0xFF : wild && pick == 1 ? 0 : wild && pick == 2 ? 254 : static_cast<std::uint8_t>(118 + rng() % 6);
  }
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t col = 0; col < cols; ++col)
      v.codes[r * cols + col] = code_for(value_of(c.bits[r * cols + col], dtype), v.scale(r, col), kE4M3FN, rng, wild);
  return c;
}

std::vector<Case> cases() {
  std::vector<Case> cs;
  std::uint32_t seed = 1;
  for (DType d : {DType::kBF16, DType::kF32, DType::kF16}) {
    const std::string dn(dtype_name(d));
    for (bool wild : {false, true}) {
      const std::string w = wild ? "_wild" : "_clean";
      cs.push_back(grid_case("block128_" + dn + w, d, FormatId::kE4M3FN, 300, 391, 128, 128, seed++, wild));
      cs.push_back(grid_case("channel_" + dn + w, d, FormatId::kE4M3FN, 37, 1029, 1, 1029, seed++, wild));
      cs.push_back(grid_case("tensor_" + dn + w, d, FormatId::kE4M3, 50, 77, 50, 77, seed++, wild));
      cs.push_back(grid_case("e5m2_" + dn + w, d, FormatId::kE5M2, 20, 203, 4, 13, seed++, wild));
      cs.push_back(grid_case("fnuz_" + dn + w, d, FormatId::kE4M3FNUZ, 20, 203, 1, 203, seed++, wild));
      cs.push_back(grid_case("tall_" + dn + w, d, FormatId::kE4M3FN, 70000, 3, 128, 128, seed++, wild));
      cs.push_back(mx_case("mx_" + dn + w, d, 40, 321, false, seed++, wild));
      cs.push_back(mx_case("mx_permuted_" + dn + w, d, 40, 320, true, seed++, wild));
    }
  }
  return cs;
}

ErrorStats run(const Case& c, int threads, Isa isa) {
  const auto bytes = store(c.bits, c.dtype);
  return detail::measure_error_isa(bytes, c.dtype, c.view, threads, isa);
}

TEST(PlainDefinition, MeasureErrorIsTheFormula) {
  for (const Case& c : cases()) {
    std::vector<float> x(c.bits.size());
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = value_of(c.bits[i], c.dtype);
    const auto bytes = store(c.bits, c.dtype);
    expect_same(measure_error(bytes, c.dtype, c.view, 2), test_reference(x, c.view), c.name);
  }
}

TEST(WholeViews, EveryPathAndThreadCountGiveTheGenericBits) {
  const auto vector = vector_kernels();
  for (const Case& c : cases()) {
    const ErrorStats want = run(c, 1, Isa::kGeneric);
    for (int t = 1; t <= 4; ++t) {
      expect_same(run(c, t, Isa::kGeneric), want, c.name + " generic threads " + std::to_string(t));
      for (const auto& [isa, k] : vector)
        expect_same(run(c, t, isa), want, c.name + " " + name_of(isa) + " threads " + std::to_string(t));
    }
  }
  if (vector.empty()) GTEST_SKIP() << "no vector path on this CPU: only the generic path ran";
}

// The pipeline runs ErrorMeasurement's chunks in whatever order its threads take them
// (pipeline::WriteJob), reusing one Scratch for chunks of different rows: the figures
// must be measure_error()'s whatever the order. Chunks here are run last to first, and
// interleaved from both ends, with one shared Scratch.
TEST(WholeViews, ChunksInAnyOrderGiveTheSameBits) {
  std::vector<Isa> isas = {Isa::kGeneric};
  for (const auto& [isa, k] : vector_kernels()) isas.push_back(isa);
  for (const Case& c : cases()) {
    const auto bytes = store(c.bits, c.dtype);
    for (Isa isa : isas) {
      const ErrorStats want = detail::measure_error_isa(bytes, c.dtype, c.view, 1, isa);
      detail::ErrorMeasurement backwards(bytes, c.dtype, c.view, isa);
      detail::ErrorMeasurement::Scratch scratch;
      for (std::size_t k = backwards.chunks(); k-- > 0;) backwards.measure_chunk(k, scratch);
      expect_same(backwards.total(), want, c.name + " chunks backwards");
      detail::ErrorMeasurement ends(bytes, c.dtype, c.view, isa);
      for (std::size_t lo = 0, hi = ends.chunks(); lo < hi;) {
        ends.measure_chunk(lo++, scratch);
        if (lo < hi) ends.measure_chunk(--hi, scratch);
      }
      expect_same(ends.total(), want, c.name + " chunks from both ends");
    }
  }
}

// A caller with flush-to-zero and denormals-are-zero set gets the IEEE-default figures:
// tiny multipliers make fp32(decode(q) * s) subnormal, which FTZ / DAZ would change.
TEST(WholeViews, CallerFlushToZeroChangesNothing) {
  Case c = grid_case("tiny", DType::kF32, FormatId::kE4M3FN, 64, 200, 16, 16, 99, false);
  std::mt19937 rng(5);
  for (auto& s : c.view.scale_inv) s = std::ldexp(1.0f + (rng() % 8) / 8.0f, -140);  // subnormal multipliers
  for (std::size_t i = 0; i < c.bits.size(); ++i) {
    const float x = std::ldexp(static_cast<float>(static_cast<std::int32_t>(rng() % 801) - 400), -142);
    c.bits[i] = std::bit_cast<std::uint32_t>(x);
    const float s = c.view.scale_inv[c.view.grid.scale_index(i / 200, i % 200)];
    c.view.codes[i] = code_for(x, s, kE4M3FN, rng, false);
  }
  const ErrorStats want = run(c, 2, Isa::kGeneric);
  EXPECT_GT(want.sum_sq_error, 0.0);
  std::vector<Isa> isas = {Isa::kGeneric};
  for (const auto& [isa, k] : vector_kernels()) isas.push_back(isa);
  for (Isa isa : isas) {
    ErrorStats got;
    {
      test::ScopedHostileFpEnv env(test::HostileRounding::kKeep);  // flush-to-zero
      got = run(c, 2, isa);
      EXPECT_EQ(test::fp_control(), env.hostile());  // the caller's environment is restored
    }
    expect_same(got, want, name_of(isa) + " under FTZ/DAZ");
  }
}

// ---- stretch by stretch -------------------------------------------------------------------------

TEST(StretchKernels, ArithmeticDecodeHoldsForTheIeeeLikeFormats) {
  for (FormatId id : {FormatId::kE4M3FN, FormatId::kE4M3, FormatId::kE5M2}) {
    const Format& f = format_of(id);
    std::array<float, 256> decoded{};
    for (std::size_t q = 0; q < 256; ++q) decoded[q] = decode_f32(q, f);
    Stretch s;
    s.decoded = decoded.data();
    detail::arithmetic_decode(s, f.man_bits, f.bias);
    EXPECT_GE(s.decode_shift, 0) << f.name;
    for (std::uint32_t q = 0; q < 256; ++q)
      EXPECT_EQ((q & 0x7F) >= s.special_from, !std::isfinite(decoded[q])) << f.name << " code " << q;
  }
  // e4m3fnuz: 0x80 is NaN, not -0: the table is not of that form; the masked kernel measures.
  std::array<float, 256> decoded{};
  for (std::size_t q = 0; q < 256; ++q) decoded[q] = decode_f32(q, kE4M3FNUZ);
  Stretch s;
  s.decoded = decoded.data();
  detail::arithmetic_decode(s, kE4M3FNUZ.man_bits, kE4M3FNUZ.bias);
  EXPECT_LT(s.decode_shift, 0);
}

TEST(StretchKernels, VectorKernelsGiveTheGenericBitsOnAdversarialStretches) {
  const auto vector = vector_kernels();
  if (vector.empty()) GTEST_SKIP() << "no vector path on this CPU";
  std::mt19937 rng(2024);
  int fast_candidates = 0;
  for (FormatId id : {FormatId::kE4M3FN, FormatId::kE4M3, FormatId::kE5M2, FormatId::kE4M3FNUZ, FormatId::kE5M2FNUZ}) {
    const Format& f = format_of(id);
    std::array<float, 256> decoded{};
    for (std::size_t q = 0; q < 256; ++q) decoded[q] = decode_f32(q, f);
    for (DType d : {DType::kF32, DType::kBF16, DType::kF16}) {
      for (std::size_t n = 0; n <= 70; ++n) {
        for (int trial = 0; trial < 12; ++trial) {
          // trial 0..3: clean (the fast path's case); 4..7: one awkward element; 8..11: wild
          const bool per_element = trial % 2 == 1;
          const float typical = 0.02f;
          Stretch s;
          s.dtype = d;
          s.n = n;
          s.decoded = decoded.data();
          s.clip = f.max_finite() + std::ldexp(1.0, f.emax() - f.man_bits - 1);
          detail::arithmetic_decode(s, f.man_bits, f.bias);
          s.scale = trial < 8 ? typical / static_cast<float>(f.max_finite()) : awkward_scale(rng);
          std::vector<float> scales(n);
          for (auto& sc : scales) sc = trial < 8 ? std::ldexp(1.0f, -12 - static_cast<int>(rng() % 3)) : awkward_scale(rng);
          std::vector<std::uint32_t> bits(n);
          std::vector<std::uint8_t> codes(n);
          for (std::size_t i = 0; i < n; ++i) {
            const float sc = per_element ? scales[i] : s.scale;
            const float x = typical * static_cast<float>(static_cast<std::int32_t>(rng() % 2001) - 1000) / 1000.0f;
            bits[i] = awkward_bits(rng, d, typical);
            if (trial < 4 || (trial < 8 && i != n / 2)) {
              bits[i] = d == DType::kF32 ? std::bit_cast<std::uint32_t>(x)
                                         : static_cast<std::uint32_t>(encode_f32(x, d == DType::kBF16 ? kBF16 : kF16));
            }
            codes[i] = code_for(value_of(bits[i], d), sc, f, rng, trial >= 8);
          }
          const auto bytes = store(bits, d);
          s.x = bytes.data();
          s.codes = codes.data();
          s.scales = per_element ? scales.data() : nullptr;
          if (trial < 4 && s.decode_shift >= 0 && n >= 8) ++fast_candidates;
          // start from figures already gathered: the stretch adds to them
          ErrorStats a;
          a.count = 5;
          a.sum_sq_signal = 0.125;
          a.sum_sq_error = 1e-9;
          a.max_abs_error = trial % 3 == 0 ? 0.0 : 1e-6;
          const ErrorStats before = a;
          detail::stretch_generic({&s, 1}, a);
          for (const auto& [isa, k] : vector) {
            ErrorStats b = before;
            k->stretch({&s, 1}, b);
            expect_same(b, a,
                        name_of(isa) + " " + std::string(f.name) + " " + std::string(dtype_name(d)) +
                            " n=" + std::to_string(n) + " trial " + std::to_string(trial));
          }
          if (::testing::Test::HasFailure()) return;
        }
      }
    }
  }
  EXPECT_GT(fast_candidates, 1000);
}

// Each F16 code once, as an original element: the vector widening (vcvtph2ps, fcvtl) and the
// generic table agree.
TEST(StretchKernels, EveryF16CodeMeasuresAlike) {
  const auto vector = vector_kernels();
  if (vector.empty()) GTEST_SKIP() << "no vector path on this CPU";
  std::array<float, 256> decoded{};
  for (std::size_t q = 0; q < 256; ++q) decoded[q] = decode_f32(q, kE4M3FN);
  std::vector<std::uint32_t> bits(65536);
  std::vector<std::uint8_t> codes(65536);
  for (std::uint32_t c = 0; c < 65536; ++c) {
    bits[c] = c;
    codes[c] = static_cast<std::uint8_t>(c * 37);
    if ((codes[c] & 0x7F) == 0x7F) codes[c] = 0;  // no NaN code: only the originals are non-finite
  }
  const auto bytes = store(bits, DType::kF16);
  std::vector<Stretch> ss;
  for (std::size_t i = 0; i < 65536; i += 64) {
    Stretch s;
    s.x = bytes.data() + 2 * i;
    s.dtype = DType::kF16;
    s.codes = codes.data() + i;
    s.n = 64;
    s.scale = 1.0f / 64;
    s.decoded = decoded.data();
    s.clip = 464;
    detail::arithmetic_decode(s, kE4M3FN.man_bits, kE4M3FN.bias);
    ss.push_back(s);
  }
  ErrorStats a;
  detail::stretch_generic(ss, a);
  for (const auto& [isa, k] : vector) {
    ErrorStats b;
    k->stretch(ss, b);
    expect_same(b, a, name_of(isa) + " all F16 codes");
  }
  EXPECT_EQ(a.nonfinite, 2048u);  // exponent all ones: 2 signs x 1024 mantissas
}

// ---- the NaN / Inf scan -------------------------------------------------------------------------

TEST(Scan, FirstNonfiniteIsTheFirstIndexOnEveryPath) {
  const auto vector = vector_kernels();
  for (DType d : {DType::kF32, DType::kBF16, DType::kF16}) {
    const std::uint32_t inf = d == DType::kF32 ? 0x7F800000u : d == DType::kBF16 ? 0x7F80u : 0x7C00u;
    const std::uint32_t nan = d == DType::kF32 ? 0xFFC00001u : d == DType::kBF16 ? 0xFFC1u : 0xFE01u;
    const std::uint32_t big = d == DType::kF32 ? 0x7F7FFFFFu : d == DType::kBF16 ? 0x7F7Fu : 0x7BFFu;  // max finite
    for (std::size_t n : {0u, 1u, 63u, 64u, 65u, 200u, 70001u}) {
      for (std::size_t at : {std::size_t{0}, n / 3, n > 0 ? n - 1 : 0, n /* none */}) {
        std::vector<std::uint32_t> bits(n, big);
        if (at < n) bits[at] = (at % 2) ? nan : inf;
        if (at + 5 < n) bits[at + 5] = nan;  // a later one does not matter
        const auto bytes = store(bits, d);
        const std::optional<std::uint64_t> want = at < n ? std::optional<std::uint64_t>(at) : std::nullopt;
        for (int t : test::kThreadCounts) {
          EXPECT_EQ(detail::first_nonfinite_isa(bytes, d, t, Isa::kGeneric), want) << n << " " << at;
          for (const auto& [isa, k] : vector)
            EXPECT_EQ(detail::first_nonfinite_isa(bytes, d, t, isa), want) << name_of(isa) << " " << n << " " << at;
        }
        EXPECT_EQ(first_nonfinite(bytes, d, 2), want);
      }
    }
  }
}

TEST(Scan, BadArgumentsAreRefused) {
  std::vector<std::byte> b(8);
  EXPECT_THROW(first_nonfinite(b, DType::kU8), std::invalid_argument);
  DequantView v;
  v.rows = 1;
  v.cols = 4;
  v.codes.resize(4);
  v.grid = {1, 4, 1, 4};
  v.scale_inv = {1.0f};
  EXPECT_THROW(measure_error(b, DType::kU8, v), std::invalid_argument);
  EXPECT_THROW(measure_error(std::span(b).first(6), DType::kBF16, v), std::invalid_argument);  // size
  for (Isa isa : kAllIsas)
    if (!isa_supported(isa)) {  // a forced path this CPU lacks, named
      EXPECT_THROW(measure_error(b, DType::kBF16, v, 1, isa), std::invalid_argument);
      EXPECT_THROW(first_nonfinite(b, DType::kBF16, 1, isa), std::invalid_argument);
    }
  v.scale_inv.clear();
  EXPECT_THROW(measure_error(b, DType::kBF16, v), std::invalid_argument);  // scales
}

}  // namespace
}  // namespace fp8q::checkpoint
