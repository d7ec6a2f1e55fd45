// The conformance-vector generator (fp8q/kernels/vectors.hpp): one designed case per row of A
// and column of B, each pattern aimed at a parameter that tells models apart.
#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>
#include <string>

#include "fp8q/kernels/vectors.hpp"
#include "fp8q/numerics/convert.hpp"

namespace fp8q {
namespace {

class CaseBuilder {
 public:
  CaseBuilder(const VectorSpec& spec)
      : fa_(format_of(spec.format_a)), fb_(format_of(spec.format_b)), k_(spec.k),
        rng_(spec.seed * 0x9E3779B97F4A7C15ull + 0x5EED) {
    // the largest products 2 to 6 bits below the formats' top, so that K of them stay finite
    // (at most 2^20: bf16's top would overflow fp32 sums)
    e_top_ = std::min((fa_.emax() + fb_.emax()) / 2 - 2, 20);
  }

  std::uint64_t below(std::uint64_t n) { return n == 0 ? 0 : rng_() % n; }
  int between(int lo, int hi) { return lo + static_cast<int>(below(static_cast<std::uint64_t>(hi - lo + 1))); }
  bool coin() { return (rng_() & 1) != 0; }
  double sign() { return coin() ? -1.0 : 1.0; }

  // One case of `pattern`: a and b (K values each) and C.
  void build(int pattern, std::vector<float>& a, std::vector<float>& b, float& c, bool with_c) {
    a.assign(k_, 0.0f), b.assign(k_, 0.0f);
    for (std::size_t k = 0; k < k_; ++k) b[k] = random_finite(fb_);
    const int e0 = e_top_ + between(-2, 2);
    c = with_c ? random_c(e0) : 0.0f;
    const std::size_t j0 = below(k_);
    switch (pattern) {
      case 1: {  // cancel
        const std::size_t j1 = below(k_), j2 = (j1 + 1 + below(k_ - 1)) % k_;
        for (std::size_t k = 0; k < k_; ++k)
          if (coin()) product(a[k], b[k], e0 - between(1, 30), sign());
        product(a[j1], b[j1], e0, sign());
        if (j2 != j1) a[j2] = -a[j1], b[j2] = b[j1];
        break;
      }
      case 2: {  // align
        const int w = between(8, 28);
        for (std::size_t k = 0; k < k_; ++k)
          if (below(4) != 0) product(a[k], b[k], e0 - w + between(-2, 2), sign());
        product(a[j0], b[j0], e0, sign());
        break;
      }
      case 3: {  // tie at width w
        const int w = between(9, 24);
        const double s = sign();
        power_product(a[j0], b[j0], e0, s);
        for (int t = between(1, 3); t > 0; --t) {
          const std::size_t j = below(k_);
          if (j != j0) power_product(a[j], b[j], e0 - w - 1, coin() ? s : -s);
        }
        break;
      }
      case 4:  // subnormal
        for (std::size_t k = 0; k < k_; ++k) {
          a[k] = coin() ? subnormal(fa_) : static_cast<float>(sign() * fa_.min_normal());
          b[k] = coin() ? subnormal(fb_) : random_finite(fb_);
        }
        break;
      case 5: {  // signed zeros
        const bool all_negative = coin();
        for (std::size_t k = 0; k < k_; ++k) {
          a[k] = all_negative ? -0.0f : static_cast<float>(sign() * 0.0);
          if (all_negative) b[k] = std::fabs(b[k]);
        }
        if (with_c) c = coin() ? -0.0f : 0.0f;
        break;
      }
      case 6:  // specials
        for (std::size_t k = 0; k < k_; ++k) a[k] = random_finite(fa_);
        for (int t = between(1, 2); t > 0; --t) special(a, b, below(k_));
        break;
      case 7: {  // boundary of L
        std::size_t L = std::size_t{1} << between(1, 7);
        while (L >= k_ && L > 1) L /= 2;
        for (std::size_t k = 0; k < k_; ++k)
          if (coin()) product(a[k], b[k], e0 - between(5, 25), sign());
        if (k_ < 2) break;
        const std::size_t j = L * (1 + below((k_ - 1) / L));
        const std::size_t j1 = coin() || j + 1 >= k_ ? j - 1 : j + 1;  // across the boundary or inside
        product(a[j], b[j], e0, sign());
        a[j1] = -a[j], b[j1] = b[j];
        break;
      }
      case 8: {  // order
        const double s = sign();
        for (std::size_t k = 0; k < k_; ++k)
          if (below(4) != 0) product(a[k], b[k], e0 - between(23, 26), s);
        const std::size_t j = coin() ? 0 : j0;
        product(a[j], b[j], e0, s);
        break;
      }
      case 9:  // C far from the products
        for (std::size_t k = 0; k < k_; ++k) a[k] = random_finite(fa_);
        if (with_c) c = static_cast<float>(sign() * std::ldexp(1.0 + static_cast<double>(below(1u << 23)) / (1u << 23),
                                                                e0 + between(-30, 30)));
        break;
      default:  // random
        for (std::size_t k = 0; k < k_; ++k) a[k] = below(8) == 0 ? 0.0f : random_finite(fa_);
        break;
    }
  }

  // Any fp32 value near the products, zero a quarter of the time.
  float random_c(int e0) {
    if (below(4) == 0) return coin() ? -0.0f : 0.0f;
    const double m = 1.0 + static_cast<double>(below(1u << 23)) / (1u << 23);
    return static_cast<float>(sign() * std::ldexp(m, e0 + between(-12, 4)));
  }

 private:
  // The nearest value of f to x, saturating.
  static float snap(const Format& f, double x) {
    return decode_f32(encode_f64(x, f, {.rounding = Rounding::kNearestEven, .overflow = Overflow::kSaturate}), f);
  }
  // A random finite value: any code of an element format; a 16-bit format's values within
  // 2^-12 .. 2^8 (random codes of bf16 would mostly overflow or vanish in a sum)
  float random_finite(const Format& f) {
    if (f.bits() > 8) {
      const double m = 1.0 + static_cast<double>(below(std::uint64_t{1} << f.man_bits)) / (1 << f.man_bits);
      return snap(f, sign() * std::ldexp(m, between(-12, 7)));
    }
    for (;;) {
      const float v = decode_f32(below(std::uint64_t{1} << f.bits()), f);
      if (std::isfinite(v)) return v;
    }
  }
  float subnormal(const Format& f) {
    const std::uint64_t man = 1 + below((std::uint64_t{1} << f.man_bits) - 1);
    return static_cast<float>(sign() * f.magnitude_value(f.man_bits > 0 ? man : 0));
  }
  // a and b with a * b near s * m * 2^e (m in [1, 2), random mantissas of the formats).
  void product(float& a, float& b, int e, double s) {
    const auto [ea, eb] = split(e);
    const double ma = 1.0 + static_cast<double>(below(std::uint64_t{1} << fa_.man_bits)) / (1 << fa_.man_bits);
    const double mb = coin() ? 1.0 : 1.0 + static_cast<double>(below(std::uint64_t{1} << fb_.man_bits)) / (1 << fb_.man_bits);
    a = snap(fa_, s * std::ldexp(ma, ea)), b = snap(fb_, std::ldexp(mb, eb));
  }
  // a * b = s * 2^e exactly where the formats reach it.
  void power_product(float& a, float& b, int e, double s) {
    const auto [ea, eb] = split(e);
    a = snap(fa_, s * std::ldexp(1.0, ea)), b = snap(fb_, std::ldexp(1.0, eb));
  }
  // e = ea + eb with each in its format's normal range where possible, chosen at random.
  std::pair<int, int> split(int e) {
    const int lo = std::max(fa_.emin(), e - fb_.emax()), hi = std::min(fa_.emax(), e - fb_.emin());
    const int ea = lo <= hi ? between(lo, hi) : std::clamp(e - (fb_.emin() + fb_.emax()) / 2, fa_.emin(), fa_.emax());
    return {ea, e - ea};
  }
  // A NaN, an infinity, or Inf * 0 at position j, as the formats allow.
  void special(std::vector<float>& a, std::vector<float>& b, std::size_t j) {
    const float inf = fa_.has_inf() ? decode_f32(fa_.inf_code() | (coin() ? fa_.sign_bit() : 0), fa_) : 0.0f;
    switch (below(3)) {
      case 0:
        if (fa_.has_nan()) a[j] = decode_f32(fa_.canonical_nan(), fa_);
        break;
      case 1:
        if (fa_.has_inf()) a[j] = inf;
        break;
      default:
        if (fa_.has_inf()) a[j] = inf, b[j] = 0.0f;
        break;
    }
  }

  const Format &fa_, &fb_;
  std::size_t k_;
  std::mt19937_64 rng_;
  int e_top_ = 0;
};

}  // namespace

DotSamples generate_inputs(const VectorSpec& spec) {
  if (!is_operand_format(spec.format_a)) throw std::invalid_argument("vectors: format_a is not an operand format");
  if (!is_operand_format(spec.format_b)) throw std::invalid_argument("vectors: format_b is not an operand format");
  if (spec.cases == 0) throw std::invalid_argument("vectors: cases must be at least 1");
  if (spec.k == 0) throw std::invalid_argument("vectors: k must be at least 1");
  if (spec.cases * spec.k > (std::size_t{1} << 26) || spec.cases > (std::size_t{1} << 13))
    throw std::invalid_argument("vectors: cases x k is over 2^26 values (or cases over 8192)");
  DotSamples s{.format_a = spec.format_a, .format_b = spec.format_b, .m = spec.cases, .n = spec.cases, .k = spec.k};
  CaseBuilder builder(spec);
  s.a.resize(s.m * s.k), s.bt.resize(s.n * s.k);
  if (spec.with_c) s.c.resize(s.m * s.n);
  std::vector<float> a, b;
  for (std::size_t i = 0; i < spec.cases; ++i) {
    float c = 0.0f;
    const int pattern = static_cast<int>((i + spec.seed) % kVectorPatterns);
    builder.build(pattern, a, b, c, spec.with_c);
    std::copy(a.begin(), a.end(), s.a.begin() + static_cast<std::ptrdiff_t>(i * s.k));
    std::copy(b.begin(), b.end(), s.bt.begin() + static_cast<std::ptrdiff_t>(i * s.k));
    if (spec.with_c) s.c[i * s.n + i] = c;
  }
  if (spec.with_c)  // the mixed (row, column) pairs: C near the products
    for (std::size_t r = 0; r < s.m; ++r)
      for (std::size_t col = 0; col < s.n; ++col)
        if (r != col) s.c[r * s.n + col] = builder.random_c(builder.between(-4, 8));
  return s;
}

void compute_expected(DotSamples& s, const Candidate& c) {
  s.d.assign(s.count(), 0);
  for (std::size_t i = 0; i < s.count(); ++i) s.d[i] = predict(c, s, i);
}

}  // namespace fp8q
