// fp8q/quant/trainium2.hpp: OCP e4m3fn data re-encoded for Trainium2's IEEE-style e4m3.
//
// Trainium2's E4M3 has range +/-240 (documented), OCP e4m3fn +/-448. fp8q re-encodes with a
// factor of exactly 2: every e4m3fn value v becomes the e4m3 code of v / 2, and every scale
// that dequantizes those codes (scale_inv) doubles, so the dequantized values do not move.
// v / 2 is exact in e4m3 for every e4m3fn value except v = k * 2^-9 with k odd and v < 2^-5
// (the subnormals and the lowest normal binade with a last mantissa bit of 1: v / 2 needs a
// multiple of 2^-10 where e4m3's step is 2^-9); those 16 codes round to nearest-even and are
// counted. (A factor of 448/240 would make almost every value inexact.)
// This is fp8q's choice, not an AWS-documented procedure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace fp8q {

struct Trainium2Reencoding {
  std::size_t inexact = 0;  // codes whose value / 2 is not an e4m3 value (rounded)
  std::size_t nans = 0;     // e4m3fn NaNs, written as e4m3's canonical NaN (sign kept)
};

// Re-encodes e4m3fn codes into e4m3 codes for scale_inv' = 2 * scale_inv.
Trainium2Reencoding reencode_e4m3fn_for_trainium2(std::span<const std::uint8_t> e4m3fn, std::span<std::uint8_t> e4m3);

// scale_inv' = fp32(2 * scale_inv) for each scale (exact unless it overflows fp32, which
// throws std::overflow_error naming the index).
void double_scale_inv(std::span<const float> scale_inv, std::span<float> out);

}  // namespace fp8q
