// fp8q/calib/amax_observer.hpp: observers of the largest |x| (docs/numerics.md section 7).
//
// Both observers look only at finite values: NaN and +/-Inf are counted (and reported by
// NonFiniteCounts) and never enter the statistics, so one bad element cannot turn a scale
// into 1 or 0 without anyone noticing.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace fp8q::calib {

// What an observer saw that is not a finite number.
struct NonFiniteCounts {
  std::uint64_t nan = 0;
  std::uint64_t pos_inf = 0;
  std::uint64_t neg_inf = 0;

  std::uint64_t total() const { return nan + pos_inf + neg_inf; }
  NonFiniteCounts& operator+=(const NonFiniteCounts& o) {
    nan += o.nan, pos_inf += o.pos_inf, neg_inf += o.neg_inf;
    return *this;
  }
  bool operator==(const NonFiniteCounts&) const = default;
};

// Running max of |x| over every finite sample. Max is associative and commutative and the
// state is integers (fp32 bit patterns, counts), so merge(observe(A), observe(B)) equals
// observe(A then B) bit for bit, whatever the split or the order.
class AmaxObserver {
 public:
  void observe(std::span<const float> x);
  void observe_bf16(std::span<const std::uint16_t> x);  // bf16 bit patterns
  void merge(const AmaxObserver& other);

  float amax() const;                  // 0 when no finite sample was seen
  std::uint64_t count() const { return count_; }  // finite samples
  const NonFiniteCounts& non_finite() const { return non_finite_; }
  bool operator==(const AmaxObserver&) const = default;

 private:
  std::uint32_t amax_bits_ = 0;  // |x| as an fp32 pattern: integer order is value order
  std::uint64_t count_ = 0;
  NonFiniteCounts non_finite_;
};

// Moving average of per-batch amax: m_1 = a_1, m_t = m_{t-1} + factor * (a_t - m_{t-1})
// (computed in double, rounded once to fp32 when read), where a_t is the finite amax of the
// t-th observe() call (one call = one batch = one step).
//
// A moving average depends on the order of the batches, so two observers that saw
// different batches in sequence cannot be merged into "the observer of the whole" (there is
// no whole order). What is exact is the data-parallel merge: observers that saw the same
// number of steps, where step t of each saw a different slice of the same global batch,
// merge by taking the max of a_t step by step. The result equals one observer that saw, at
// each step, the union of the slices (max over the union = max of the maxes), which is how
// distributed training reduces amax across ranks before updating its history. merge()
// therefore requires equal step counts and throws std::invalid_argument otherwise.
class MovingAverageAmaxObserver {
 public:
  // 0 < factor <= 1 (factor 1 keeps only the latest batch); std::invalid_argument otherwise.
  explicit MovingAverageAmaxObserver(double factor);

  void observe(std::span<const float> batch);
  void observe_bf16(std::span<const std::uint16_t> batch);
  void merge(const MovingAverageAmaxObserver& other);

  float amax() const;  // the moving average; 0 before the first step
  std::size_t steps() const { return history_.size(); }
  const std::vector<float>& step_amax() const { return history_; }  // a_1, a_2, ...
  double factor() const { return factor_; }
  const NonFiniteCounts& non_finite() const { return non_finite_; }
  bool operator==(const MovingAverageAmaxObserver&) const = default;

 private:
  void push(const AmaxObserver& batch);

  double factor_;
  std::vector<float> history_;
  NonFiniteCounts non_finite_;
};

}  // namespace fp8q::calib
