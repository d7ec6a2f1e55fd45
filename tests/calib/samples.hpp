// Synthetic data with fixed seeds for the calibration tests, and the reference quantization
// error computed element by element with fp8q's scalar conversion (the specification):
//   q = convert_one(x, f32 -> target, nearest-even, saturate, scale), x_hat = decode(q) / scale.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "fp8q/numerics/convert.hpp"
#include "fp8q/numerics/format.hpp"

namespace fp8q::calib::testing {

inline std::vector<float> uniform(std::size_t n, float lo, float hi, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

inline std::vector<float> laplace(std::size_t n, double b, unsigned seed) {
  std::mt19937 rng(seed);
  std::exponential_distribution<double> e(1.0 / b);
  std::bernoulli_distribution sign(0.5);
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(sign(rng) ? e(rng) : -e(rng));
  return v;
}

inline std::vector<float> student_t(std::size_t n, double dof, double scale, unsigned seed) {
  std::mt19937 rng(seed);
  std::student_t_distribution<double> t(dof);
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(scale * t(rng));
  return v;
}

inline std::vector<float> normal(std::size_t n, double sigma, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> d(0.0, sigma);
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(d(rng));
  return v;
}

// The mean squared error of quantizing x with the scale quant's rule gives for `amax`.
inline double reference_mse_for_scale(std::span<const float> x, float scale, const Format& f) {
  ConvertOptions o;
  o.scale = scale;
  double s = 0;
  std::size_t n = 0;
  for (float v : x) {
    if (!std::isfinite(v)) continue;
    const std::uint64_t q = convert_one(bits_of(v), kF32, f, o).code;
    const double d = static_cast<double>(v) - decode_f64(q, f) / static_cast<double>(scale);
    s += d * d;
    ++n;
  }
  return n ? s / static_cast<double>(n) : 0.0;
}

}  // namespace fp8q::calib::testing
