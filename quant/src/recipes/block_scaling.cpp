#include "fp8q/quant/recipes/block_scaling.hpp"

namespace fp8q {

QuantizeOptions BlockScaling::quantize_options(TensorRole role, int threads) const {
  QuantizeOptions o;
  o.element = role == TensorRole::kGradient ? formats.gradient : formats.forward;
  o.granularity = granularity(role);
  o.apply = apply;
  o.amax = options;
  o.convert = convert;
  o.bulk.threads = threads;
  return o;
}

QuantizedTensor BlockScaling::quantize(std::span<const std::byte> data, const Format& from,
                                       std::span<const std::uint64_t> shape, TensorRole role, int threads) const {
  return fp8q::quantize(data, from, shape, quantize_options(role, threads));
}

}  // namespace fp8q
