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

// Blocks of 16: each block's entry is the max of what it held and the block's largest pattern,
// for 0 .. 40 blocks at every start offset within a vector, with a special value (NaN, Inf,
// the largest finite, -0) at each position of a block; a size that is not 16 per block throws.
template <class T>
void check_blocks16(Isa isa, const std::vector<T>& specials, unsigned seed) {
  std::mt19937 rng(seed);
  const T below = static_cast<T>(sizeof(T) == 2 ? 0xBFFFu : 0xBFFFFFFFu);  // specials are the largest
  std::vector<T> p(40 * 16 + 16);
  for (std::size_t blocks = 0; blocks <= 40; ++blocks)
    for (std::size_t off = 0; off < 16; off += (blocks > 4 ? 5 : 1)) {
      for (auto& v : p) v = static_cast<T>(rng() & below);
      std::vector<std::uint32_t> held(blocks);
      for (auto& h : held) h = rng() % 3 == 0 ? static_cast<std::uint32_t>(rng() & below & 0x3FFFu) : 0u;
      auto expect = [&] {
        std::vector<std::uint32_t> e = held;
        for (std::size_t b = 0; b < blocks; ++b) e[b] = std::max<std::uint32_t>(e[b], plain_max(p, off + 16 * b, 16));
        return e;
      };
      auto got = [&] {
        std::vector<std::uint32_t> m = held;
        if constexpr (sizeof(T) == 2)
          max_abs_bits_blocks16(std::span<const std::uint16_t>(p.data() + off, 16 * blocks), m, isa);
        else
          max_abs_bits_blocks16(as_floats(p, off, 16 * blocks), m, isa);
        return m;
      };
      ASSERT_EQ(got(), expect()) << blocks << " blocks, offset " << off;
      if (blocks == 0 || blocks > 3) continue;
      for (T s : specials)
        for (std::size_t pos = 0; pos < 16 * blocks; ++pos) {
          const T keep = p[off + pos];
          p[off + pos] = s;
          ASSERT_EQ(got(), expect()) << blocks << " blocks, offset " << off << " special " << std::hex << +s << " at "
                                     << std::dec << pos;
          p[off + pos] = keep;
        }
    }
  std::vector<std::uint32_t> m(2);
  const std::vector<T> x(33);
  if constexpr (sizeof(T) == 2)
    EXPECT_THROW(max_abs_bits_blocks16(std::span<const std::uint16_t>(x), m, isa), std::invalid_argument);
  else
    EXPECT_THROW(max_abs_bits_blocks16(as_floats(x, 0, 33), m, isa), std::invalid_argument);
}

TEST_P(MaxAbsOnIsa, BlocksOfSixteenFp32) {
  check_blocks16<std::uint32_t>(GetParam(), {0x7FC00000u, 0xFFC00001u, 0x7F800000u, 0xFF7FFFFFu, 0x80000000u}, 13);
}

TEST_P(MaxAbsOnIsa, BlocksOfSixteenSixteenBit) {
  check_blocks16<std::uint16_t>(GetParam(), {0x7FC0, 0xFFC1, 0x7F80, 0xFF7F, 0x8000, 0x7C00, 0xFE00}, 14);
}

// max_abs_accumulate: each accumulator becomes the larger pattern of itself and |x[i]|, for
// lengths 0 .. 70 at every offset, random patterns of both signs (NaN and Inf among them)
// against random accumulators; mismatched sizes throw.
template <class T, class A>
void check_accumulate(Isa isa, unsigned seed) {
  constexpr T kMask = static_cast<T>(static_cast<T>(~T{0}) >> 1);
  std::mt19937 rng(seed);
  std::vector<T> p(70 + 16);
  for (std::size_t n = 0; n <= 70; ++n)
    for (std::size_t off = 0; off < 16; off += (n > 20 ? 3 : 1)) {
      for (auto& v : p) v = static_cast<T>(rng());
      std::vector<T> acc(n), want(n);
      for (std::size_t i = 0; i < n; ++i) {
        acc[i] = static_cast<T>(rng() & kMask);
        want[i] = std::max<T>(acc[i], p[off + i] & kMask);
      }
      std::vector<A> a(n);
      if (n != 0) std::memcpy(a.data(), acc.data(), n * sizeof(T));  // (no null pointer to memcpy)
      if constexpr (sizeof(T) == 2)
        max_abs_accumulate(std::span<const std::uint16_t>(p.data() + off, n), std::span<A>(a), isa);
      else
        max_abs_accumulate(as_floats(p, off, n), std::span<A>(a), isa);
      if (n != 0) std::memcpy(acc.data(), a.data(), n * sizeof(T));
      ASSERT_EQ(acc, want) << "n " << n << " offset " << off;
    }
  std::vector<A> a(3);
  const std::vector<T> x(4);
  if constexpr (sizeof(T) == 2)
    EXPECT_THROW(max_abs_accumulate(std::span<const std::uint16_t>(x), std::span<A>(a), isa), std::invalid_argument);
  else
    EXPECT_THROW(max_abs_accumulate(as_floats(x, 0, 4), std::span<A>(a), isa), std::invalid_argument);
}

TEST_P(MaxAbsOnIsa, AccumulateFp32) { check_accumulate<std::uint32_t, float>(GetParam(), 15); }
TEST_P(MaxAbsOnIsa, AccumulateSixteenBit) { check_accumulate<std::uint16_t, std::uint16_t>(GetParam(), 16); }

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
