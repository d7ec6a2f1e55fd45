// max and percentile, the method names, and the one switch over methods.
#include "fp8q/calib/calibrators.hpp"

#include <array>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

#include "fp8q/numerics/fp_env.hpp"

namespace fp8q::calib {
namespace {
constexpr std::array<std::pair<std::string_view, Method>, 4> kMethods = {{
    {"max", Method::kMax}, {"percentile", Method::kPercentile}, {"mse", Method::kMse}, {"entropy", Method::kEntropy},
}};

// r = p / 100 * N. p is written in decimal and is rarely exact in binary (99.9 is
// 99.900000000000005684...), so the product lands a few ulps off the integer rank the user
// means (999.0000000000001 for N = 1000), and ceil(r) would take the next sample. A rank
// within 2^-40 (relative) of an integer is taken as that integer: far below any rank
// difference a real p can make, far above the rounding error of the two operations.
double percentile_rank(double p, std::uint64_t n) {
  const double r = p / 100.0 * static_cast<double>(n);
  const double nearest = std::nearbyint(r);
  return std::fabs(r - nearest) <= std::ldexp(std::max(1.0, r), -40) ? nearest : r;
}

}  // namespace

std::optional<Method> parse_method(std::string_view name) {
  for (const auto& [n, m] : kMethods)
    if (n == name) return m;
  return std::nullopt;
}

std::string_view method_name(Method m) {
  for (const auto& [n, mm] : kMethods)
    if (mm == m) return n;
  return "?";
}

float max_amax(const HistogramObserver& h) { return h.amax(); }

float percentile_amax(const HistogramObserver& h, double p) {
  if (!(p > 0.0 && p <= 100.0))
    throw std::invalid_argument("percentile must be in (0, 100], got " + std::to_string(p));
  const std::uint64_t n = h.count();
  if (n == 0) return 0.0f;
  if (p == 100.0) return h.amax();
  ScopedDefaultFpEnv env;  // the IEEE default: the caller's MXCSR changes no bit
  const double r = percentile_rank(p, n);
  const std::vector<float> tail = h.tail();
  const auto t = static_cast<double>(tail.size());
  if (r > static_cast<double>(n) - t) {
    // among the exact tail: the sample of rank ceil(r) (1-based, ascending) is tail[N - ceil(r)]
    const auto rank = static_cast<std::uint64_t>(std::ceil(r));
    return tail[n - rank];
  }
  if (r <= static_cast<double>(h.zeros())) return 0.0f;
  // cumulative counts with the exact zeros first (at 0), then the rest of bin 0, bin 1, ...
  const auto& c = h.counts();
  double before = static_cast<double>(h.zeros());
  for (std::size_t j = 0; j < c.size(); ++j) {
    const double nj = static_cast<double>(c[j] - (j == 0 ? h.zeros() : 0));
    if (nj > 0 && before + nj >= r) {
      const double lo = std::max(h.bin_edge(static_cast<int>(j)), static_cast<double>(h.min_nonzero()));
      const double hi = std::min(h.bin_edge(static_cast<int>(j) + 1), static_cast<double>(h.amax()));
      const double v = lo + (hi - lo) * ((r - before) / nj);
      // never above a sample known to be ranked higher (the tail's smallest) or the amax
      const float cap = tail.empty() ? h.amax() : tail.back();
      const auto a = static_cast<float>(v);
      return a < cap ? a : cap;
    }
    before += nj;
  }
  return h.amax();
}

float calibrate_amax(const HistogramObserver& h, Method m, const Format& target, const CalibratorOptions& o) {
  switch (m) {
    case Method::kMax: return max_amax(h);
    case Method::kPercentile: return percentile_amax(h, o.percentile);
    case Method::kMse: return mse_amax(h, target, o.scale);
    case Method::kEntropy: return entropy_amax(h, target, o.scale);
  }
  throw std::invalid_argument("calibrate_amax: unknown method");
}

}  // namespace fp8q::calib
