// fp8q/calib/histogram.hpp: a histogram of |x| that merges exactly (docs/numerics.md section 7).
//
// Bins are log-linear, like the floating-point grids they calibrate for: B = 2^b bins span the
// 32 binades below R = 2^k, each binade cut into S = B / 32 equal sub-bins (2048 bins: 64 per
// binade, widths 1/64 to 1/128 of the value). In fp32 terms a finite |x| with pattern a has
// position p = a >> (23 - log2 S) (its exponent field and top mantissa bits), and
//   bin = max(p - base, 0),  base = (E - 31) * S,  E = k + 126 (the exponent field just below R),
// so bin 0 holds [0, 2^(k-32) (1 + 1/S)): zeros, subnormals and everything 2^32 times below
// the top, and bin i >= 1 is [edge(base + i), edge(base + i + 1)) with edge(P) the fp32 value of
// the pattern P << (23 - log2 S). The index is a shift, a subtraction and a max on the bits: no
// division, no rounding, nothing the FP environment can change.
//
// Range. k is always the smallest integer with 2^k > amax, and k >= -95 (E >= 31, base >= 0).
// When a larger value arrives, k grows by d: bin j >= 1 takes old bin j + d S, and bin 0 takes
// old bins 0 .. d S. A grown histogram is therefore exactly the histogram the data would have
// given with the larger range from the start, the state is a function of the multiset of
// samples only, and merge (grow both to the larger k, add counts) gives, bit for bit, the
// histogram of the union, for any split and any order.
//
// Cost: one table increment per sample, whatever the range does (histogram_observe.cpp); ranges
// grow once per call, which the paragraph above makes exact.
//
// Why not equal-width bins: one outlier 10^4 times the bulk would put the whole bulk in the
// first of 2048 equal bins, where no calibrator can see it; an FP8 grid resolves that bulk.
//
// Alongside the bins the observer keeps, all exact and mergeable: the number of finite
// samples, the number of exact zeros, the amax and the smallest nonzero |x| (fp32 patterns),
// NaN / +Inf / -Inf counts (non-finite values never enter the bins), and the `tail`: the T
// largest finite |x| (default 256) as exact values. The T largest of a union are the T largest
// of the two tails, so the tail merges exactly too. Calibrators use it to evaluate the largest
// samples (which dominate a heavy-tailed MSE) exactly instead of as a bin.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "fp8q/calib/amax_observer.hpp"
#include "fp8q/numerics/isa.hpp"

namespace fp8q::calib {

struct HistogramOptions {
  int bins = 2048;          // a power of two in [64, 65536]: 32 binades of bins / 32 sub-bins
  int tail = 256;           // how many of the largest |x| to keep exactly, [0, 65536]
  std::optional<Isa> isa;   // force a kernel (must be supported); default fp8q::active_isa()
};

class HistogramObserver {
 public:
  explicit HistogramObserver(const HistogramOptions& options = {});

  // threads >= 1: contiguous chunks are observed into separate histograms and merged, which
  // gives the same bits as one thread (merge is exact).
  void observe(std::span<const float> x, int threads = 1);
  void observe_bf16(std::span<const std::uint16_t> x, int threads = 1);  // bf16 bit patterns
  // Both must have the same number of bins and tail size (std::invalid_argument otherwise).
  void merge(const HistogramObserver& other);

  // ---- the state -----------------------------------------------------------------------------
  int bins() const { return static_cast<int>(counts_.size()); }
  int tail_capacity() const { return tail_capacity_; }
  int range_exponent() const { return top_ - 126; }  // R = 2^k
  double range() const;                              // 2^k (may be 2^128: a double)
  // Lower edge of bin i (0 for bin 0); bin_edge(bins()) = range().
  double bin_edge(int i) const;
  const std::vector<std::uint64_t>& counts() const { return counts_; }
  std::uint64_t count() const { return count_; }    // finite samples (zeros included)
  std::uint64_t zeros() const { return zeros_; }     // exact zeros (+0 and -0), also in bin 0
  float amax() const;                                // largest finite |x|; 0 if none
  float min_nonzero() const;                         // smallest nonzero finite |x|; 0 if none
  const NonFiniteCounts& non_finite() const { return non_finite_; }
  // The largest min(tail_capacity, nonzero count) nonzero finite |x|, exact, in descending order
  // (zeros never enter the tail).
  std::vector<float> tail() const;
  // Bin of a finite |x| < range() (the index the observer used), and of any t >= 0 given as a
  // double (bins() when t >= range()).
  int bin_of(float abs_x) const;
  int bin_of_value(double t) const;

  bool operator==(const HistogramObserver& o) const;

  // ---- the state as 64-bit words (a tensor, a file) ------------------------------------------------
  // A fixed-size image for (bins, tail): header words (tag, version, log2 bins, tail capacity,
  // top exponent, count, zeros, amax and smallest-nonzero patterns, NaN / +Inf / -Inf counts,
  // tail size), the bins' counts, then the tail in descending order padded with zeros.
  // from_state(to_state()) == *this. from_state checks every field and every invariant the
  // observer keeps (counts summing to the sample count, the range fitting the amax, the tail
  // being the largest nonzero values, ...) and throws std::invalid_argument naming the first
  // field that breaks one, so a state from anywhere is either a valid observer or an error.
  static std::size_t state_words(int bins, int tail);
  std::vector<std::uint64_t> to_state() const;
  static HistogramObserver from_state(std::span<const std::uint64_t> words);

 private:
  template <class T>
  void observe_serial(std::span<const T> x);
  template <class T>
  void observe_threads(std::span<const T> x, int threads);
  // The paths observe_serial chooses from (histogram_observe.cpp).
  template <class T>
  void observe_each(std::span<const T> x);            // the specification, one element at a time
  void observe_binned(std::span<const float> x);      // fp32 blocks counted into bins (S > 128)
  void tally_f32(std::span<const float> x);           // fp32 pattern tally, S <= 128
  void tally_bf16(std::span<const std::uint16_t> x);  // bf16 pattern tally
  void fold_tally(std::uint32_t* table);              // grow to amax, add the tally's bins, clear it
  void grow_to(int top);
  void add_tail(std::uint32_t abs_bits);
  std::uint32_t tail_threshold() const;  // insert only values above this pattern

  int log2_bins_;
  int log2_sub_;  // log2 of the sub-bins per binade: b - 5
  int tail_capacity_;
  std::optional<Isa> isa_;
  int top_;       // E: the fp32 exponent field of the top binade (k = E - 126), >= 31
  std::vector<std::uint64_t> counts_;
  std::uint64_t count_ = 0, zeros_ = 0;
  std::uint32_t amax_bits_ = 0;
  std::uint32_t min_bits_ = 0xFFFFFFFFu;  // smallest nonzero |x| pattern; all ones: none yet
  NonFiniteCounts non_finite_;
  std::vector<std::uint32_t> tail_heap_;  // min-heap of |x| patterns (std::greater)
};

}  // namespace fp8q::calib
