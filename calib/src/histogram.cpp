// The mergeable |x| histogram (fp8q/calib/histogram.hpp): options, accessors, range growth, the
// exact tail and merge. Observation is in histogram_observe.cpp.
#include "fp8q/calib/histogram.hpp"

#include <algorithm>
#include <cmath>
#include <bit>
#include <functional>
#include <stdexcept>
#include <string>

#include "isa/hist_kernels.hpp"

namespace fp8q::calib {

HistogramObserver::HistogramObserver(const HistogramOptions& o) : tail_capacity_(o.tail), isa_(o.isa) {
  if (o.bins < 64 || o.bins > 65536 || !std::has_single_bit(static_cast<unsigned>(o.bins)))
    throw std::invalid_argument("HistogramOptions::bins must be a power of two in [64, 65536], got " +
                                std::to_string(o.bins));
  if (o.tail < 0 || o.tail > 65536)
    throw std::invalid_argument("HistogramOptions::tail must be in [0, 65536], got " + std::to_string(o.tail));
  log2_bins_ = std::countr_zero(static_cast<unsigned>(o.bins));
  log2_sub_ = log2_bins_ - 5;  // 32 binades
  top_ = 31;                   // the smallest range (base 0): 2^-95
  counts_.assign(static_cast<std::size_t>(o.bins), 0);
  if (o.isa) (void)detail::hist_kernels_for(o.isa);  // reject an unsupported ISA now, not at the first observe
}

double HistogramObserver::range() const { return std::ldexp(1.0, top_ - 126); }
float HistogramObserver::amax() const { return std::bit_cast<float>(amax_bits_); }
float HistogramObserver::min_nonzero() const { return min_bits_ == 0xFFFFFFFFu ? 0.0f : std::bit_cast<float>(min_bits_); }

namespace {
// Value of the fp32 "position" P (pattern >> (23 - s)), i.e. of the pattern P << (23 - s), in
// double (the top edge, pattern 0xFF << 23, is 2^128: no fp32 holds it).
double position_value(std::int64_t p, int log2_sub) {
  const std::int64_t e = p >> log2_sub, m = p & ((std::int64_t{1} << log2_sub) - 1);
  const double frac = std::ldexp(static_cast<double>(m), -log2_sub);
  return e == 0 ? std::ldexp(frac, -126) : std::ldexp(1.0 + frac, static_cast<int>(e) - 127);
}
}  // namespace

double HistogramObserver::bin_edge(int i) const {
  if (i <= 0) return 0.0;
  const std::int64_t base = static_cast<std::int64_t>(top_ - 31) << log2_sub_;
  return position_value(base + i, log2_sub_);
}

int HistogramObserver::bin_of(float abs_x) const {
  // the position from the bits, minus the base, at least 0 (see the header)
  const int p = static_cast<int>((std::bit_cast<std::uint32_t>(abs_x) & 0x7FFFFFFFu) >> (23 - log2_sub_));
  const int i = p - ((top_ - 31) << log2_sub_);
  return i > 0 ? i : 0;
}

int HistogramObserver::bin_of_value(double t) const {
  if (!(t > 0)) return 0;
  if (t >= range()) return bins();
  // the same position as the fp32 bits would give, read exactly from the double's bits:
  // exponent field rebased from 1023 to 127, then the top log2 S mantissa bits
  std::int64_t p;
  if (t >= 0x1p-126) {
    const auto u = std::bit_cast<std::uint64_t>(t);
    const auto e = static_cast<std::int64_t>(u >> 52) - 1023 + 127;
    p = (e << log2_sub_) | static_cast<std::int64_t>((u >> (52 - log2_sub_)) & ((std::uint64_t{1} << log2_sub_) - 1));
  } else {
    p = static_cast<std::int64_t>(std::floor(std::ldexp(t, 126 + log2_sub_)));
  }
  const std::int64_t i = p - (static_cast<std::int64_t>(top_ - 31) << log2_sub_);
  return static_cast<int>(std::clamp<std::int64_t>(i, 0, bins() - 1));
}

std::vector<float> HistogramObserver::tail() const {
  std::vector<std::uint32_t> b = tail_heap_;
  std::sort(b.begin(), b.end(), std::greater<>());
  std::vector<float> v(b.size());
  for (std::size_t i = 0; i < b.size(); ++i) v[i] = std::bit_cast<float>(b[i]);
  return v;
}

bool HistogramObserver::operator==(const HistogramObserver& o) const {
  return log2_bins_ == o.log2_bins_ && tail_capacity_ == o.tail_capacity_ && top_ == o.top_ &&
         counts_ == o.counts_ && count_ == o.count_ && zeros_ == o.zeros_ && amax_bits_ == o.amax_bits_ &&
         min_bits_ == o.min_bits_ &&
         non_finite_ == o.non_finite_ && tail() == o.tail();
}

// ---- range growth ------------------------------------------------------------------------------
// The base moves up by D = d * S positions: bin j >= 1 takes old bin j + D (same position), and
// bin 0 takes old bins 0 .. D (every position at or below the new base).
void HistogramObserver::grow_to(int top) {
  if (top <= top_) return;
  const std::size_t n = counts_.size();
  const std::size_t shift = static_cast<std::size_t>(top - top_) << log2_sub_;
  std::uint64_t low = 0;
  for (std::size_t i = 0; i <= std::min(shift, n - 1); ++i) low += counts_[i];
  for (std::size_t j = 1; j < n; ++j) counts_[j] = j + shift < n ? counts_[j + shift] : 0;
  counts_[0] = low;
  top_ = top;
}

// ---- tail --------------------------------------------------------------------------------------
std::uint32_t HistogramObserver::tail_threshold() const {
  // A value is inserted iff its pattern is above the threshold; 0xFFFFFFFF admits nothing.
  if (tail_capacity_ == 0) return 0xFFFFFFFFu;
  return tail_heap_.size() < static_cast<std::size_t>(tail_capacity_) ? 0 : tail_heap_.front();
}

void HistogramObserver::add_tail(std::uint32_t a) {
  if (tail_capacity_ == 0) return;
  if (tail_heap_.size() < static_cast<std::size_t>(tail_capacity_)) {
    tail_heap_.push_back(a);
    std::push_heap(tail_heap_.begin(), tail_heap_.end(), std::greater<>());
  } else if (a > tail_heap_.front()) {
    std::pop_heap(tail_heap_.begin(), tail_heap_.end(), std::greater<>());
    tail_heap_.back() = a;
    std::push_heap(tail_heap_.begin(), tail_heap_.end(), std::greater<>());
  }
}

// ---- merge --------------------------------------------------------------------------------------
void HistogramObserver::merge(const HistogramObserver& o) {
  if (&o == this) {  // the loops below would read what they write (and the tail as it grows)
    const HistogramObserver copy = o;
    merge(copy);
    return;
  }
  if (o.log2_bins_ != log2_bins_ || o.tail_capacity_ != tail_capacity_)
    throw std::invalid_argument("HistogramObserver::merge: bins " + std::to_string(bins()) + " / tail " +
                                std::to_string(tail_capacity_) + " vs bins " + std::to_string(o.bins()) +
                                " / tail " + std::to_string(o.tail_capacity_));
  grow_to(o.top_);
  // other's bin i (i >= 1) is at position base_o + i = base + i - shift
  const std::size_t shift = static_cast<std::size_t>(top_ - o.top_) << log2_sub_;
  for (std::size_t i = 0; i < o.counts_.size(); ++i) counts_[i > shift ? i - shift : 0] += o.counts_[i];
  count_ += o.count_;
  zeros_ += o.zeros_;
  amax_bits_ = std::max(amax_bits_, o.amax_bits_);
  min_bits_ = std::min(min_bits_, o.min_bits_);
  non_finite_ += o.non_finite_;
  for (std::uint32_t a : o.tail_heap_) add_tail(a);
}

}  // namespace fp8q::calib
