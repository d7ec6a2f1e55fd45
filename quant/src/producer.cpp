// Producer presets (quant/producer.hpp).
#include "fp8q/quant/producer.hpp"

#include <algorithm>
#include <limits>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "fp8q/numerics/convert.hpp"
#include "fp8q/numerics/fp_env.hpp"
#include "fp8q/quant/amax.hpp"

namespace fp8q {

std::optional<Producer> parse_producer(std::string_view name) {
  if (name == "fp8q") return Producer::kFp8q;
  if (name == "compressed-tensors") return Producer::kCompressedTensors;
  if (name == "modelopt") return Producer::kModelOpt;
  if (name == "modelopt-cuda") return Producer::kModelOptCuda;
  return std::nullopt;
}

std::string_view producer_name(Producer p) {
  switch (p) {
    case Producer::kFp8q: return "fp8q";
    case Producer::kCompressedTensors: return "compressed-tensors";
    case Producer::kModelOpt: return "modelopt";
    case Producer::kModelOptCuda: return "modelopt-cuda";
  }
  return "?";
}

namespace {
// x / n for a Python number n as torch computes it for the producer: on a CPU the quotient, on
// CUDA (div_true_kernel_cuda, a CPU scalar divisor) x times fp32(1 / n)
float divide_by_number(Producer p, float x, float n) {
  return p == Producer::kModelOptCuda ? x * static_cast<float>(1.0 / static_cast<double>(n)) : x / n;
}

// x rounded to D nearest-even, as torch rounds a result to a tensor's dtype (overflow to Inf)
float in_dtype(float x, const Format& d) {
  if (d == kF32) return x;
  ConvertOptions o;
  o.overflow = Overflow::kInfOrNan;
  return decode_f32(encode_f32(x, d, o), d);
}

// The arguments both quantizers share, checked; then each block's amax.
std::vector<float> checked_amaxes(const char* fn, Producer producer, std::span<const std::byte> data,
                                  const Format& from, const BlockGrid& grid, std::size_t codes, std::size_t scales,
                                  const BulkOptions& bulk) {
  if (producer == Producer::kFp8q) throw std::invalid_argument(std::string(fn) + ": fp8q is not a producer preset");
  if (from != kF32 && from != kBF16 && from != kF16)
    throw std::invalid_argument("like " + std::string(producer_name(producer)) +
                                ": its quantizer reads f32, bf16 or f16, not " + std::string(from.name));
  if (data.size() != grid.rows * grid.cols * from.storage_bytes() || codes != grid.rows * grid.cols ||
      scales != grid.grid_size())
    throw std::invalid_argument(std::string(fn) + ": sizes do not match the grid");
  std::vector<float> amaxes(grid.grid_size());
  block_amax(data, from, grid, amaxes, bulk.threads);
  return amaxes;
}
}  // namespace

void quantize_like_producer(Producer producer, std::span<const std::byte> data, const Format& from,
                            const BlockGrid& grid, bool per_tensor, std::span<std::uint8_t> codes,
                            std::span<float> scale_inv, const BulkOptions& bulk) {
  const std::vector<float> amaxes =
      checked_amaxes("quantize_like_producer", producer, data, from, grid, codes.size(), scale_inv.size(), bulk);
  const std::size_t esz = from.storage_bytes();
  // torch's eps of D: 2^-23, 2^-7 (bf16), 2^-10 (fp16)
  const float eps = from == kF32 ? 0x1p-23f : from == kBF16 ? 0x1p-7f : 0x1p-10f;
  const ScopedDefaultFpEnv env;  // the divisions below: IEEE nearest-even, subnormals kept
  const bool modelopt = producer == Producer::kModelOpt || producer == Producer::kModelOptCuda;
  for (std::size_t b = 0; b < amaxes.size(); ++b) {
    if (modelopt) {  // its export divides the raw amax
      scale_inv[b] = divide_by_number(producer, amaxes[b], 448.0f);
      if (!per_tensor && scale_inv[b] == 0) scale_inv[b] = 1.0f;
      if (!(scale_inv[b] > 0))
        throw std::invalid_argument("like " + std::string(producer_name(producer)) + ": the tensor's amax is " +
                                    float_text(amaxes[b]) +
                                    ", for which ModelOpt's FP8 export writes the scale 0 and NaN codes (0 / 0)");
      continue;
    }
    const float s = in_dtype(amaxes[b] / 448.0f, from);
    scale_inv[b] = s == 0 ? eps : s;
  }
  // q = e4m3fn(D(fp32(x / s))): a row's fp32 quotients, rounded to D (not by ModelOpt's per-row
  // and per-block scales, dimensioned fp32 tensors), then converted (ModelOpt through torch's
  // cast, which has no saturation)
  ConvertOptions to_fp8;
  to_fp8.overflow = modelopt ? Overflow::kInfOrNan : Overflow::kSaturate;
  const bool quotient_in_d = from != kF32 && (!modelopt || per_tensor);
  const BulkOptions one{1, bulk.isa};  // a row at a time
  std::vector<float> x(grid.cols);
  std::vector<std::byte> narrow(grid.cols * esz);
  ConvertOptions to_d;  // into D as in_dtype
  to_d.overflow = Overflow::kInfOrNan;
  for (std::size_t r = 0; r < grid.rows; ++r) {
    convert(data.subspan(r * grid.cols * esz, grid.cols * esz), from, std::as_writable_bytes(std::span(x)), kF32, {},
            one);
    for (std::size_t c = 0; c < grid.cols; ++c) x[c] = x[c] / scale_inv[grid.scale_index(r, c)];
    const std::span<std::uint8_t> row(codes.data() + r * grid.cols, grid.cols);
    if (!quotient_in_d) {
      convert(x, row, kE4M3FN, to_fp8, one);
      continue;
    }
    convert(std::as_bytes(std::span(x)), kF32, narrow, from, to_d, one);
    convert(narrow, from, std::as_writable_bytes(row), kE4M3FN, to_fp8, one);
  }
}

float nvfp4_global_like_producer(Producer producer, float amax, const Format& from) {
  const std::string like = "like " + std::string(producer_name(producer)) + ": ";
  if (!(amax < std::numeric_limits<float>::infinity()))
    throw std::invalid_argument(like + "the tensor's amax is " + float_text(amax) +
                                ", for which its NVFP4 quantizer writes NaN or Inf codes");
  const ScopedDefaultFpEnv env;  // IEEE nearest-even, subnormals kept
  if (producer == Producer::kModelOpt || producer == Producer::kModelOptCuda) {
    const float g = divide_by_number(producer, amax, 2688.0f);
    if (!(g > 0))
      throw std::invalid_argument(like + "the tensor's amax is " + float_text(amax) +
                                  ", for which ModelOpt's NVFP4 export computes weight_scale_2 = " + float_text(g) +
                                  " and divides by 0");
    return g;
  }
  if (producer != Producer::kCompressedTensors)
    throw std::invalid_argument("nvfp4_global_like_producer: " + std::string(producer_name(producer)) +
                                " is not a producer preset");
  // 2688 / amax as torch computes a scalar over a D tensor, D(D(1 / amax) * 2688), the amax
  // clamped to D's smallest normal first; Inf becomes 1
  const float tiny = from == kF16 ? 0x1p-14f : 0x1p-126f;
  const float g = in_dtype(in_dtype(1.0f / std::max(amax, tiny), from) * 2688.0f, from);
  return g < std::numeric_limits<float>::infinity() ? g : 1.0f;
}

void quantize_nvfp4_like_producer(Producer producer, std::span<const std::byte> data, const Format& from,
                                  const BlockGrid& grid, std::span<std::uint8_t> codes, std::span<std::uint8_t> scales,
                                  float& global, std::optional<float> given, const BulkOptions& bulk) {
  const std::string like = "like " + std::string(producer_name(producer)) + ": ";
  if (grid.block_rows != 1 || grid.block_cols != 16)
    throw std::invalid_argument(like + "its NVFP4 weights have blocks of 1 x 16 (granularity nvfp4)");
  if (grid.cols % 16 != 0)
    throw std::invalid_argument(like + "the preset takes a last dimension that is a multiple of 16, not " +
                                std::to_string(grid.cols) +
                                (producer != Producer::kCompressedTensors ? " (ModelOpt pads it with zeros to one: pad it so)"
                                                                          : ""));
  const std::vector<float> amaxes =
      checked_amaxes("quantize_nvfp4_like_producer", producer, data, from, grid, codes.size(), scales.size(), bulk);
  const std::size_t esz = from.storage_bytes();
  // the tensor's amax: the largest block amax (>= 0 or NaN, whose patterns sort above)
  const float amax = float_of(std::accumulate(amaxes.begin(), amaxes.end(), std::uint32_t{0},
                                              [](std::uint32_t m, float a) { return std::max(m, bits_of(a)); }));
  const float computed = nvfp4_global_like_producer(producer, amax, from);  // its checks, even where given
  if (given && !is_finite_positive(*given))
    throw std::invalid_argument(like + "the given global scale is " + float_text(*given) + "; it must be finite and positive");
  const float g = given.value_or(computed);
  const ScopedDefaultFpEnv env;  // the arithmetic below: IEEE nearest-even, subnormals kept
  const bool modelopt = producer == Producer::kModelOpt || producer == Producer::kModelOptCuda;
  // every block's scale and multiplier before anything is written
  const float six_g = 6.0f * g;
  const auto eps = static_cast<std::uint8_t>(encode_f32(0.125f, kE4M3FN));  // compressed-tensors' eps of e4m3fn
  std::vector<std::uint8_t> codes_of_scales(amaxes.size());
  std::vector<float> d(amaxes.size());
  for (std::size_t b = 0; b < amaxes.size(); ++b) {
    float s;
    if (modelopt) {
      s = amaxes[b] / six_g;
      if (s == 0) s = 1.0f;
      s = std::min(std::max(s, 0x1p-9f), 448.0f);
    } else {
      s = std::min(g * in_dtype(amaxes[b] / 6.0f, from), 448.0f);
    }
    std::uint8_t c = static_cast<std::uint8_t>(encode_f32(s, kE4M3FN));  // in range: nearest-even
    if (c == 0) c = eps;  // (ModelOpt's s is at least 2^-9, never 0)
    codes_of_scales[b] = c;
    const float decoded = decode_f32(c, kE4M3FN);
    d[b] = modelopt ? decoded * g : decoded / g;
    if (d[b] == 0)
      throw std::invalid_argument(like + "row " + std::to_string(b / grid.grid_cols()) + ", block " +
                                  std::to_string(b % grid.grid_cols()) + ": its multiplier is 0 in float32 (block "
                                  "scale " + float_text(decoded) + ", tensor scale " + float_text(g) +
                                  "), where the quantizer divides by 0");
  }
  ConvertOptions to_fp4;
  to_fp4.overflow = Overflow::kSaturate;
  const BulkOptions one{1, bulk.isa};  // a row at a time
  std::vector<float> x(grid.cols);
  for (std::size_t r = 0; r < grid.rows; ++r) {
    convert(data.subspan(r * grid.cols * esz, grid.cols * esz), from, std::as_writable_bytes(std::span(x)), kF32, {},
            one);
    for (std::size_t c = 0; c < grid.cols; ++c) x[c] = x[c] / d[grid.scale_index(r, c)];
    const std::span<std::uint8_t> row(codes.data() + r * grid.cols, grid.cols);
    convert(x, row, kE2M1, to_fp4, one);
    for (std::size_t c = 0; c < grid.cols; ++c)
      if (bits_of(x[c]) == 0x80000000u) row[c] = 0;  // -0: both take the sign from x / d < 0
  }
  std::copy(codes_of_scales.begin(), codes_of_scales.end(), scales.begin());
  global = g;
}

}  // namespace fp8q
