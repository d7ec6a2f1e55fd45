// Internal: the MSE model of calibrators.hpp, built once per histogram and evaluated per scale.
#pragma once

#include <cstdint>
#include <vector>

#include "fp8q/calib/histogram.hpp"
#include "grid.hpp"

namespace fp8q::calib::detail {

class MseModel {
 public:
  MseModel(const HistogramObserver& h, const Format& target);

  // N * model MSE for this scale: the histogram part plus the exact tail part.
  double sum_sq_error(float scale) const { return bulk(scale) + tail(scale); }
  std::uint64_t count() const { return n_; }
  const std::vector<float>& tail_values() const { return tail_; }  // nonzero, descending
  const Grid& grid() const { return grid_; }

 private:
  double bulk(double scale) const;
  double tail(float scale) const;
  // Error of the samples in [u, v) around the dequantized value c.
  double cell(double u, double v, double c) const;
  double overlap(std::size_t i, double u, double v, double c) const;
  double full(std::size_t a, std::size_t b, double c) const;

  const HistogramObserver& h_;
  const Grid& grid_;
  std::size_t nb_;                // bins [0, nb) reach the amax
  std::vector<double> lo_, hi_;   // where each bin's samples can be: its edges, narrowed to the
                                  // smallest nonzero |x| and the smallest tail value
  std::vector<double> c_;         // residual counts: bins minus exact zeros minus tail values
  std::vector<double> s0_, s1_, s2_;  // prefix sums of c, c m, c (m^2 + w^2 / 12) (m, w: centre, width)
  std::vector<float> tail_;
  std::uint64_t n_;
  mutable std::vector<std::uint8_t> codes_;
};

}  // namespace fp8q::calib::detail
