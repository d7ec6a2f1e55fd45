#include "fp8q/quant/trainium3_layout.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

namespace fp8q::trn3 {
namespace {

using std::to_string;

// a * b, or std::invalid_argument when it does not fit in size_t.
std::size_t checked_mul(std::size_t a, std::size_t b, const char* what) {
  if (a != 0 && b > std::numeric_limits<std::size_t>::max() / a)
    throw std::invalid_argument(std::string("trainium3 layout: ") + what + " overflows (" + to_string(a) + " x " +
                                to_string(b) + ")");
  return a * b;
}

void check_size(const char* function, const char* tensor, std::size_t got, std::size_t want, const std::string& shape) {
  if (got != want)
    throw std::invalid_argument(std::string(function) + ": " + tensor + " has " + to_string(got) + " bytes, " + shape +
                                " needs " + to_string(want));
}

std::string kn(std::size_t k, std::size_t n) { return "[K=" + to_string(k) + ", N=" + to_string(n) + "]"; }

// "[27 wrapX groups, N] for [K=600, N=2]" (built by appending: GCC 12 warns falsely about
// "literal" + std::string temporaries here, PR 105329).
std::string compact_shape(KLayout layout, std::size_t blocks, std::size_t k, std::size_t n) {
  std::string s(1, '[');
  s += to_string(blocks);
  s += ' ';
  s += k_layout_name(layout);
  s += " groups, N] for ";
  s += kn(k, n);
  return s;
}

}  // namespace

std::optional<KLayout> parse_k_layout(std::string_view name) {
  if (name == "wrapX") return KLayout::kWrapX;
  if (name == "1x32") return KLayout::k1x32;
  return std::nullopt;
}

std::string_view k_layout_name(KLayout layout) { return layout == KLayout::kWrapX ? "wrapX" : "1x32"; }

std::size_t k_tiles(std::size_t k) { return k / kTileK + (k % kTileK != 0); }

std::size_t mx_blocks(KLayout layout, std::size_t k) {
  const std::size_t full = k / kTileK, r = k % kTileK;
  // Last, partial tile with r live indices 0 .. r-1 (within-tile index), group g = p / 8:
  //   k1x32:  within = 4p + c, live groups are those with 32g < r -> ceil(r / 32);
  //   kWrapX: within = 128c + p, group g's smallest index is 8g (c = 0) -> ceil(r / 8), at most 16.
  const std::size_t last = layout == KLayout::k1x32 ? (r + kMxBlock - 1) / kMxBlock
                                                    : std::min(kBlocksPerTile, (r + kBlockPartitions - 1) / kBlockPartitions);
  return full * kBlocksPerTile + last;
}

std::size_t onchip_scales_size(std::size_t k, std::size_t n) {
  return checked_mul(checked_mul(kPartitions, k_tiles(k), "128 x K tiles"), n, "on-chip scale size");
}

std::size_t onchip_codes_size(std::size_t k, std::size_t n) {
  return checked_mul(onchip_scales_size(k, n), kPacked, "on-chip code size");
}

// ---- the K permutation ----------------------------------------------------------------------
// Walks the on-chip tensor in memory order (p, t, n, c); the four K rows of (p, t) are found
// once with k_position, so each x4 element is 4 reads from 4 rows of codes_kn.
void to_onchip_codes(KLayout layout, std::size_t k, std::size_t n, std::span<const std::uint8_t> codes_kn,
                     std::span<std::uint8_t> onchip) {
  check_size("to_onchip_codes", "codes_kn", codes_kn.size(), checked_mul(k, n, "K x N"), kn(k, n));
  check_size("to_onchip_codes", "onchip", onchip.size(), onchip_codes_size(k, n), "[128, T, N, 4] for " + kn(k, n));
  const std::size_t tiles = k_tiles(k);
  std::uint8_t* out = onchip.data();
  for (std::size_t p = 0; p < kPartitions; ++p)
    for (std::size_t t = 0; t < tiles; ++t) {
      const std::uint8_t* row[kPacked];
      for (std::size_t c = 0; c < kPacked; ++c) {
        const std::size_t kk = k_position(layout, t, p, c).k;
        row[c] = kk < k ? codes_kn.data() + kk * n : nullptr;
      }
      for (std::size_t j = 0; j < n; ++j)
        for (std::size_t c = 0; c < kPacked; ++c) *out++ = row[c] ? row[c][j] : kPadCode;
    }
}

void from_onchip_codes(KLayout layout, std::size_t k, std::size_t n, std::span<const std::uint8_t> onchip,
                       std::span<std::uint8_t> codes_kn) {
  check_size("from_onchip_codes", "onchip", onchip.size(), onchip_codes_size(k, n), "[128, T, N, 4] for " + kn(k, n));
  check_size("from_onchip_codes", "codes_kn", codes_kn.size(), checked_mul(k, n, "K x N"), kn(k, n));
  const std::size_t tiles = k_tiles(k);
  // Check the padding first, so that a rejected input leaves codes_kn untouched.
  for (std::size_t p = 0; p < kPartitions; ++p)
    for (std::size_t t = 0; t < tiles; ++t)
      for (std::size_t c = 0; c < kPacked; ++c) {
        if (k_position(layout, t, p, c).k < k) continue;
        for (std::size_t j = 0; j < n; ++j) {
          const std::uint8_t v = onchip[((p * tiles + t) * n + j) * kPacked + c];
          if (v != kPadCode)
            throw std::invalid_argument("from_onchip_codes: padding position (tile " + to_string(t) + ", partition " +
                                        to_string(p) + ", slot " + to_string(c) + ", column " + to_string(j) +
                                        ") holds code " + to_string(v) + ", not 0: K index " +
                                        to_string(k_position(layout, t, p, c).k) + " is past K=" + to_string(k));
        }
      }
  const std::uint8_t* in = onchip.data();
  for (std::size_t p = 0; p < kPartitions; ++p)
    for (std::size_t t = 0; t < tiles; ++t) {
      std::uint8_t* row[kPacked];
      for (std::size_t c = 0; c < kPacked; ++c) {
        const std::size_t kk = k_position(layout, t, p, c).k;
        row[c] = kk < k ? codes_kn.data() + kk * n : nullptr;
      }
      for (std::size_t j = 0; j < n; ++j)
        for (std::size_t c = 0; c < kPacked; ++c, ++in)
          if (row[c]) row[c][j] = *in;
    }
}

// ---- scale placement -------------------------------------------------------------------------
// Compact row b = 16t + g  <->  on-chip partition scale_partition(g), columns t*N .. t*N + N-1.
void to_onchip_scales(KLayout layout, std::size_t k, std::size_t n, std::span<const std::uint8_t> compact,
                      std::span<std::uint8_t> onchip) {
  const std::size_t blocks = mx_blocks(layout, k);
  check_size("to_onchip_scales", "compact", compact.size(), checked_mul(blocks, n, "blocks x N"),
             compact_shape(layout, blocks, k, n));
  check_size("to_onchip_scales", "onchip", onchip.size(), onchip_scales_size(k, n), "[128, T, N] for " + kn(k, n));
  const std::size_t tiles = k_tiles(k);
  std::fill(onchip.begin(), onchip.end(), kUnusedScale);
  for (std::size_t b = 0; b < blocks; ++b) {
    const std::size_t t = b / kBlocksPerTile, p = scale_partition(b % kBlocksPerTile);
    std::copy_n(compact.data() + b * n, n, onchip.data() + (p * tiles + t) * n);
  }
}

void from_onchip_scales(KLayout layout, std::size_t k, std::size_t n, std::span<const std::uint8_t> onchip,
                        std::span<std::uint8_t> compact) {
  const std::size_t blocks = mx_blocks(layout, k);
  check_size("from_onchip_scales", "onchip", onchip.size(), onchip_scales_size(k, n), "[128, T, N] for " + kn(k, n));
  check_size("from_onchip_scales", "compact", compact.size(), checked_mul(blocks, n, "blocks x N"),
             compact_shape(layout, blocks, k, n));
  const std::size_t tiles = k_tiles(k);
  for (std::size_t b = 0; b < blocks; ++b) {
    const std::size_t t = b / kBlocksPerTile, p = scale_partition(b % kBlocksPerTile);
    std::copy_n(onchip.data() + (p * tiles + t) * n, n, compact.data() + b * n);
  }
}

// ---- x4 packing --------------------------------------------------------------------------------
std::optional<X4Type> parse_x4_type(std::string_view name) {
  if (name == "float8_e4m3fn_x4") return X4Type::kFloat8E4M3fnX4;
  if (name == "float8_e5m2_x4") return X4Type::kFloat8E5M2X4;
  if (name == "float4_e2m1fn_x4") return X4Type::kFloat4E2M1fnX4;
  return std::nullopt;
}

std::string_view x4_type_name(X4Type type) {
  switch (type) {
    case X4Type::kFloat8E4M3fnX4: return "float8_e4m3fn_x4";
    case X4Type::kFloat8E5M2X4: return "float8_e5m2_x4";
    case X4Type::kFloat4E2M1fnX4: return "float4_e2m1fn_x4";
  }
  throw std::invalid_argument("x4_type_name: unknown X4Type " + to_string(static_cast<int>(type)));
}

const Format& x4_element_format(X4Type type) {
  switch (type) {
    case X4Type::kFloat8E4M3fnX4: return kE4M3FN;
    case X4Type::kFloat8E5M2X4: return kE5M2;
    case X4Type::kFloat4E2M1fnX4: return kE2M1;
  }
  throw std::invalid_argument("x4_element_format: unknown X4Type " + to_string(static_cast<int>(type)));
}

void pack_x4(X4Type type, std::span<const std::uint8_t> codes, std::span<std::uint8_t> image) {
  const std::string name(x4_type_name(type));
  if (codes.size() % kPacked != 0)
    throw std::invalid_argument("pack_x4 (" + name + "): " + to_string(codes.size()) +
                                " codes is not a whole number of x4 elements (4 codes each)");
  check_size("pack_x4", "image", image.size(), codes.size() / kPacked * x4_bytes(type),
             to_string(codes.size() / kPacked) + " " + name + " elements");
  if (type != X4Type::kFloat4E2M1fnX4) {  // fp8: slot c is byte c, the image is the codes
    std::copy(codes.begin(), codes.end(), image.begin());
    return;
  }
  for (std::size_t i = 0; i < codes.size(); ++i)  // check first: a rejected input writes nothing
    if (codes[i] > 0xF)
      throw std::invalid_argument("pack_x4 (" + name + "): code[" + to_string(i) + "] = " + to_string(codes[i]) +
                                  " is not a 4-bit code");
  for (std::size_t b = 0; b < image.size(); ++b)  // byte b = slots 2b (low nibble), 2b + 1 (high)
    image[b] = static_cast<std::uint8_t>(codes[2 * b] | codes[2 * b + 1] << 4);
}

void unpack_x4(X4Type type, std::span<const std::uint8_t> image, std::span<std::uint8_t> codes) {
  const std::string name(x4_type_name(type));
  const std::size_t bytes = x4_bytes(type);
  if (image.size() % bytes != 0)
    throw std::invalid_argument("unpack_x4 (" + name + "): " + to_string(image.size()) +
                                " bytes is not a whole number of " + to_string(bytes) + "-byte elements");
  check_size("unpack_x4", "codes", codes.size(), image.size() / bytes * kPacked,
             to_string(image.size() / bytes) + " " + name + " elements");
  if (type != X4Type::kFloat4E2M1fnX4) {
    std::copy(image.begin(), image.end(), codes.begin());
    return;
  }
  for (std::size_t b = 0; b < image.size(); ++b) {
    codes[2 * b] = image[b] & 0xF;
    codes[2 * b + 1] = image[b] >> 4;
  }
}

}  // namespace fp8q::trn3
