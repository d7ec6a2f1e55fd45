// fp8q/calib/calibrators.hpp: from an observed |x| histogram to an amax for a target format.
//
// Every calibrator returns an amax A; the scale is then quant's rule,
// scale = fp8q::scale_from_amax(A, target, scale_options), and quantization of x is
//   q = convert(fp32(x * scale)) (nearest-even, saturating),  x_hat = decode(q) / scale.
// The MSE and entropy calibrators score candidates on the target's real grid (its every
// finite value, subnormals included, and saturation at max_finite), not on uniform levels.
// Targets: the signed narrow formats with a zero (e4m3fn, e4m3, e5m2, fnuz, e3m4, fp6, fp4);
// std::invalid_argument for e8m0 and the wide formats. The formulas are in docs/numerics.md
// (calibration); briefly:
//
//  max         A = the largest finite |x| observed (exact).
//  percentile  A = the p-th percentile of |x|: rank r = p/100 * N (an r within 2^-40 of an
//              integer taken as that integer: a decimal p is rarely exact). If r falls among the exact
//              tail values (r > N - tail size), A = the sample of rank ceil(r) (exact);
//              otherwise the bin j holding rank r is found from the cumulative counts C_j (exact
//              zeros first, at 0) and A = lo_j + (hi_j - lo_j) (r - C_j) / n_j: linear
//              interpolation inside the bin, whose samples are taken as spread uniformly over
//              [lo_j, hi_j] (its edges, narrowed to the smallest nonzero |x| and the amax).
//              So A and the true sample of rank ceil(r) share a bin. p = 100 gives the max.
//  mse         A minimising the model MSE(s) = (1/N) [ sum over exact tail values t of
//              (t - x_hat(t))^2 (fp8q's conversions) + sum over grid cells j of
//              integral over the cell of (x - g_j / s)^2 f(x) dx ], where f is the remaining
//              histogram with each bin's count spread uniformly over [lo_i, hi_i] as above
//              but capped at the smallest tail value (the samples left are no larger),
//              exact zeros contributing 0, and cell j = the x whose fp32(x * s) rounds to grid
//              value g_j (the top cell extends to infinity: saturation). Candidates: the bin
//              edges (64 per binade) in [amax / 2^12, 2 amax] (above the amax a coarser
//              grid can place the largest samples better), the amax; then, around the best
//              four, a finer sweep and the amax values that put one of the 16 largest samples
//              exactly on a grid point; and those for the largest sample and every grid point of
//              the top two binades. Ties go to the larger amax.
//  entropy     A minimising KL(P || Q) over thresholds T = the bin edges in [amax / 2^20, amax)
//              that keep at least half of the samples below them (clipping nearly everything
//              collapses P and Q onto one bin, KL -> 0), and the amax: P = the histogram's bins below T with the count at or above T
//              added to the last of them; Q = for each grid cell of scale(T), the cell's counts
//              below T spread as a uniform density over its bins where P > 0 (a bin belongs to
//              the cell holding its centre); KL = sum_k P_k ln(P_k / Q_k), P and Q each
//              normalised to 1. Ties go to the larger threshold.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "fp8q/calib/histogram.hpp"
#include "fp8q/numerics/format.hpp"
#include "fp8q/quant/scale_rules.hpp"

namespace fp8q::calib {

enum class Method : std::uint8_t { kMax, kPercentile, kMse, kEntropy };

std::optional<Method> parse_method(std::string_view name);  // max percentile mse entropy
std::string_view method_name(Method m);

struct CalibratorOptions {
  double percentile = 99.99;   // kPercentile: in (0, 100]
  AmaxScaleOptions scale;      // how an amax becomes a scale (margin, epsilon, power of two);
                               // kMse and kEntropy search with exactly this rule
};

// The amax by `method` (0 when no finite nonzero sample was observed: scale 1).
float calibrate_amax(const HistogramObserver& h, Method method, const Format& target,
                     const CalibratorOptions& options = {});

float max_amax(const HistogramObserver& h);
float percentile_amax(const HistogramObserver& h, double percentile);
float mse_amax(const HistogramObserver& h, const Format& target, const AmaxScaleOptions& scale = {});
float entropy_amax(const HistogramObserver& h, const Format& target, const AmaxScaleOptions& scale = {});

// ---- the objectives the searches minimise (for tests and diagnostics) --------------------------
// The model MSE of quantizing the observed data with this scale (see mse above).
double histogram_mse(const HistogramObserver& h, float scale, const Format& target);
// KL(P || Q) for threshold T (the bins whose lower edge is below T are kept;
// scale = scale_from_amax(T)); +Inf when Q is 0 where P is not.
double entropy_divergence(const HistogramObserver& h, float threshold, const Format& target,
                          const AmaxScaleOptions& scale = {});

}  // namespace fp8q::calib
