#include "fp8q/quant/recipes/current_scaling.hpp"

#include <stdexcept>
#include <string>

#include "fp8q/numerics/arith.hpp"
#include "fp8q/numerics/bulk.hpp"
#include "fp8q/quant/amax.hpp"

namespace fp8q {

CurrentScaling::Result CurrentScaling::quantize(std::span<const float> x, TensorRole role,
                                                std::span<std::uint8_t> codes, int threads) const {
  if (codes.size() != x.size())
    throw std::invalid_argument("current scaling: " + std::to_string(x.size()) + " values but " +
                                std::to_string(codes.size()) + " codes");
  const Format& f = formats.of(role);
  if (f.bits() > 8 || !f.is_signed || f.specials == Specials::kExponentOnly)
    throw std::invalid_argument(std::string("current scaling: the ") +
                                (role == TensorRole::kGradient ? "gradient" : "forward") +
                                " format must be a signed element format of at most 8 bits, got " +
                                std::string(f.name));
  Result r;
  r.amax = amax(x, threads);
  r.scale = scale_from_amax(r.amax, f, options);
  r.scale_inv = divide_rne(1.0f, r.scale);
  ConvertOptions o;  // nearest-even, saturating
  o.scale = r.scale;
  convert(x, codes, f, o, {threads, std::nullopt});
  return r;
}

}  // namespace fp8q
