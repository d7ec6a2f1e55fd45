// The MSE model (fp8q/calib/calibrators.hpp, `mse`).
//
// Bin i's c_i samples are taken as spread uniformly over [lo_i, hi_i]: the bin's edges, with
// the first nonzero bin starting at the smallest nonzero |x| and the last ending at the
// smallest tail value (the samples left in the bins are no larger; without a tail, the amax);
// both are known exactly, and a bin where they meet is a point mass. For a grid cell [u, v) whose
// samples dequantize to c = g_j / s:
//   part of a bin, [p, q) inside [lo, hi]:  c_i / (hi - lo) * integral_p^q (y - c)^2 dy
//                                           = c_i (q - p)(a^2 + a b + b^2) / (3 (hi - lo)),
//                                             a = p - c, b = q - c
//   a point mass at lo in [u, v):           c_i (lo - c)^2
//   whole bins a .. b-1:                    sum c_i ((m_i - c)^2 + w_i^2 / 12)
//                                           = S2 - 2 c S1 + c^2 S0 (prefix-sum differences)
#include "mse_model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>

#include "fp8q/numerics/bulk.hpp"

namespace fp8q::calib::detail {

MseModel::MseModel(const HistogramObserver& h, const Format& target)
    : h_(h), grid_(grid_of(target)), n_(h.count()) {
  const float amax = h.amax();
  nb_ = amax > 0 ? static_cast<std::size_t>(h.bin_of(amax)) + 1 : 1;
  std::vector<std::uint64_t> c(h.counts().begin(), h.counts().begin() + static_cast<std::ptrdiff_t>(nb_));
  c[0] -= h.zeros();  // exact zeros quantize to 0 for every scale: no error
  for (float t : h.tail())
    if (t > 0) {
      tail_.push_back(t);
      --c[static_cast<std::size_t>(h.bin_of(t))];
    }
  c_.assign(c.begin(), c.end());
  lo_.resize(nb_), hi_.resize(nb_);
  // the samples left in the bins are >= the smallest nonzero |x| and <= the smallest tail
  // value (the tail holds the largest ones)
  const double mn = h.min_nonzero();
  const double mx = tail_.empty() ? static_cast<double>(amax) : static_cast<double>(tail_.back());
  for (std::size_t i = 0; i < nb_; ++i) {
    lo_[i] = std::max(h.bin_edge(static_cast<int>(i)), mn);
    hi_[i] = std::min(h.bin_edge(static_cast<int>(i) + 1), mx);
    if (hi_[i] < lo_[i]) hi_[i] = lo_[i];  // only in empty bins below the smallest value
  }
  s0_.assign(nb_ + 1, 0), s1_.assign(nb_ + 1, 0), s2_.assign(nb_ + 1, 0);
  for (std::size_t i = 0; i < nb_; ++i) {
    const double m = (lo_[i] + hi_[i]) / 2, w = hi_[i] - lo_[i];
    s0_[i + 1] = s0_[i] + c_[i];
    s1_[i + 1] = s1_[i] + c_[i] * m;
    s2_[i + 1] = s2_[i] + c_[i] * (m * m + w * w / 12);
  }
  codes_.resize(tail_.size());
}

double MseModel::overlap(std::size_t i, double u, double v, double c) const {
  if (c_[i] == 0) return 0;
  const double lo = lo_[i], hi = hi_[i];
  if (hi == lo) return lo >= u && lo < v ? c_[i] * (lo - c) * (lo - c) : 0.0;
  const double p = std::max(u, lo), q = std::min(v, hi);
  if (q <= p) return 0;
  const double a = p - c, b = q - c;
  return c_[i] * (q - p) * (a * a + a * b + b * b) / (3 * (hi - lo));
}

double MseModel::full(std::size_t a, std::size_t b, double c) const {
  if (a >= b) return 0;
  const double e = (s2_[b] - s2_[a]) - 2 * c * (s1_[b] - s1_[a]) + c * c * (s0_[b] - s0_[a]);
  return std::max(0.0, e);  // rounding can dip below 0
}

double MseModel::cell(double u, double v, double c) const {
  const auto i0 = static_cast<std::size_t>(h_.bin_of_value(u));
  if (i0 >= nb_) return 0;
  const auto i1 = std::min(static_cast<std::size_t>(h_.bin_of_value(v)), nb_);
  if (i0 == i1) return overlap(i0, u, v, c);
  double e = overlap(i0, u, v, c) + full(i0 + 1, i1, c);
  if (i1 < nb_) e += overlap(i1, u, v, c);
  return e;
}

double MseModel::bulk(double s) const {
  const auto& g = grid_.value;
  const auto& mid = grid_.midpoint;
  const std::size_t m = g.size() - 1;
  const double top = hi_[nb_ - 1];
  double total = 0, u = 0;
  for (std::size_t j = 0; j <= m && u <= top; ++j) {
    // cell j: fp32(x * s) in [mid_{j-1}, mid_j) rounds to g_j; the last cell saturates
    const double v = j < m ? mid[j] / s : std::numeric_limits<double>::infinity();
    if (v > u) total += cell(u, v, g[j] / s);
    u = v;
  }
  return total;
}

double MseModel::tail(float s) const {
  if (tail_.empty()) return 0;
  ConvertOptions o;
  o.scale = s;
  o.nan = NanPolicy::kZero;
  convert(std::span<const float>(tail_), std::span<std::uint8_t>(codes_), *grid_.format, o);
  double e = 0;
  for (std::size_t i = 0; i < tail_.size(); ++i) {
    const double d = static_cast<double>(tail_[i]) - grid_.decode[codes_[i]] / static_cast<double>(s);
    e += d * d;
  }
  return e;
}

}  // namespace fp8q::calib::detail
