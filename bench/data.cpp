#include "data.hpp"

#include <random>

#include "fp8q/numerics/convert.hpp"
#include "registry.hpp"

namespace fp8q::bench {

const std::vector<float>& f32_data() {
  static const std::vector<float> v = [] {
    std::vector<float> x(kArrayBytes / 4);
    std::mt19937 rng(1);
    std::normal_distribution<float> normal;
    for (float& f : x) f = normal(rng);
    return x;
  }();
  return v;
}

const std::vector<std::uint16_t>& bf16_data() {
  static const std::vector<std::uint16_t> v = [] {
    std::vector<std::uint16_t> x(kArrayBytes / 2);
    const auto& f = f32_data();
    for (std::size_t i = 0; i < x.size(); ++i)
      x[i] = static_cast<std::uint16_t>(convert_one(bits_of(f[i % f.size()] * 1.001f), kF32, kBF16, {}).code);
    return x;
  }();
  return v;
}

}  // namespace fp8q::bench
