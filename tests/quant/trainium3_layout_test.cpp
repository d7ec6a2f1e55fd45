// quant/trainium3_layout.hpp: the wrapX / 1x32 K permutations, the quadrant scale placement and
// the x4 packing are exact rearrangements: round trips give back every byte, the index function
// agrees with the permutation, and small cases match the formulas written out by hand.
#include "fp8q/quant/trainium3_layout.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace fp8q::trn3 {
namespace {

using Bytes = std::vector<std::uint8_t>;

constexpr KLayout kLayouts[] = {KLayout::kWrapX, KLayout::k1x32};
// K around every boundary: MX block (32), wrapX stride (128), tile (512), several tiles.
constexpr std::size_t kKs[] = {1, 4, 7, 8, 9, 31, 32, 33, 100, 127, 128, 129, 255, 256, 300, 500, 511, 512, 513, 600, 1024, 1100, 1536};
constexpr std::size_t kNs[] = {1, 3, 8, 130};

Bytes random_bytes(std::size_t size, std::uint32_t seed, unsigned max = 255) {
  std::mt19937 rng(seed);  // fixed seed: the same bytes on every run
  std::uniform_int_distribution<unsigned> d(0, max);
  Bytes v(size);
  for (auto& b : v) b = static_cast<std::uint8_t>(d(rng));
  return v;
}

std::size_t code_offset(std::size_t tiles, std::size_t n, std::size_t t, std::size_t p, std::size_t j, std::size_t c) {
  return ((p * tiles + t) * n + j) * kPacked + c;
}

std::string name(KLayout layout) { return std::string(k_layout_name(layout)); }

// ---- the index function ------------------------------------------------------------------
TEST(Trainium3Layout, IndexFunctionIsTheDocumentedFormula) {
  for (std::size_t t = 0; t < 3; ++t)
    for (std::size_t p = 0; p < kPartitions; ++p)
      for (std::size_t c = 0; c < kPacked; ++c) {
        const KPosition w = k_position(KLayout::kWrapX, t, p, c), o = k_position(KLayout::k1x32, t, p, c);
        EXPECT_EQ(w.k, 512 * t + 128 * c + p);
        EXPECT_EQ(o.k, 512 * t + 4 * p + c);
        EXPECT_EQ(w.block, 16 * t + p / 8);  // 8 partitions x 4 slots per group, either layout
        EXPECT_EQ(o.block, 16 * t + p / 8);
      }
}

TEST(Trainium3Layout, IndexFunctionIsABijectionWithItsInverse) {
  for (KLayout layout : kLayouts) {
    std::set<std::size_t> seen;
    for (std::size_t t = 0; t < 3; ++t)
      for (std::size_t p = 0; p < kPartitions; ++p)
        for (std::size_t c = 0; c < kPacked; ++c) {
          const KPosition kp = k_position(layout, t, p, c);
          EXPECT_TRUE(seen.insert(kp.k).second) << name(layout) << " k " << kp.k << " twice";
          const OnchipSlot s = onchip_slot(layout, kp.k);
          EXPECT_EQ(s.tile, t);
          EXPECT_EQ(s.partition, p);
          EXPECT_EQ(s.slot, c);
          EXPECT_EQ(mx_block_of_k(layout, kp.k), kp.block);
        }
    EXPECT_EQ(seen.size(), 3 * kTileK);
    EXPECT_EQ(*seen.rbegin(), 3 * kTileK - 1);  // 0 .. 1535, each once
  }
  EXPECT_THROW(k_position(KLayout::k1x32, 0, 128, 0), std::invalid_argument);
  EXPECT_THROW(k_position(KLayout::kWrapX, 0, 0, 4), std::invalid_argument);
  EXPECT_THROW(scale_partition(16), std::invalid_argument);
}

TEST(Trainium3Layout, OneByThirtyTwoGroupsAreTheOcpBlocks) {
  for (std::size_t k = 0; k < 2048; ++k) EXPECT_EQ(mx_block_of_k(KLayout::k1x32, k), k / 32) << k;
}

TEST(Trainium3Layout, WrapXGroupsAreFourRunsOfEight128Apart) {
  for (std::size_t b = 0; b < 32; ++b) {
    std::set<std::size_t> members;
    for (std::size_t k = 0; k < 1024; ++k)
      if (mx_block_of_k(KLayout::kWrapX, k) == b) members.insert(k);
    const std::size_t t = b / 16, g = b % 16;
    std::set<std::size_t> want;
    for (std::size_t c = 0; c < 4; ++c)
      for (std::size_t j = 0; j < 8; ++j) want.insert(512 * t + 128 * c + 8 * g + j);
    EXPECT_EQ(members, want) << "group " << b;
  }
  // e.g. group 1 = K 8..15, 136..143, 264..271, 392..399
  EXPECT_EQ(mx_block_of_k(KLayout::kWrapX, 8), 1u);
  EXPECT_EQ(mx_block_of_k(KLayout::kWrapX, 399), 1u);
  EXPECT_EQ(mx_block_of_k(KLayout::kWrapX, 32), 4u);  // OCP block 1, but wrapX group 4
}

TEST(Trainium3Layout, BlockCountsMatchABruteForceCount) {
  for (KLayout layout : kLayouts)
    for (std::size_t k = 0; k <= 1600; ++k) {
      std::set<std::size_t> live;
      for (std::size_t t = 0; t < k_tiles(k); ++t)
        for (std::size_t p = 0; p < kPartitions; ++p)
          for (std::size_t c = 0; c < kPacked; ++c)
            if (k_position(layout, t, p, c).k < k) live.insert(k_position(layout, t, p, c).block);
      ASSERT_EQ(mx_blocks(layout, k), live.size()) << name(layout) << " K " << k;
      if (!live.empty()) {
        ASSERT_EQ(*live.rbegin(), live.size() - 1) << "live groups are a prefix";
      }
    }
  EXPECT_EQ(k_tiles(0), 0u);
  EXPECT_EQ(k_tiles(512), 1u);
  EXPECT_EQ(k_tiles(513), 2u);
  EXPECT_EQ(mx_blocks(KLayout::k1x32, 600), 19u);  // ceil(600 / 32)
  EXPECT_EQ(mx_blocks(KLayout::kWrapX, 600), 27u);  // 16 + ceil(88 / 8)
  EXPECT_EQ(mx_blocks(KLayout::kWrapX, 700), 32u);  // 188 live in tile 1 >= 128: all 16 groups
}

// ---- the K permutation, by hand -------------------------------------------------------------
// K = 4, N = 2, src[k][n] = 0x10 * (k + 1) + n. One tile, all but 4 K positions are padding.
TEST(Trainium3Layout, TinyOperandByHand) {
  const Bytes src = {0x10, 0x11, 0x20, 0x21, 0x30, 0x31, 0x40, 0x41};
  Bytes onchip(onchip_codes_size(4, 2));
  ASSERT_EQ(onchip.size(), 128u * 2 * 4);

  // 1x32: partition 0 holds K 0..3 in slots 0..3 of both columns; the rest is padding.
  to_onchip_codes(KLayout::k1x32, 4, 2, src, onchip);
  const Bytes row0 = {0x10, 0x20, 0x30, 0x40, 0x11, 0x21, 0x31, 0x41};
  EXPECT_EQ(Bytes(onchip.begin(), onchip.begin() + 8), row0);
  for (std::size_t i = 8; i < onchip.size(); ++i) ASSERT_EQ(onchip[i], 0) << i;

  // wrapX: partition p < 4 holds K p in slot 0 (K p + 128c is past the end for c > 0).
  to_onchip_codes(KLayout::kWrapX, 4, 2, src, onchip);
  for (std::size_t p = 0; p < 4; ++p) {
    const std::uint8_t v = static_cast<std::uint8_t>(0x10 * (p + 1));
    const Bytes row = {v, 0, 0, 0, static_cast<std::uint8_t>(v + 1), 0, 0, 0};
    EXPECT_EQ(Bytes(onchip.begin() + 8 * p, onchip.begin() + 8 * p + 8), row) << "partition " << p;
  }
  for (std::size_t i = 32; i < onchip.size(); ++i) ASSERT_EQ(onchip[i], 0) << i;

  Bytes back(8);
  from_onchip_codes(KLayout::kWrapX, 4, 2, onchip, back);
  EXPECT_EQ(back, src);
}

// K = 1024 (two tiles), N = 1, src[k] = k mod 251: the positions written out from the formulas.
TEST(Trainium3Layout, TwoTilesByHand) {
  Bytes src(1024);
  for (std::size_t k = 0; k < 1024; ++k) src[k] = static_cast<std::uint8_t>(k % 251);
  Bytes w(onchip_codes_size(1024, 1)), o(w.size());
  to_onchip_codes(KLayout::kWrapX, 1024, 1, src, w);
  to_onchip_codes(KLayout::k1x32, 1024, 1, src, o);
  // x4 element (p, t) starts at byte (p * 2 + t) * 4.
  const Bytes w_p3_t0 = {3, 131, 259 % 251, 387 % 251};   // K 3, 131, 259, 387
  const Bytes o_p3_t0 = {12, 13, 14, 15};                  // K 12..15
  const Bytes w_p5_t1 = {517 % 251, 645 % 251, 773 % 251, 901 % 251};  // K 517, 645, 773, 901
  const Bytes o_p5_t1 = {532 % 251, 533 % 251, 534 % 251, 535 % 251};  // K 532..535
  EXPECT_EQ(Bytes(w.begin() + 24, w.begin() + 28), w_p3_t0);
  EXPECT_EQ(Bytes(o.begin() + 24, o.begin() + 28), o_p3_t0);
  EXPECT_EQ(Bytes(w.begin() + 44, w.begin() + 48), w_p5_t1);
  EXPECT_EQ(Bytes(o.begin() + 44, o.begin() + 48), o_p5_t1);
  // The last x4 element (p 127, t 1): wrapX K 639, 767, 895, 1023; 1x32 K 1020..1023.
  const Bytes w_last = {639 % 251, 767 % 251, 895 % 251, 1023 % 251}, o_last = {1020 % 251, 1021 % 251, 1022 % 251, 1023 % 251};
  EXPECT_EQ(Bytes(w.end() - 4, w.end()), w_last);
  EXPECT_EQ(Bytes(o.end() - 4, o.end()), o_last);
}

// ---- the K permutation, every shape -------------------------------------------------------------
TEST(Trainium3Layout, RoundTripsAndAgreesWithTheIndexFunction) {
  std::uint32_t seed = 1;
  for (KLayout layout : kLayouts)
    for (std::size_t k : kKs)
      for (std::size_t n : kNs) {
        const Bytes src = random_bytes(k * n, seed++);
        const std::size_t tiles = (k + 511) / 512;
        Bytes onchip(onchip_codes_size(k, n), 0xAB);  // pre-filled: every byte must be written
        ASSERT_EQ(onchip.size(), 128 * tiles * n * 4);
        to_onchip_codes(layout, k, n, src, onchip);
        for (std::size_t t = 0; t < tiles; ++t)
          for (std::size_t p = 0; p < kPartitions; ++p)
            for (std::size_t c = 0; c < kPacked; ++c) {
              const std::size_t kk = k_position(layout, t, p, c).k;
              for (std::size_t j = 0; j < n; ++j)
                ASSERT_EQ(onchip[code_offset(tiles, n, t, p, j, c)], kk < k ? src[kk * n + j] : 0)
                    << name(layout) << " K " << k << " N " << n << " (t " << t << ", p " << p << ", c " << c << ", n "
                    << j << ")";
            }
        Bytes back(k * n, 0xCD);
        from_onchip_codes(layout, k, n, onchip, back);
        ASSERT_EQ(back, src) << name(layout) << " K " << k << " N " << n;
      }
}

TEST(Trainium3Layout, EmptyOperands) {
  for (KLayout layout : kLayouts) {
    Bytes none;
    EXPECT_EQ(onchip_codes_size(0, 5), 0u);
    EXPECT_EQ(onchip_codes_size(5, 0), 0u);
    to_onchip_codes(layout, 0, 5, none, none);
    from_onchip_codes(layout, 5, 0, none, none);
    to_onchip_scales(layout, 0, 3, none, none);
  }
}

TEST(Trainium3Layout, NonZeroPaddingIsRejectedAndNothingIsWritten) {
  const Bytes src = random_bytes(600 * 3, 77);
  for (KLayout layout : kLayouts) {
    Bytes onchip(onchip_codes_size(600, 3));
    to_onchip_codes(layout, 600, 3, src, onchip);
    // K 1023 is padding in both layouts (wrapX: t 1, p 127, c 3; 1x32: t 1, p 127, c 3).
    const OnchipSlot s = onchip_slot(layout, 1023);
    onchip[code_offset(2, 3, s.tile, s.partition, 2, s.slot)] = 0x01;
    Bytes out(600 * 3, 0x5A);
    try {
      from_onchip_codes(layout, 600, 3, onchip, out);
      ADD_FAILURE() << "no error";
    } catch (const std::invalid_argument& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("tile 1, partition 127, slot 3, column 2"), std::string::npos) << m;
      EXPECT_NE(m.find("K index 1023"), std::string::npos) << m;
    }
    EXPECT_EQ(out, Bytes(600 * 3, 0x5A)) << "output untouched";
  }
}

TEST(Trainium3Layout, WrongSizesAreErrors) {
  Bytes src(100 * 2), onchip(onchip_codes_size(100, 2)), small(onchip.size() - 1), wide(201);
  for (KLayout layout : kLayouts) {
    EXPECT_THROW(to_onchip_codes(layout, 100, 2, Bytes(199), onchip), std::invalid_argument);
    EXPECT_THROW(to_onchip_codes(layout, 100, 2, src, small), std::invalid_argument);
    EXPECT_THROW(from_onchip_codes(layout, 100, 2, small, src), std::invalid_argument);
    EXPECT_THROW(from_onchip_codes(layout, 100, 2, onchip, wide), std::invalid_argument);
  }
  try {
    to_onchip_codes(KLayout::k1x32, 100, 2, src, small);
    ADD_FAILURE() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "to_onchip_codes: onchip has 1023 bytes, [128, T, N, 4] for [K=100, N=2] needs 1024");
  }
  const std::size_t huge = std::size_t{1} << 62;
  EXPECT_THROW(onchip_codes_size(huge, 4), std::invalid_argument);
  EXPECT_THROW(to_onchip_codes(KLayout::kWrapX, huge, huge, src, onchip), std::invalid_argument);
}

// ---- scale placement ----------------------------------------------------------------------------
TEST(Trainium3Layout, ScaleRowIGoesToPartitionIOver4Times32PlusIMod4) {
  // One full tile, N = 1: compact row i -> partition (i/4)*32 + i%4.
  Bytes compact(16);
  for (std::size_t i = 0; i < 16; ++i) compact[i] = static_cast<std::uint8_t>(100 + i);
  Bytes onchip(onchip_scales_size(512, 1), 0xEE);
  ASSERT_EQ(onchip.size(), 128u);
  to_onchip_scales(KLayout::k1x32, 512, 1, compact, onchip);
  const std::size_t partitions[16] = {0, 1, 2, 3, 32, 33, 34, 35, 64, 65, 66, 67, 96, 97, 98, 99};
  Bytes want(128, 0);
  for (std::size_t i = 0; i < 16; ++i) want[partitions[i]] = compact[i];
  EXPECT_EQ(onchip, want);
  Bytes back(16);
  from_onchip_scales(KLayout::k1x32, 512, 1, onchip, back);
  EXPECT_EQ(back, compact);
}

TEST(Trainium3Layout, ScaleSitsInTheQuadrantOfItsDataGroup) {
  // AWS: "Scales must be placed in the quadrant from which the corresponding scaling group
  // originated": the group of data partition p is read from a partition of p's quadrant.
  for (KLayout layout : kLayouts)
    for (std::size_t p = 0; p < kPartitions; ++p) {
      const std::size_t g = k_position(layout, 0, p, 0).block;
      EXPECT_EQ(scale_partition(g) / kQuadrant, p / kQuadrant) << p;
      EXPECT_LT(scale_partition(g) % kQuadrant, 4u);
    }
}

TEST(Trainium3Layout, ScalesRoundTripForEveryShape) {
  std::uint32_t seed = 1000;
  for (KLayout layout : kLayouts)
    for (std::size_t k : kKs)
      for (std::size_t n : kNs) {
        const std::size_t blocks = mx_blocks(layout, k), tiles = k_tiles(k);
        const Bytes compact = random_bytes(blocks * n, seed++);
        Bytes onchip(onchip_scales_size(k, n), 0xEE);
        ASSERT_EQ(onchip.size(), 128 * tiles * n);
        to_onchip_scales(layout, k, n, compact, onchip);
        for (std::size_t p = 0; p < kPartitions; ++p)
          for (std::size_t t = 0; t < tiles; ++t)
            for (std::size_t j = 0; j < n; ++j) {
              const std::uint8_t got = onchip[(p * tiles + t) * n + j];
              const bool base = p % 32 < 4;  // a scale row of its quadrant
              const std::size_t b = 16 * t + (p / 32) * 4 + p % 32;
              if (base && b < blocks)
                ASSERT_EQ(got, compact[b * n + j]) << name(layout) << " K " << k << " p " << p << " t " << t;
              else
                ASSERT_EQ(got, 0) << "unused scale byte, " << name(layout) << " K " << k << " p " << p << " t " << t;
            }
        // Unused partitions may hold other matmuls' scales: the inverse ignores them.
        for (std::size_t p = 0; p < kPartitions; ++p)
          for (std::size_t t = 0; t < tiles; ++t)
            if (p % 32 >= 4 || 16 * t + (p / 32) * 4 + p % 32 >= blocks)
              for (std::size_t j = 0; j < n; ++j) onchip[(p * tiles + t) * n + j] = 0x77;
        Bytes back(blocks * n, 0xCD);
        from_onchip_scales(layout, k, n, onchip, back);
        ASSERT_EQ(back, compact) << name(layout) << " K " << k << " N " << n;
      }
}

TEST(Trainium3Layout, ScaleSizesAreChecked) {
  Bytes onchip(onchip_scales_size(600, 2)), big(onchip.size() + 1), compact(19 * 2);
  EXPECT_THROW(to_onchip_scales(KLayout::k1x32, 600, 2, Bytes(19 * 2 + 1), onchip), std::invalid_argument);
  EXPECT_THROW(to_onchip_scales(KLayout::kWrapX, 600, 2, Bytes(19 * 2), onchip), std::invalid_argument);  // wrapX: 27
  to_onchip_scales(KLayout::kWrapX, 600, 2, Bytes(27 * 2), onchip);
  EXPECT_THROW(from_onchip_scales(KLayout::k1x32, 600, 2, big, compact), std::invalid_argument);
  try {
    to_onchip_scales(KLayout::kWrapX, 600, 2, Bytes(38), onchip);
    ADD_FAILURE() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "to_onchip_scales: compact has 38 bytes, [27 wrapX groups, N] for [K=600, N=2] needs 54");
  }
}

// ---- the layouts feed an nc_matmul_mx-style contraction correctly -------------------------------
// Codes read as signed 4-bit integers (code 0 = value 0, like +0 in every MX element format) and
// scale bytes s as 2^(s - 3), s in 0..6: every product is a multiple of 2^-12 below 2^18 and
// every sum stays below 2^28, so double arithmetic is exact in any order. The on-chip
// contraction (per PE row p: 4 slots, scaled by the groups' scales read from partition
// scale_partition(p / 8)) must then equal the reference over K, with each k's scale row found
// by mx_block_of_k. This is the arrangement nc_matmul_mx consumes; padding adds exactly 0.
TEST(Trainium3Layout, OnchipContractionEqualsTheReference) {
  const std::size_t m = 3, n = 5;
  auto value = [](std::uint8_t code) { return static_cast<double>(code < 8 ? code : code - 16); };
  auto scale = [](std::uint8_t s) { return std::ldexp(1.0, static_cast<int>(s) - 3); };
  for (KLayout layout : kLayouts)
    for (std::size_t k : {std::size_t{40}, std::size_t{512}, std::size_t{700}}) {
      const auto sd = static_cast<std::uint32_t>(k);
      const Bytes a = random_bytes(k * m, sd + 1, 15), b = random_bytes(k * n, sd + 2, 15);  // [K, M], [K, N]
      const std::size_t blocks = mx_blocks(layout, k), tiles = k_tiles(k);
      const Bytes sa = random_bytes(blocks * m, sd + 3, 6), sb = random_bytes(blocks * n, sd + 4, 6);
      Bytes a_chip(onchip_codes_size(k, m)), b_chip(onchip_codes_size(k, n));
      Bytes sa_chip(onchip_scales_size(k, m)), sb_chip(onchip_scales_size(k, n));
      to_onchip_codes(layout, k, m, a, a_chip);
      to_onchip_codes(layout, k, n, b, b_chip);
      to_onchip_scales(layout, k, m, sa, sa_chip);
      to_onchip_scales(layout, k, n, sb, sb_chip);
      for (std::size_t i = 0; i < m; ++i)
        for (std::size_t j = 0; j < n; ++j) {
          double ref = 0;
          for (std::size_t kk = 0; kk < k; ++kk) {
            const std::size_t blk = mx_block_of_k(layout, kk);
            ref += value(a[kk * m + i]) * scale(sa[blk * m + i]) * value(b[kk * n + j]) * scale(sb[blk * n + j]);
          }
          double chip = 0;
          for (std::size_t t = 0; t < tiles; ++t)
            for (std::size_t p = 0; p < kPartitions; ++p) {
              const std::size_t sp = scale_partition(p / 8);
              const double s = scale(sa_chip[(sp * tiles + t) * m + i]) * scale(sb_chip[(sp * tiles + t) * n + j]);
              for (std::size_t c = 0; c < kPacked; ++c)
                chip += value(a_chip[code_offset(tiles, m, t, p, i, c)]) * value(b_chip[code_offset(tiles, n, t, p, j, c)]) * s;
            }
          EXPECT_EQ(chip, ref) << name(layout) << " K " << k << " (" << i << ", " << j << ")";
        }
    }
}

// ---- x4 packing ---------------------------------------------------------------------------------
TEST(Trainium3X4, TypesAndNames) {
  for (X4Type t : {X4Type::kFloat8E4M3fnX4, X4Type::kFloat8E5M2X4, X4Type::kFloat4E2M1fnX4}) {
    EXPECT_EQ(parse_x4_type(x4_type_name(t)), t);
    EXPECT_EQ(x4_bytes(t) * 8, 4u * static_cast<std::size_t>(x4_element_format(t).bits()));  // 32 or 16 bits
  }
  EXPECT_EQ(x4_bytes(X4Type::kFloat8E4M3fnX4), 4u);
  EXPECT_EQ(x4_bytes(X4Type::kFloat4E2M1fnX4), 2u);
  EXPECT_EQ(x4_element_format(X4Type::kFloat8E5M2X4).name, "e5m2");
  EXPECT_FALSE(parse_x4_type("float8_e4m3_x4").has_value());
  EXPECT_EQ(parse_k_layout("wrapX"), KLayout::kWrapX);
  EXPECT_EQ(parse_k_layout("1x32"), KLayout::k1x32);
  EXPECT_FALSE(parse_k_layout("1x128").has_value());
}

TEST(Trainium3X4, Fp8ImageIsTheCodesAndSlotCIsByteC) {
  const Bytes codes = {0x01, 0x02, 0x03, 0x04, 0x7E, 0xFE, 0x00, 0x80};
  for (X4Type t : {X4Type::kFloat8E4M3fnX4, X4Type::kFloat8E5M2X4}) {
    Bytes image(8), back(8);
    pack_x4(t, codes, image);
    EXPECT_EQ(image, codes);
    unpack_x4(t, image, back);
    EXPECT_EQ(back, codes);
  }
  EXPECT_EQ(pack_fp8_x4(0x7E, 0xFE, 0x00, 0x80), 0x8000FE7Eu);
  for (std::size_t c = 0; c < 4; ++c) EXPECT_EQ(fp8_x4_code(0x8000FE7Eu, c), codes[4 + c]);
}

TEST(Trainium3X4, Fp4ByHandAndExhaustive) {
  const Bytes codes = {0x1, 0x2, 0x3, 0x4};
  Bytes image(2), back(4);
  pack_x4(X4Type::kFloat4E2M1fnX4, codes, image);
  EXPECT_EQ(image, (Bytes{0x21, 0x43}));  // little-endian 0x4321: slot 0 in the low nibble
  EXPECT_EQ(static_cast<unsigned>(image[0] | image[1] << 8), pack_fp4_x4(1, 2, 3, 4));
  // Every one of the 16^4 x4 elements round-trips, and the image matches pack_fp4_x4.
  Bytes all(65536 * 4);
  for (std::size_t v = 0; v < 65536; ++v)
    for (std::size_t c = 0; c < 4; ++c) all[4 * v + c] = static_cast<std::uint8_t>((v >> (4 * c)) & 0xF);
  Bytes img(65536 * 2), out(all.size());
  pack_x4(X4Type::kFloat4E2M1fnX4, all, img);
  for (std::size_t v = 0; v < 65536; ++v) {
    ASSERT_EQ(static_cast<unsigned>(img[2 * v] | img[2 * v + 1] << 8), v);
    ASSERT_EQ(pack_fp4_x4(all[4 * v], all[4 * v + 1], all[4 * v + 2], all[4 * v + 3]), v);
    for (std::size_t c = 0; c < 4; ++c) ASSERT_EQ(fp4_x4_code(static_cast<std::uint16_t>(v), c), all[4 * v + c]);
  }
  unpack_x4(X4Type::kFloat4E2M1fnX4, img, out);
  EXPECT_EQ(out, all);
}

TEST(Trainium3X4, Errors) {
  Bytes image(2, 0x99);
  try {
    pack_x4(X4Type::kFloat4E2M1fnX4, Bytes{1, 2, 0x13, 4}, image);
    ADD_FAILURE() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "pack_x4 (float4_e2m1fn_x4): code[2] = 19 is not a 4-bit code");
  }
  EXPECT_EQ(image, Bytes(2, 0x99)) << "nothing written";
  Bytes four(4), six(6), eight(8);
  EXPECT_THROW(pack_x4(X4Type::kFloat8E4M3fnX4, Bytes(6), six), std::invalid_argument);  // not 4k codes
  EXPECT_THROW(pack_x4(X4Type::kFloat8E4M3fnX4, Bytes(8), four), std::invalid_argument);
  EXPECT_THROW(pack_x4(X4Type::kFloat4E2M1fnX4, Bytes(8), eight), std::invalid_argument);
  EXPECT_THROW(unpack_x4(X4Type::kFloat4E2M1fnX4, Bytes(3), six), std::invalid_argument);  // half an element
  EXPECT_THROW(unpack_x4(X4Type::kFloat8E5M2X4, Bytes(8), four), std::invalid_argument);
}

}  // namespace
}  // namespace fp8q::trn3
