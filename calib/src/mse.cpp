// The `mse` calibrator: a search over amax candidates scored by the MSE model (mse_model.hpp).
//
// Why these candidates. On a floating-point grid the model MSE is nearly flat in the amax away
// from clipping, and its fine structure comes from where the largest samples fall between grid
// points. So: (1) log-spaced bin edges (64 per binade) in [amax / 2^12, 2 amax], and the amax
// (the coarse shape, clipping included); (2) around the four best, a finer sweep and the amax values that put one of the 16
// largest samples exactly on a grid point (and the fp32 neighbours of each, since the scale is
// rounded); (3) the same for the largest sample and every grid point (all samples equal is the
// extreme case: only an exact landing gives zero error).
#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>

#include "fp8q/calib/calibrators.hpp"
#include "fp8q/numerics/convert.hpp"
#include "fp8q/numerics/fp_env.hpp"
#include "mse_model.hpp"

namespace fp8q::calib {
namespace {

struct Scored {
  float amax;
  double error;
};

class Search {
 public:
  Search(const detail::MseModel& m, const Format& f, const AmaxScaleOptions& so) : model_(m), format_(f), so_(so) {}

  double eval(float a) {
    if (!(a > 0.0f) || !std::isfinite(a)) return std::numeric_limits<double>::infinity();
    const float s = scale_from_amax(a, format_, so_);
    double e;
    if (auto it = cache_.find(bits_of(s)); it != cache_.end()) {
      e = it->second;
    } else {
      e = s > 0.0f ? model_.sum_sq_error(s) : std::numeric_limits<double>::infinity();
      cache_.emplace(bits_of(s), e);
    }
    if (e < best_.error || (e == best_.error && a > best_.amax)) best_ = {a, e};
    return e;
  }
  // a and its fp32 neighbours
  void eval3(float a) {
    eval(a);
    eval(std::nextafter(a, 0.0f));
    eval(std::nextafter(a, std::numeric_limits<float>::infinity()));
  }
  // The amax that puts value t exactly on grid value g: scale g / t, amax = t max / (g 2^margin).
  void land(float t, double g) {
    const double a = static_cast<double>(t) * format_.max_finite() / std::ldexp(g, so_.margin);
    if (a > 0 && a < 3.0e38) eval3(static_cast<float>(a));
  }
  const Scored& best() const { return best_; }

 private:
  const detail::MseModel& model_;
  const Format& format_;
  const AmaxScaleOptions& so_;
  std::unordered_map<std::uint32_t, double> cache_;
  Scored best_{0.0f, std::numeric_limits<double>::infinity()};
};

}  // namespace

double histogram_mse(const HistogramObserver& h, float scale, const Format& target) {
  ScopedDefaultFpEnv env;  // the IEEE default: the caller's MXCSR changes no bit
  const detail::MseModel m(h, target);
  return h.count() ? m.sum_sq_error(scale) / static_cast<double>(h.count()) : 0.0;
}

float mse_amax(const HistogramObserver& h, const Format& target, const AmaxScaleOptions& so) {
  (void)detail::grid_of(target);  // reject a target without a grid even on empty data
  const float amax = h.amax();
  ScopedDefaultFpEnv env;  // the IEEE default: the caller's MXCSR changes no bit (nor does its
                           // DAZ turn a subnormal amax into 0 in the test below)
  if (amax == 0.0f) return 0.0f;
  const detail::MseModel model(h, target);
  Search search(model, target, so);
  const auto& grid = model.grid().value;

  // (1) coarse: the edges of the bins' log-linear lattice (at most 64 per binade) in
  // [amax / 2^12, 2 amax], and the amax. Above the amax a coarser grid can put the largest
  // samples nearer to grid points (brute force over the samples does find such optima); below
  // amax / 2^12 clipping costs more than any grid can give back.
  const int first = std::max(1, h.bin_of_value(std::ldexp(static_cast<double>(amax), -12)));
  const int stride = std::max(1, h.bins() / 2048);
  std::vector<Scored> coarse;
  bool amax_done = false;
  for (int i = first;; i += stride) {
    const double e = h.bin_edge(i);  // exact in fp32 below 2^128
    if (e > 2.0 * amax || e > 3.0e38) break;
    if (!amax_done && e >= amax) coarse.push_back({amax, search.eval(amax)}), amax_done = true;
    const auto a = static_cast<float>(e);
    if (a != amax) coarse.push_back({a, search.eval(a)});
  }
  if (!amax_done) coarse.push_back({amax, search.eval(amax)});
  
  // (2) refine around the four best coarse candidates
  std::vector<std::size_t> order(coarse.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  const std::size_t keep = std::min<std::size_t>(4, order.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(keep), order.end(),
                    [&](std::size_t a, std::size_t b) {
                      return coarse[a].error < coarse[b].error || (coarse[a].error == coarse[b].error && a > b);
                    });
  const auto& tail = model.tail_values();
  const std::size_t landers = std::min<std::size_t>(16, tail.size());
  for (std::size_t r = 0; r < keep; ++r) {
    const std::size_t i = order[r];
    const double lo = i > 0 ? coarse[i - 1].amax : coarse[i].amax / 2;
    const double hi = i + 1 < coarse.size() ? coarse[i + 1].amax : coarse[i].amax * 1.02;
    for (int k = 1; k < 16; ++k) search.eval(static_cast<float>(lo + (hi - lo) * k / 16));
    for (std::size_t t = 0; t < landers; ++t) {
      // grid values g with amax(t, g) in [lo, hi]: g in [t max / (hi 2^m), t max / (lo 2^m)]
      const double k = static_cast<double>(tail[t]) * target.max_finite() / std::ldexp(1.0, so.margin);
      auto g = std::lower_bound(grid.begin() + 1, grid.end(), k / hi);
      for (; g != grid.end() && *g <= k / lo; ++g) search.land(tail[t], *g);
    }
  }
  // (3) the largest sample on every grid point of the top two binades (every significand the
  // grid has: lower binades repeat them at a smaller amax)
  const float largest = tail.empty() ? amax : tail.front();
  for (std::size_t j = 1; j < grid.size(); ++j)
    if (grid[j] >= target.max_finite() / 4) search.land(largest, grid[j]);
  return search.best().amax;
}

}  // namespace fp8q::calib
