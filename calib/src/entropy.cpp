// The `entropy` calibrator: KL(P || Q) on the target's grid (fp8q/calib/calibrators.hpp).
//
// With counts n_k, bin widths w_k, N = sum n_k, a threshold keeping bins [0, i) and O = the
// count at or above bin i: P has n'_k = n_k for k < i - 1 and n'_{i-1} = n_{i-1} + O. Q gives
// each grid cell its original mass M_c = sum of n_k (k < i) spread as a uniform density over
// the cell's bins with n'_k > 0: Q_k proportional to M_c w_k / W_c, W_c = sum of those w_k.
// With P normalised by N and Q by N - O:
//   KL = (1/N) [ sum_k n'_k ln n'_k - sum_k n'_k ln w_k - sum_c M'_c ln(M_c / W_c) ]
//        + ln((N - O) / N),
// where M'_c = sum of n'_k over the cell. Prefix sums of n_k, n_k ln n_k, n_k ln w_k and of w_k
// over nonzero bins make each cell O(1), so a threshold costs O(grid size), not O(bins).
#include <algorithm>
#include <cmath>
#include <limits>

#include "fp8q/calib/calibrators.hpp"
#include "fp8q/numerics/fp_env.hpp"
#include "grid.hpp"

namespace fp8q::calib {
namespace {

inline double xlogx(double x) { return x > 0 ? x * std::log(x) : 0.0; }

class KlModel {
 public:
  KlModel(const HistogramObserver& h, const Format& f) : grid_(detail::grid_of(f)), h_(h) {
    const auto& c = h.counts();
    const std::size_t n = c.size();
    p0_.assign(n + 1, 0), l_.assign(n + 1, 0.0), lw_.assign(n + 1, 0.0), wz_.assign(n + 1, 0.0);
    width_.resize(n), centre_.resize(n);
    for (std::size_t k = 0; k < n; ++k) {
      const double lo = h.bin_edge(static_cast<int>(k)), hi = h.bin_edge(static_cast<int>(k) + 1);
      width_[k] = hi - lo, centre_[k] = (lo + hi) / 2;
      const auto ck = static_cast<double>(c[k]);
      p0_[k + 1] = p0_[k] + c[k];
      l_[k + 1] = l_[k] + xlogx(ck);
      lw_[k + 1] = lw_[k] + ck * std::log(width_[k]);
      wz_[k + 1] = wz_[k] + (c[k] > 0 ? width_[k] : 0.0);
    }
  }

  // The first bin whose centre is >= t (bins() if none).
  std::size_t first_centre_at_or_above(double t) const {
    auto j = static_cast<std::size_t>(h_.bin_of_value(t));
    if (j < centre_.size() && centre_[j] < t) ++j;
    return j;
  }

  double kl(float threshold, const AmaxScaleOptions& so) const {
    const auto& c = h_.counts();
    const std::uint64_t n = p0_.back();
    if (n == 0 || !(threshold > 0.0f)) return std::numeric_limits<double>::infinity();
    const double s = scale_from_amax(threshold, *grid_.format, so);
    // bins whose lower edge is below the threshold are kept
    std::size_t i = static_cast<std::size_t>(h_.bin_of_value(threshold));
    if (i < c.size() && h_.bin_edge(static_cast<int>(i)) < threshold) ++i;
    i = std::clamp<std::size_t>(i, 1, c.size());
    const std::uint64_t o = n - p0_[i];
    const std::uint64_t last = c[i - 1] + o;
    const auto& mid = grid_.midpoint;
    const std::size_t m = grid_.value.size() - 1;
    double sum = 0;
    std::size_t a = 0;
    for (std::size_t j = 0; j <= m && a < i; ++j) {
      // bins whose centre k + 1/2 lies below the boundary mid_j / (s w) belong to cells <= j
      const std::size_t b = j < m ? std::clamp(first_centre_at_or_above(mid[j] / s), a, i) : i;
      if (b == a) continue;
      const std::uint64_t mc = p0_[b] - p0_[a];
      std::uint64_t mc_p = mc;
      double wz = wz_[b] - wz_[a], sl = (l_[b] - l_[a]) - (lw_[b] - lw_[a]);
      if (b == i && o > 0) {  // this cell holds bin i - 1, which P gave the clipped count
        mc_p += o;
        if (c[i - 1] == 0) wz += width_[i - 1];
        sl += xlogx(static_cast<double>(last)) - xlogx(static_cast<double>(c[i - 1])) -
              static_cast<double>(o) * std::log(width_[i - 1]);
      }
      if (mc_p == 0) {
        a = b;
        continue;
      }
      if (mc == 0) return std::numeric_limits<double>::infinity();  // P > 0 where Q = 0
      sum += sl - static_cast<double>(mc_p) * std::log(static_cast<double>(mc) / wz);
      a = b;
    }
    const double nd = static_cast<double>(n);
    return sum / nd + std::log(static_cast<double>(n - o) / nd);
  }

 private:
  const detail::Grid& grid_;
  const HistogramObserver& h_;
  std::vector<std::uint64_t> p0_;
  std::vector<double> l_, lw_, wz_, width_, centre_;
};

}  // namespace

double entropy_divergence(const HistogramObserver& h, float threshold, const Format& target,
                          const AmaxScaleOptions& so) {
  ScopedDefaultFpEnv env;  // the IEEE default: the caller's MXCSR changes no bit
  return KlModel(h, target).kl(threshold, so);
}

float entropy_amax(const HistogramObserver& h, const Format& target, const AmaxScaleOptions& so) {
  (void)detail::grid_of(target);
  const float amax = h.amax();
  ScopedDefaultFpEnv env;  // the IEEE default: the caller's MXCSR changes no bit (nor does its
                           // DAZ turn a subnormal amax into 0 in the test below)
  if (amax == 0.0f) return 0.0f;
  const KlModel model(h, target);
  // the amax first: no clipping; then every bin edge below it down to amax / 2^20 (at most
  // 2048 of them); ties keep the larger threshold
  const int top = h.bin_of(amax) + 1;
  // A threshold that clips most samples is degenerate: P and Q both collapse onto the last bin
  // and KL -> 0. Thresholds must keep at least half of the samples below them (edge i keeps the
  // bins below i), as TensorRT's search starts at 128 of its 2048 bins for the same reason.
  // half = the smallest edge index whose bins [0, half) hold at least half of the samples
  const auto& counts = h.counts();
  int half = 1;
  for (std::uint64_t kept = counts[0]; 2 * kept < h.count() && static_cast<std::size_t>(half) < counts.size(); ++half)
    kept += counts[static_cast<std::size_t>(half)];
  const int first = std::max({1, half, h.bin_of_value(std::ldexp(static_cast<double>(amax), -20))});
  const int stride = (top - first + 2047) / 2048;
  float best = amax;
  double best_kl = model.kl(amax, so);
  for (int i = top - 1; i >= first; i -= stride) {
    const auto t = static_cast<float>(h.bin_edge(i));  // exact: every edge is an fp32 value
    if (!(t < amax)) continue;
    const double kl = model.kl(t, so);
    if (kl < best_kl) best = t, best_kl = kl;
  }
  return best;
}

}  // namespace fp8q::calib
