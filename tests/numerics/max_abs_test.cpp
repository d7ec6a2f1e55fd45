// fp8q/numerics/max_abs.hpp on every compiled path (baseline SSE2, AVX2; AVX-512 machines run
// the AVX2 kernels), against a plain loop over the patterns: every length up to a few vectors
// and past them (the vector body and the scalar tail), every start offset within a vector, a
// NaN, an Inf or the maximum at every position, and every bf16 / fp16 pattern.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "fp8q/numerics/isa.hpp"
#include "fp8q/numerics/max_abs.hpp"
#include "on_isa.hpp"

namespace fp8q {
namespace {

std::uint32_t plain_max(const std::vector<std::uint32_t>& p, std::size_t off, std::size_t n) {
  std::uint32_t m = 0;
  for (std::size_t i = off; i < off + n; ++i) m = std::max(m, p[i] & 0x7FFFFFFFu);
  return m;
}
std::uint16_t plain_max(const std::vector<std::uint16_t>& p, std::size_t off, std::size_t n) {
  std::uint16_t m = 0;
  for (std::size_t i = off; i < off + n; ++i) m = std::max<std::uint16_t>(m, p[i] & 0x7FFF);
  return m;
}

std::span<const float> as_floats(const std::vector<std::uint32_t>& p, std::size_t off, std::size_t n) {
  return {reinterpret_cast<const float*>(p.data()) + off, n};
}

class MaxAbsOnIsa : public test::OnIsa {};

// Lengths 0 .. 100 and a few longer ones, offsets 0 .. 16 elements: random patterns of both
// signs, then the same with one special value (NaN, +Inf, -Inf, the largest finite of either
// sign, -0) written at each position in turn.
TEST_P(MaxAbsOnIsa, Fp32PatternsEveryLengthOffsetAndPosition) {
  std::mt19937 rng(11);
  std::vector<std::uint32_t> p(4200 + 16);
  const std::uint32_t specials[] = {0x7FC00000u, 0xFFC00001u, 0x7F800000u, 0xFF800000u, 0x7F7FFFFFu, 0xFF7FFFFFu,
                                    0x80000000u, 0x00000001u};
  std::vector<std::size_t> lengths;
  for (std::size_t n = 0; n <= 100; ++n) lengths.push_back(n);
  for (std::size_t n : {255, 256, 257, 1023, 4099, 4200}) lengths.push_back(n);
  for (std::size_t n : lengths)
    for (std::size_t off = 0; off <= 16; off += (n > 100 ? 5 : 1)) {
      // magnitudes kept below 2^30 so that a special value is the largest when present
      for (auto& v : p) v = rng() & 0xBFFFFFFFu;
      ASSERT_EQ(max_abs_bits(as_floats(p, off, n), GetParam()), plain_max(p, off, n)) << "n " << n << " offset " << off;
      if (n > 100) continue;
      for (std::uint32_t s : specials)
        for (std::size_t pos = 0; pos < n; ++pos) {
          const std::uint32_t keep = p[off + pos];
          p[off + pos] = s;
          ASSERT_EQ(max_abs_bits(as_floats(p, off, n), GetParam()), plain_max(p, off, n))
              << "n " << n << " offset " << off << " special " << std::hex << s << " at " << std::dec << pos;
          p[off + pos] = keep;
        }
    }
}

TEST_P(MaxAbsOnIsa, SixteenBitPatternsEveryLengthOffsetAndPosition) {
  std::mt19937 rng(12);
  std::vector<std::uint16_t> p(4200 + 32);
  const std::uint16_t specials[] = {0x7FC0, 0xFFC1, 0x7F80, 0xFF80, 0x7F7F, 0xFF7F, 0x8000, 0x0001, 0x7C00, 0xFE00};
  std::vector<std::size_t> lengths;
  for (std::size_t n = 0; n <= 100; ++n) lengths.push_back(n);
  for (std::size_t n : {255, 256, 257, 1023, 4099, 4200}) lengths.push_back(n);
  for (std::size_t n : lengths)
    for (std::size_t off = 0; off <= 32; off += (n > 100 ? 7 : 1)) {
      for (auto& v : p) v = static_cast<std::uint16_t>(rng() & 0xBFFF);
      const std::span<const std::uint16_t> x(p.data() + off, n);
      ASSERT_EQ(max_abs_bits(x, GetParam()), plain_max(p, off, n)) << "n " << n << " offset " << off;
      if (n > 100) continue;
      for (std::uint16_t s : specials)
        for (std::size_t pos = 0; pos < n; ++pos) {
          const std::uint16_t keep = p[off + pos];
          p[off + pos] = s;
          ASSERT_EQ(max_abs_bits(x, GetParam()), plain_max(p, off, n))
              << "n " << n << " offset " << off << " special " << std::hex << s << " at " << std::dec << pos;
          p[off + pos] = keep;
        }
    }
}

// Every 16-bit pattern v, as the largest of an array of small patterns (at a position that
// walks through the vector lanes and the tail) and as an array of its own copies.
TEST_P(MaxAbsOnIsa, EverySixteenBitPattern) {
  std::vector<std::uint16_t> p(53);
  for (std::uint32_t v = 0; v <= 0xFFFF; ++v) {
    for (std::size_t i = 0; i < p.size(); ++i) p[i] = static_cast<std::uint16_t>(i % 2 ? 0x8000 : 0);  // -0, +0
    p[v % p.size()] = static_cast<std::uint16_t>(v);
    ASSERT_EQ(max_abs_bits(std::span<const std::uint16_t>(p), GetParam()), v & 0x7FFF) << std::hex << v;
    std::fill(p.begin(), p.end(), static_cast<std::uint16_t>(v));
    ASSERT_EQ(max_abs_bits(std::span<const std::uint16_t>(p), GetParam()), v & 0x7FFF) << std::hex << v;
  }
}

TEST(MaxAbs, UnsupportedIsaIsAnError) {
  for (Isa isa : {Isa::kAvx2, Isa::kAvx512})
    if (!isa_supported(isa)) {
      const std::vector<std::uint16_t> x(4, 1);
      EXPECT_THROW(max_abs_bits(std::span<const std::uint16_t>(x), isa), std::invalid_argument);
    }
}

INSTANTIATE_TEST_SUITE_P(EveryIsa, MaxAbsOnIsa, test::every_isa(), test::isa_test_name);

}  // namespace
}  // namespace fp8q
