// Producer presets (quant/producer.hpp).
#include "fp8q/quant/producer.hpp"

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
  return std::nullopt;
}

std::string_view producer_name(Producer p) {
  switch (p) {
    case Producer::kFp8q: return "fp8q";
    case Producer::kCompressedTensors: return "compressed-tensors";
    case Producer::kModelOpt: return "modelopt";
  }
  return "?";
}

void quantize_like_producer(Producer producer, std::span<const std::byte> data, const Format& from,
                            const BlockGrid& grid, std::span<std::uint8_t> codes, std::span<float> scale_inv,
                            const BulkOptions& bulk) {
  if (producer == Producer::kFp8q) throw std::invalid_argument("quantize_like_producer: fp8q is not a producer preset");
  if (from != kF32 && from != kBF16 && from != kF16)
    throw std::invalid_argument(std::string(producer_name(producer)) + "'s quantizer reads f32, bf16 or f16, not " +
                                std::string(from.name));
  const std::size_t esz = from.storage_bytes();
  if (data.size() != grid.rows * grid.cols * esz || codes.size() != grid.rows * grid.cols ||
      scale_inv.size() != grid.grid_size())
    throw std::invalid_argument("quantize_like_producer: sizes do not match the grid");
  if (producer == Producer::kModelOpt && grid.grid_size() > 1)
    throw std::invalid_argument("quantize_like_producer: ModelOpt's preset here is per tensor (its per-row and "
                                "per-block FP8 are fp8q's own divide form)");
  std::vector<float> amaxes(grid.grid_size());
  block_amax(data, from, grid, amaxes, bulk.threads);
  // torch's eps of D: 2^-23, 2^-7 (bf16), 2^-10 (fp16)
  const float eps = from == kF32 ? 0x1p-23f : from == kBF16 ? 0x1p-7f : 0x1p-10f;
  ConvertOptions to_d;  // nearest-even into D, as torch rounds a result to the tensor's dtype
  to_d.overflow = Overflow::kInfOrNan;
  auto in_d = [&](float x) { return from == kF32 ? x : decode_f32(encode_f32(x, from, to_d), from); };
  const ScopedDefaultFpEnv env;  // the divisions below: IEEE nearest-even, subnormals kept
  for (std::size_t b = 0; b < amaxes.size(); ++b) {
    if (producer == Producer::kModelOpt) {  // its export divides the raw amax
      scale_inv[b] = amaxes[b] / 448.0f;
      if (!(scale_inv[b] > 0))
        throw std::invalid_argument("like modelopt: the tensor's amax is " + std::to_string(amaxes[b]) +
                                    ", for which ModelOpt's FP8 export writes the scale 0 and NaN codes (0 / 0)");
      continue;
    }
    const float s = in_d(amaxes[b] / 448.0f);
    scale_inv[b] = s == 0 ? eps : s;
  }
  // q = e4m3fn(D(fp32(x / s))): a row's fp32 quotients, rounded to D, then converted (ModelOpt
  // through torch's cast, which has no saturation)
  ConvertOptions to_fp8;
  to_fp8.overflow = producer == Producer::kModelOpt ? Overflow::kInfOrNan : Overflow::kSaturate;
  const BulkOptions one{1, bulk.isa};  // a row at a time
  std::vector<float> x(grid.cols);
  std::vector<std::byte> narrow(grid.cols * esz);
  for (std::size_t r = 0; r < grid.rows; ++r) {
    convert(data.subspan(r * grid.cols * esz, grid.cols * esz), from, std::as_writable_bytes(std::span(x)), kF32, {},
            one);
    for (std::size_t c = 0; c < grid.cols; ++c) x[c] = x[c] / scale_inv[grid.scale_index(r, c)];
    const std::span<std::uint8_t> row(codes.data() + r * grid.cols, grid.cols);
    if (from == kF32) {
      convert(x, row, kE4M3FN, to_fp8, one);
      continue;
    }
    convert(std::as_bytes(std::span(x)), kF32, narrow, from, to_d, one);
    convert(narrow, from, std::as_writable_bytes(row), kE4M3FN, to_fp8, one);
  }
}

}  // namespace fp8q
