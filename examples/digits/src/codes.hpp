// codes.hpp: the element encodings a checkpoint stores, decoded to fp32 from their bit layout.
//
// Written here from the public definitions, independently of fp8q's numerics module, so that
// the evaluation checks the quantizer rather than repeating it:
//   F8_E4M3 (OCP e4m3fn): s.eeee.mmm, bias 7, no Inf, S.1111.111 is NaN, max 448
//   e4m3 (IEEE-style, Trainium2): s.eeee.mmm, bias 7, S.1111.000 is Inf, S.1111.xxx NaN, max 240
//   E8M0 (MX scale): 2^(code - 127), 0xFF is NaN
//   e2m1 (FP4, two a byte): s.ee.m, bias 1, no Inf or NaN, max 6; element 2i in bits 0-3
//   BF16: the top 16 bits of an fp32;  F16: IEEE binary16
// Subnormals (exponent field 0) are m * 2^(1 - bias - mbits) in every format.
#pragma once

#include <array>
#include <cstdint>

namespace digits {

enum class Fp8 { kE4M3FN, kE4M3 };

// All 256 values of one FP8 format, indexed by code.
const std::array<float, 256>& fp8_table(Fp8 format);

// x -> the nearest e4m3fn code (ties to the even code), saturating at +/-448; x finite.
// Used only for static activation scales (input_scale): a = decode(encode(fp32(x / s))) * s.
std::uint8_t encode_e4m3fn(float x);

float e8m0_value(std::uint8_t code);   // 2^(code - 127), exact in fp32 for codes 1..254; 0xFF NaN
float e2m1_value(std::uint8_t code);   // the low 4 bits
float bf16_value(std::uint16_t bits);
float f16_value(std::uint16_t bits);

}  // namespace digits
