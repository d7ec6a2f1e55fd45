// Amax observers (fp8q/calib/amax_observer.hpp). Everything is integers (fp32 patterns and
// counts) except the moving average, which is computed in double under the default FP
// environment so that the caller's rounding mode cannot change it.
#include "fp8q/calib/amax_observer.hpp"

#include <bit>
#include <cmath>
#include <stdexcept>
#include <string>

#include "fp8q/numerics/fp_env.hpp"
#include "fp8q/numerics/max_abs.hpp"

namespace fp8q::calib {
namespace {

constexpr std::uint32_t kInfBits = 0x7F800000u;

// fp32 patterns of fp32 / bf16 inputs (and of their max_abs_bits).
inline std::uint32_t pattern(float x) { return std::bit_cast<std::uint32_t>(x); }
inline std::uint32_t pattern(std::uint32_t bits) { return bits; }
inline std::uint32_t pattern(std::uint16_t b) { return std::uint32_t{b} << 16; }

template <class T>
void observe_into(std::span<const T> x, std::uint32_t& amax_bits, std::uint64_t& count, NonFiniteCounts& nf) {
  // The common case, no Inf or NaN: the largest |x| pattern (numerics/max_abs.hpp) is then
  // the finite amax. Otherwise the loop below, which leaves the non-finite values out.
  if (const std::uint32_t top = pattern(max_abs_bits(x)); top < kInfBits) {
    amax_bits = top > amax_bits ? top : amax_bits;
    count += x.size();
    return;
  }
  std::uint32_t m = amax_bits;
  std::uint64_t non_finite = 0;
  for (T v : x) {  // branch-free: the compiler vectorizes the max
    const std::uint32_t a = pattern(v) & 0x7FFFFFFFu;
    const bool finite = a < kInfBits;
    non_finite += !finite;
    m = finite && a > m ? a : m;
  }
  amax_bits = m;
  count += x.size() - non_finite;
  if (non_finite)  // rare: classify them
    for (T v : x) {
      const std::uint32_t p = pattern(v), a = p & 0x7FFFFFFFu;
      if (a > kInfBits) ++nf.nan;
      else if (a == kInfBits) ++(p >> 31 ? nf.neg_inf : nf.pos_inf);
    }
}

}  // namespace

void AmaxObserver::observe(std::span<const float> x) { observe_into(x, amax_bits_, count_, non_finite_); }
void AmaxObserver::observe_bf16(std::span<const std::uint16_t> x) { observe_into(x, amax_bits_, count_, non_finite_); }

void AmaxObserver::merge(const AmaxObserver& o) {
  amax_bits_ = amax_bits_ > o.amax_bits_ ? amax_bits_ : o.amax_bits_;
  count_ += o.count_;
  non_finite_ += o.non_finite_;
}

float AmaxObserver::amax() const { return std::bit_cast<float>(amax_bits_); }

// ---- moving average ----------------------------------------------------------------------------
MovingAverageAmaxObserver::MovingAverageAmaxObserver(double factor) : factor_(factor) {
  if (!(factor > 0.0 && factor <= 1.0))
    throw std::invalid_argument("MovingAverageAmaxObserver: factor must be in (0, 1], got " + std::to_string(factor));
}

void MovingAverageAmaxObserver::push(const AmaxObserver& batch) {
  history_.push_back(batch.amax());
  non_finite_ += batch.non_finite();
}

void MovingAverageAmaxObserver::observe(std::span<const float> batch) {
  AmaxObserver a;
  a.observe(batch);
  push(a);
}

void MovingAverageAmaxObserver::observe_bf16(std::span<const std::uint16_t> batch) {
  AmaxObserver a;
  a.observe_bf16(batch);
  push(a);
}

void MovingAverageAmaxObserver::merge(const MovingAverageAmaxObserver& o) {
  if (o.factor_ != factor_)
    throw std::invalid_argument("MovingAverageAmaxObserver::merge: factors differ (" + std::to_string(factor_) +
                                " vs " + std::to_string(o.factor_) + ")");
  if (o.history_.size() != history_.size())
    throw std::invalid_argument(
        "MovingAverageAmaxObserver::merge: step counts differ (" + std::to_string(history_.size()) + " vs " +
        std::to_string(o.history_.size()) +
        "); a moving average depends on batch order, so only observers in lockstep (the same steps, "
        "different slices of each step's batch) merge, step by step");
  for (std::size_t t = 0; t < history_.size(); ++t)
    history_[t] = std::bit_cast<std::uint32_t>(o.history_[t]) > std::bit_cast<std::uint32_t>(history_[t])
                      ? o.history_[t] : history_[t];
  non_finite_ += o.non_finite_;
}

float MovingAverageAmaxObserver::amax() const {
  if (history_.empty()) return 0.0f;
  ScopedDefaultFpEnv env;  // the IEEE default: the caller's MXCSR changes no bit
  double m = history_[0];
  for (std::size_t t = 1; t < history_.size(); ++t) m += factor_ * (static_cast<double>(history_[t]) - m);
  return static_cast<float>(m);
}

}  // namespace fp8q::calib
