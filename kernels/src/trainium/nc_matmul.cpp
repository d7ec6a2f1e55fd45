// nc_matmul and nc_matmul_mx: one Tensor Engine instruction each, on SBUF tiles (see
// fp8q/kernels/trainium.hpp for the model and its assumptions). Every PE addition is one
// add_round() of pe_arith: the exact sum rounded once to fp32.
#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "fp8q/kernels/trainium.hpp"
#include "fp8q/numerics/convert.hpp"
#include "pe_arith.hpp"

namespace fp8q::trn {
namespace {

using detail::add_round;
using detail::exact_add;
using detail::exact_of;
using detail::exact_product;
using detail::Exact;

[[noreturn]] void fail(const std::string& instr, const std::string& what) {
  throw std::invalid_argument(instr + ": " + what);
}

bool is_element_format(const Format& f) { return f.bits() <= 8 && f.specials != Specials::kExponentOnly; }

// Bytes a strided view needs: the last partition's row ends at ((P-1) * stride + free) units.
std::size_t needed(std::size_t partitions, std::size_t free, std::size_t stride, std::size_t unit_bytes) {
  return partitions == 0 || free == 0 ? 0 : ((partitions - 1) * stride + free) * unit_bytes;
}

void check_geometry(const std::string& instr, const char* name, std::size_t partitions, std::size_t free,
                    std::size_t stride, std::size_t max_free, std::size_t bytes, std::size_t unit_bytes) {
  const std::string n(name);
  if (partitions == 0 || partitions > kPartitions)
    fail(instr, n + ".partitions: " + std::to_string(partitions) + ", must be in [1, 128]");
  if (free == 0 || free > max_free)
    fail(instr, n + ".free: " + std::to_string(free) + ", must be in [1, " + std::to_string(max_free) + "]");
  if (stride < free)
    fail(instr, n + ".partition_stride: " + std::to_string(stride) + " is below free " + std::to_string(free));
  if (partitions > 1 && stride > (SIZE_MAX / unit_bytes - free) / (partitions - 1))
    fail(instr, n + ".partition_stride: " + std::to_string(stride) + " is too large to address");
  const std::size_t want = needed(partitions, free, stride, unit_bytes);
  if (bytes < want)
    fail(instr, n + ": " + std::to_string(bytes) + " bytes, the view needs " + std::to_string(want));
}

// The column sum t into its PSUM entry: fp32(psum + t), or for a tile's first instruction
// fp32(+0 + t), as the models start PSUM at +0 (a t that rounded to -0, from MX products below
// 2^-150, is stored as +0).
void into_psum(float& psum, float t, bool accumulate) {
  psum = add_round(exact_of(accumulate ? psum : 0.0f), exact_of(t));
}

void check_dst(const std::string& instr, const Psum& dst, std::size_t m, std::size_t n) {
  if (dst.rows != m || dst.cols != n || dst.values.size() != m * n)
    fail(instr, "dst: " + std::to_string(dst.rows) + " x " + std::to_string(dst.cols) + " with " +
                    std::to_string(dst.values.size()) + " values, expected stationary.free x moving.free = " +
                    std::to_string(m) + " x " + std::to_string(n));
}

// ---- nc_matmul ----------------------------------------------------------------------------------
// The values of a tile as floats, [K][free] with K = partitions * rows (K index p * rows + r).
std::vector<float> decode_tile(const std::string& instr, const char* name, const Tile& t, std::size_t rows) {
  const Format& f = format_of(t.format);
  const bool bf16 = t.format == FormatId::kBF16;
  if (!bf16 && !is_element_format(f))
    fail(instr, std::string(name) + ".format: " + std::string(f.name) + " is neither an FP8 / fp6 / fp4 element format nor bf16");
  if (rows == 2 && (bf16 || f.bits() != 8))
    fail(instr, std::string(name) + ".format: " + std::string(f.name) + ": double_row mode takes FP8 operands only");
  const std::size_t eb = bf16 ? 2 : 1;
  check_geometry(instr, name, t.partitions, t.free, t.partition_stride, std::string_view(name) == "stationary" ? kMaxStationaryFree : kMaxMovingFree,
                 t.bytes.size(), rows * eb);
  std::vector<float> v(t.partitions * rows * t.free);
  for (std::size_t p = 0; p < t.partitions; ++p)
    for (std::size_t col = 0; col < t.free; ++col)
      for (std::size_t r = 0; r < rows; ++r) {
        const std::size_t at = ((p * t.partition_stride + col) * rows + r) * eb;
        float x;
        if (bf16) {
          x = float_of(static_cast<std::uint32_t>(t.bytes[at] | t.bytes[at + 1] << 8) << 16);
        } else {
          const std::uint8_t code = t.bytes[at];
          if ((code >> f.bits()) != 0)
            fail(instr, std::string(name) + "[partition " + std::to_string(p) + ", column " + std::to_string(col) +
                            (rows == 2 ? ", row " + std::to_string(r) : std::string()) + "]: byte " +
                            std::to_string(code) + " is not a " + std::string(f.name) + " code");
          x = decode_f32(code, f);
        }
        v[(p * rows + r) * t.free + col] = x;
      }
  return v;
}

// ---- nc_matmul_mx -------------------------------------------------------------------------------
// Codes of an x4 tile as floats, [partition][column][slot].
std::vector<float> decode_x4(const std::string& instr, const char* name, const X4Tile& t, std::size_t max_free) {
  const std::size_t xb = trn3::x4_bytes(t.type);
  check_geometry(instr, name, t.partitions, t.free, t.partition_stride, max_free, t.image.size(), xb);
  const Format& f = trn3::x4_element_format(t.type);
  std::array<float, 256> table{};
  for (std::size_t c = 0; c < (std::size_t{1} << f.bits()); ++c) table[c] = decode_f32(c, f);
  std::vector<float> v(t.partitions * t.free * trn3::kPacked);
  for (std::size_t p = 0; p < t.partitions; ++p)
    for (std::size_t col = 0; col < t.free; ++col) {
      const std::size_t at = (p * t.partition_stride + col) * xb;
      for (std::size_t c = 0; c < trn3::kPacked; ++c) {
        std::uint8_t code;
        if (xb == 4) {
          code = t.image[at + c];  // little-endian container: slot c is byte c
        } else {
          const auto x4 = static_cast<std::uint16_t>(t.image[at] | t.image[at + 1] << 8);
          code = trn3::fp4_x4_code(x4, c);
        }
        v[(p * t.free + col) * trn3::kPacked + c] = table[code];
      }
    }
  return v;
}

// The scale byte of data partition p, column col.
std::uint8_t scale_at(const ScaleTile& s, std::size_t p, std::size_t col) {
  return s.bytes[trn3::scale_partition(p / trn3::kBlockPartitions) * s.partition_stride + col];
}

void check_scales(const std::string& instr, const char* name, const ScaleTile& s, const X4Tile& data) {
  const std::size_t last_group = (data.partitions - 1) / trn3::kBlockPartitions;
  const std::size_t last = trn3::scale_partition(last_group);
  if (s.partition_stride < data.free)
    fail(instr, std::string(name) + ".partition_stride: " + std::to_string(s.partition_stride) + " is below free " +
                    std::to_string(data.free));
  if (last > 0 && s.partition_stride > (SIZE_MAX - data.free) / last)
    fail(instr, std::string(name) + ".partition_stride: " + std::to_string(s.partition_stride) +
                    " is too large to address");
  const std::size_t want = last * s.partition_stride + data.free;
  if (s.bytes.size() < want)
    fail(instr, std::string(name) + ": " + std::to_string(s.bytes.size()) + " bytes, the scales of " +
                    std::to_string(data.partitions) + " partitions need " + std::to_string(want));
}

}  // namespace

void nc_matmul(const Psum& dst, const Tile& st, const Tile& mv, PerfMode mode, bool accumulate) {
  const std::string instr = mode == PerfMode::kDoubleRow ? "nc_matmul (double_row)" : "nc_matmul";
  const std::size_t rows = mode == PerfMode::kDoubleRow ? 2 : 1;
  const std::vector<float> a = decode_tile(instr, "stationary", st, rows);
  const std::vector<float> b = decode_tile(instr, "moving", mv, rows);
  if (st.partitions != mv.partitions)
    fail(instr, "stationary has " + std::to_string(st.partitions) + " partitions, moving " +
                    std::to_string(mv.partitions) + ": the contraction axis must match");
  check_dst(instr, dst, st.free, mv.free);
  const std::size_t k = st.partitions * rows;
  for (std::size_t m = 0; m < st.free; ++m)
    for (std::size_t n = 0; n < mv.free; ++n) {
      // the column accumulator: t = fp32(t + a_k * b_k) in K order, from +0
      float t = 0.0f;
      for (std::size_t i = 0; i < k; ++i) t = add_round(exact_of(t), exact_product(a[i * st.free + m], b[i * mv.free + n]));
      into_psum(dst.values[m * mv.free + n], t, accumulate);
    }
}

void nc_matmul_mx(const Psum& dst, const X4Tile& st, const ScaleTile& st_scale, const X4Tile& mv,
                  const ScaleTile& mv_scale, const Trainium3MxAssumptions& assume, bool accumulate) {
  const std::string instr = "nc_matmul_mx";
  const std::vector<float> a = decode_x4(instr, "stationary", st, kMaxStationaryFree);
  const std::vector<float> b = decode_x4(instr, "moving", mv, kMaxMovingFree);
  if (st.partitions != mv.partitions)
    fail(instr, "stationary has " + std::to_string(st.partitions) + " partitions, moving " +
                    std::to_string(mv.partitions) + ": the contraction axis must match");
  check_scales(instr, "stationary_scale", st_scale, st);
  check_scales(instr, "moving_scale", mv_scale, mv);
  check_dst(instr, dst, st.free, mv.free);
  constexpr std::size_t kC = trn3::kPacked;
  for (std::size_t m = 0; m < st.free; ++m)
    for (std::size_t n = 0; n < mv.free; ++n) {
      float t = 0.0f;
      for (std::size_t p = 0; p < st.partitions; ++p) {
        // the partition's group scale 2^(e_a + e_b); E8M0 0xFF is NaN
        const std::uint8_t sa = scale_at(st_scale, p, m), sb = scale_at(mv_scale, p, n);
        const int e = (static_cast<int>(sa) - 127) + (static_cast<int>(sb) - 127);
        const bool nan = sa == 0xFF || sb == 0xFF;
        std::array<Exact, kC> prod;
        for (std::size_t c = 0; c < kC; ++c)
          prod[c] = exact_product(a[(p * st.free + m) * kC + c], b[(p * mv.free + n) * kC + c], e, nan);
        if (assume.exact_partition_sum) {
          Exact s = prod[0];  // A1: the 4 scaled products summed exactly
          for (std::size_t c = 1; c < kC; ++c) s = exact_add(s, prod[c]);
          // A2: one rounding into the column accumulator; otherwise s_p is rounded first
          t = assume.single_rounding_add ? add_round(exact_of(t), s) : add_round(exact_of(t), exact_of(detail::round_f32(s)));
        } else {
          float sp = 0.0f;  // not A1: left to right in fp32 from +0
          for (std::size_t c = 0; c < kC; ++c) sp = add_round(exact_of(sp), prod[c]);
          t = add_round(exact_of(t), exact_of(sp));
        }
      }
      into_psum(dst.values[m * mv.free + n], t, accumulate);
    }
}

}  // namespace fp8q::trn
