#include "fp8q/quant/recipes/mx_scaling.hpp"

namespace fp8q {

QuantizeOptions MxScaling::quantize_options(TensorRole role, int threads) const {
  QuantizeOptions o;
  o.element = role == TensorRole::kGradient ? formats.gradient : formats.forward;
  o.granularity = Granularity::mx();
  o.mx_rule = rule;
  o.convert = convert;
  o.bulk.threads = threads;
  return o;
}

QuantizedTensor MxScaling::quantize(std::span<const std::byte> data, const Format& from,
                                    std::span<const std::uint64_t> shape, TensorRole role, int threads) const {
  return fp8q::quantize(data, from, shape, quantize_options(role, threads));
}

}  // namespace fp8q
