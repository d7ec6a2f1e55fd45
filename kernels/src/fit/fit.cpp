// fit(): every candidate of the model space against every sample, with an early exit on the
// first miss (fp8q/kernels/fit.hpp). Samples are visited diagonal first: the designed cases of
// `fp8q vectors` sit on the diagonal, and a candidate usually misses one of them first.
#include <algorithm>

#include "fp8q/kernels/fit.hpp"
#include "fp8q/kernels/vectors.hpp"

namespace fp8q {
namespace {

std::vector<std::size_t> visit_order(const DotSamples& s) {
  std::vector<std::size_t> order;
  order.reserve(s.count());
  if (s.diagonal) {
    for (std::size_t i = 0; i < s.count(); ++i) order.push_back(i);
    return order;
  }
  const std::size_t diag = std::min(s.m, s.n);
  for (std::size_t i = 0; i < diag; ++i) order.push_back(i * s.n + i);
  for (std::size_t i = 0; i < s.count(); ++i)
    if (s.row(i) != s.col(i)) order.push_back(i);
  return order;
}

}  // namespace

Separation separate(const Candidate& x, const Candidate& y, const DotSamples& like, std::size_t tries,
                    std::uint64_t seed) {
  Separation sep{.other = y};
  const std::size_t ks[] = {like.k, 2 * like.k, 4 * like.k, std::max<std::size_t>(8 * like.k, 256)};
  for (std::size_t t = 0; t < tries; ++t) {
    const VectorSpec spec{.format_a = like.format_a, .format_b = like.format_b, .cases = 1, .k = ks[t % 4],
                          .with_c = !like.c.empty(), .seed = seed + t};
    const DotSamples in = generate_inputs(spec);
    const std::uint32_t gx = predict(x, in, 0), gy = predict(y, in, 0);
    sep.tries = t + 1;
    if (!same_result(gx, gy)) {
      sep.k = spec.k, sep.seed = spec.seed, sep.first_gives = gx, sep.other_gives = gy;
      return sep;
    }
  }
  return sep;
}

FitReport fit(const DotSamples& s, const FitOptions& o) {
  s.check();
  const std::vector<std::size_t> order = visit_order(s);
  const std::vector<Candidate> space = model_space(!s.c.empty());
  FitReport report{.samples = s.count(), .candidates = space.size()};
  std::vector<Miss> misses;
  for (const Candidate& c : space) {
    std::size_t held = 0;
    for (; held < order.size(); ++held) {
      const std::size_t i = order[held];
      const std::uint32_t got = predict(c, s, i);
      if (!same_result(s.d[i], got)) {
        misses.push_back({.candidate = c, .misses = 1, .held = held, .first = {i, s.d[i], got}});
        break;
      }
    }
    if (held == order.size()) report.consistent.push_back(c);
  }
  // the nearest misses: the candidates ranked by their misses on the first o.screen samples (in
  // fit's order; ties: model_space order), the best max(10 nearest, 50) counted in full; a count
  // stops once it passes the o.nearest-th smallest so far (that candidate cannot be reported)
  const std::size_t screen = std::min(order.size(), o.screen);
  for (Miss& m : misses)
    for (std::size_t j = m.held + 1; j < screen; ++j)
      m.misses += same_result(s.d[order[j]], predict(m.candidate, s, order[j])) ? 0 : 1;
  std::stable_sort(misses.begin(), misses.end(), [](const Miss& x, const Miss& y) { return x.misses < y.misses; });
  misses.resize(o.nearest == 0 ? 0 : std::min(misses.size(), std::max<std::size_t>(10 * o.nearest, 50)));
  std::vector<std::size_t> best;  // the o.nearest smallest counts so far, ascending
  for (Miss& m : misses) {
    const std::size_t bound = best.size() < o.nearest ? order.size() : best.back();
    m.misses = 0;
    for (std::size_t j = 0; j < order.size() && m.misses <= bound; ++j)
      m.misses += same_result(s.d[order[j]], predict(m.candidate, s, order[j])) ? 0 : 1;
    if (m.misses > bound) continue;
    best.insert(std::upper_bound(best.begin(), best.end(), m.misses), m.misses);
    if (best.size() > o.nearest) best.pop_back();
  }
  std::erase_if(misses, [&](const Miss& m) { return best.empty() || m.misses > best.back(); });
  std::stable_sort(misses.begin(), misses.end(), [](const Miss& x, const Miss& y) { return x.misses < y.misses; });
  misses.resize(std::min(misses.size(), o.nearest));
  report.nearest = std::move(misses);
  for (std::size_t j = 1; j < report.consistent.size(); ++j)
    report.separations.push_back(separate(report.consistent[0], report.consistent[j], s, o.separation_tries, o.seed));
  return report;
}

}  // namespace fp8q
