// fp8q/quant/trainium3_layout.hpp: how MX operands of Trainium3's nc_matmul_mx lie in SBUF
// (docs/numerics.md sections 5 and 8, docs/trainium3_layouts.md). Pure byte rearrangements: every function here moves codes and
// scale bytes, never changes one, and each has an exact inverse.
//
// What AWS documents (docs/trainium3_layouts.md has the sources):
//  - nc_matmul_mx computes stationary.T @ moving with the contraction axis K on the 128 SBUF
//    partitions; each processing element takes 4 packed codes, so one instruction contracts
//    K = 128 x 4 = 512. Operands are [partition, free] tiles of an x4 type: stationary at most
//    [128, 128], moving at most [128, 512] x4 elements.
//  - x4 types: float8_e4m3fn_x4 / float8_e5m2_x4 are 32 bits (four fp8 codes),
//    float4_e2m1fn_x4 is 16 bits (four fp4 codes); the 4 codes are 4 contiguous free-axis
//    elements.
//  - One E8M0 scale per MX group of 32 = 8 partitions x 4 packed codes of one column. The scale
//    of the group on data partitions 8g..8g+7 lies in partition (g/4)*32 + g%4: 4 scale rows at
//    the base of each 32-partition quadrant, the other 28 unused. The scale tile has the data
//    tile's free size (one scale per x4 element column).
//  - The NKI tutorial's interleaved layout puts K = c*128 + p at (partition p, slot c) (fp8q's
//    kWrapX); AWS kernels also use 4 consecutive K per partition (fp8q's k1x32) and pad K up
//    to a multiple of 512.
// fp8q's choices (assumptions, each named below): several K tiles lie side by side along the
// free axis ([128, T, N, 4]); padding codes and unused scale bytes are 0x00.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

#include "fp8q/numerics/format.hpp"

namespace fp8q::trn3 {

// ---- geometry (all documented by AWS) ----------------------------------------------------------
inline constexpr std::size_t kPartitions = 128;                  // SBUF partitions = PE rows
inline constexpr std::size_t kPacked = 4;                        // codes per x4 element (slots)
inline constexpr std::size_t kTileK = kPartitions * kPacked;     // 512: K of one nc_matmul_mx
inline constexpr std::size_t kMxBlock = 32;                      // codes per E8M0 scale
inline constexpr std::size_t kBlockPartitions = kMxBlock / kPacked;  // 8 partitions per group
inline constexpr std::size_t kBlocksPerTile = kTileK / kMxBlock;     // 16 groups per K tile
inline constexpr std::size_t kQuadrant = 32;                     // partitions per SBUF quadrant
inline constexpr std::size_t kScaleRowsPerQuadrant = kQuadrant / kBlockPartitions;  // 4
static_assert(kTileK == 512 && kBlockPartitions == 8 && kBlocksPerTile == 16 && kScaleRowsPerQuadrant == 4);

// fp8q's choice: the byte that fills K positions past the end of the operand (code 0x00 is +0
// in e4m3fn, e5m2 and e2m1, so padding adds nothing to a dot product) and the scale bytes that
// no group uses (0x00 = 2^-127 in E8M0: finite, so 0 * scale stays 0).
inline constexpr std::uint8_t kPadCode = 0x00;
inline constexpr std::uint8_t kUnusedScale = 0x00;

// ---- which K index sits where --------------------------------------------------------------
// Inside K tile t (K indices 512t .. 512t + 511), partition p (0..127), packed slot c (0..3):
//   kWrapX: k = 512t + 128c + p   (the 4 packed codes are 128 apart: the NKI tutorial's
//                                  "interleaved" layout, nki-library's H_X4_MIDDLE)
//   k1x32:  k = 512t + 4p + c     (4 consecutive K per partition: dst[p, 4f+c] = src[4p+c, f];
//                                  nki-library's MX_CONTIGUOUS / H_X4_INNERMOST)
// The names wrapX and 1x32 are fp8q's, not AWS's.
enum class KLayout : std::uint8_t { kWrapX, k1x32 };

std::optional<KLayout> parse_k_layout(std::string_view name);  // "wrapX", "1x32"
std::string_view k_layout_name(KLayout layout);

// MX group (block) index, in on-chip order: the group of (tile t, partition p) is
// 16t + p/8, for either layout, since the hardware groups 8 partitions x 4 slots.
//   k1x32:  the group holds K = 32b .. 32b + 31: exactly the OCP block b = k / 32.
//   kWrapX: group 16t + g holds K = 512t + 128c + 8g + j (c = 0..3, j = 0..7): four runs of 8,
//           128 apart. It is NOT the OCP block k / 32, so MX data for kWrapX must be quantized
//           over these groups (as quantize_mx does on interleaved data); mx_block_of_k says
//           which group each k belongs to.
struct KPosition {
  std::size_t k;      // K index; k >= the operand's K means a padding position
  std::size_t block;  // MX group = row of the compact scale tensor
};
struct OnchipSlot {
  std::size_t tile;
  std::size_t partition;
  std::size_t slot;
};

// Throws std::invalid_argument when partition >= 128 or slot >= 4.
constexpr KPosition k_position(KLayout layout, std::size_t tile, std::size_t partition, std::size_t slot) {
  if (partition >= kPartitions || slot >= kPacked)
    throw std::invalid_argument("trainium3 k_position: partition " + std::to_string(partition) + " (must be < 128), slot " +
                                std::to_string(slot) + " (must be < 4)");
  const std::size_t within = layout == KLayout::kWrapX ? slot * kPartitions + partition : partition * kPacked + slot;
  return {tile * kTileK + within, tile * kBlocksPerTile + partition / kBlockPartitions};
}

// The inverse of k_position: where K index k lies.
constexpr OnchipSlot onchip_slot(KLayout layout, std::size_t k) {
  const std::size_t t = k / kTileK, r = k % kTileK;
  if (layout == KLayout::kWrapX) return {t, r % kPartitions, r / kPartitions};
  return {t, r / kPacked, r % kPacked};
}

constexpr std::size_t mx_block_of_k(KLayout layout, std::size_t k) {
  const OnchipSlot s = onchip_slot(layout, k);
  return s.tile * kBlocksPerTile + s.partition / kBlockPartitions;
}

// SBUF partition that holds the scale of group g of a K tile (g = block % 16): the 4 groups
// of data quadrant q = g/4 (data partitions 32q .. 32q+31) put their scales in the first 4
// partitions of that same quadrant.
constexpr std::size_t scale_partition(std::size_t block_in_tile) {
  if (block_in_tile >= kBlocksPerTile)
    throw std::invalid_argument("trainium3 scale_partition: group " + std::to_string(block_in_tile) +
                                " of a K tile (must be < 16)");
  return (block_in_tile / kScaleRowsPerQuadrant) * kQuadrant + block_in_tile % kScaleRowsPerQuadrant;
}

static_assert(k_position(KLayout::kWrapX, 1, 5, 3).k == 512 + 384 + 5);
static_assert(k_position(KLayout::k1x32, 1, 5, 3).k == 512 + 20 + 3 && k_position(KLayout::k1x32, 1, 5, 3).block == 16);
static_assert(scale_partition(0) == 0 && scale_partition(3) == 3 && scale_partition(4) == 32 && scale_partition(15) == 99);

// ---- shapes ---------------------------------------------------------------------------------
// A K x N operand (K = contraction axis = rows, row-major, one code per byte) becomes
// T = ceil(K / 512) K tiles. On chip, fp8q lays it out as codes[128][T][N][4] (byte offset
// ((p * T + t) * N + n) * 4 + c), i.e. a [128, T * N] tile of x4 elements whose columns
// t*N .. t*N + N-1 are the nc_matmul_mx operand of K tile t ([128, N] x4; a kernel slices N
// to <= 128 for stationary, <= 512 for moving). Tiles side by side on the free axis is fp8q's
// choice (AWS kernels use [128, K/512, ...] the same way). The scales are
// scales[128][T][N] (one byte per x4 element).
std::size_t k_tiles(std::size_t k);  // ceil(k / 512)
// Number of MX groups that hold at least one real K index: the rows of the compact scale
// tensor. k1x32: ceil(K / 32) (the OCP count). kWrapX: 16 per full tile, and for a last tile
// with r = K mod 512 live indices, min(16, ceil(r / 8)) (index 8g < r sits in group g, slot 0).
std::size_t mx_blocks(KLayout layout, std::size_t k);
std::size_t onchip_codes_size(std::size_t k, std::size_t n);   // 128 * T * N * 4 bytes
std::size_t onchip_scales_size(std::size_t k, std::size_t n);  // 128 * T * N bytes

// ---- the K permutation ----------------------------------------------------------------------
// codes_kn: [K, N] codes; onchip: onchip_codes_size(K, N) bytes, every byte written
// (positions with k >= K get kPadCode).
void to_onchip_codes(KLayout layout, std::size_t k, std::size_t n, std::span<const std::uint8_t> codes_kn,
                     std::span<std::uint8_t> onchip);
// The inverse. Padding positions must hold kPadCode (anything else would be lost, and the
// hardware would add it into the dot product): std::invalid_argument names the first one.
void from_onchip_codes(KLayout layout, std::size_t k, std::size_t n, std::span<const std::uint8_t> onchip,
                       std::span<std::uint8_t> codes_kn);

// ---- scale placement -------------------------------------------------------------------------
// compact: [mx_blocks(layout, K), N] E8M0 bytes, row b = group b in on-chip order (for k1x32
// the usual OCP [ceil(K/32), N] scales of blocks of 32 consecutive K). Row b = 16t + g goes to
// partition scale_partition(g), column t*N + n of the [128, T*N] scale tile; every other byte
// is kUnusedScale.
void to_onchip_scales(KLayout layout, std::size_t k, std::size_t n, std::span<const std::uint8_t> compact,
                      std::span<std::uint8_t> onchip);
// The inverse: reads only the placed bytes. The unused partitions are not checked: AWS allows
// other matmuls' scales to be packed into them.
void from_onchip_scales(KLayout layout, std::size_t k, std::size_t n, std::span<const std::uint8_t> onchip,
                        std::span<std::uint8_t> compact);

// ---- x4 packing --------------------------------------------------------------------------------
// The four codes of one x4 element are 4 contiguous free-axis elements (slot c = 0..3).
// Code c sits in bits [c*w, c*w + w) of the little-endian container (w = 8 for fp8, 4 for fp4):
// the byte order of AWS's tutorial (numpy view of 4 fp8 as uint32, two fp4 per byte, low
// nibble first) and nki-library's unpackers; so in memory fp8 slot c is byte c, and fp4 slots
// 0,1 are the low and high nibble of byte 0, slots 2,3 of byte 1.
enum class X4Type : std::uint8_t { kFloat8E4M3fnX4, kFloat8E5M2X4, kFloat4E2M1fnX4 };

std::optional<X4Type> parse_x4_type(std::string_view name);  // "float8_e4m3fn_x4", ...
std::string_view x4_type_name(X4Type type);
const Format& x4_element_format(X4Type type);  // kE4M3FN, kE5M2, kE2M1
constexpr std::size_t x4_bytes(X4Type type) { return type == X4Type::kFloat4E2M1fnX4 ? 2 : 4; }

constexpr std::uint32_t pack_fp8_x4(std::uint8_t c0, std::uint8_t c1, std::uint8_t c2, std::uint8_t c3) {
  return std::uint32_t{c0} | std::uint32_t{c1} << 8 | std::uint32_t{c2} << 16 | std::uint32_t{c3} << 24;
}
constexpr std::uint8_t fp8_x4_code(std::uint32_t x4, std::size_t slot) {
  return static_cast<std::uint8_t>(x4 >> (8 * (slot & 3)));
}
// fp4 codes are 0..15 (one per byte, low 4 bits); higher bits are masked off here, rejected
// by pack_x4.
constexpr std::uint16_t pack_fp4_x4(std::uint8_t c0, std::uint8_t c1, std::uint8_t c2, std::uint8_t c3) {
  return static_cast<std::uint16_t>((c0 & 0xFu) | (c1 & 0xFu) << 4 | (c2 & 0xFu) << 8 | (c3 & 0xFu) << 12);
}
constexpr std::uint8_t fp4_x4_code(std::uint16_t x4, std::size_t slot) {
  return static_cast<std::uint8_t>((x4 >> (4 * (slot & 3))) & 0xFu);
}
static_assert(pack_fp8_x4(0x01, 0x02, 0x03, 0x04) == 0x04030201u && fp8_x4_code(0x04030201u, 2) == 0x03);
static_assert(pack_fp4_x4(0x1, 0x2, 0x3, 0x4) == 0x4321u && fp4_x4_code(0x4321u, 3) == 0x4);

// codes: a multiple of 4 codes, one per byte, 4 consecutive codes = one x4 element;
// image: the containers' memory image, codes.size() / 4 * x4_bytes(type) bytes. fp8 images
// equal the codes byte for byte; fp4 codes above 15 are an error naming the index.
void pack_x4(X4Type type, std::span<const std::uint8_t> codes, std::span<std::uint8_t> image);
void unpack_x4(X4Type type, std::span<const std::uint8_t> image, std::span<std::uint8_t> codes);

}  // namespace fp8q::trn3
