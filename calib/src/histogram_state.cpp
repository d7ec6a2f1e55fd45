// calib/src/histogram_state.cpp: HistogramObserver to and from a fixed-size array of words.
#include <algorithm>
#include <bit>
#include <stdexcept>
#include <string>

#include "fp8q/calib/histogram.hpp"

namespace fp8q::calib {

namespace {
constexpr std::uint64_t kTag = 0x7473'6968'7138'7066;  // "fp8qhist", little-endian
constexpr std::uint64_t kVersion = 1;
enum Word : std::size_t {
  kWTag, kWVersion, kWLog2Bins, kWTail, kWTop, kWCount, kWZeros, kWAmax, kWMin, kWNan, kWPosInf, kWNegInf,
  kWTailSize, kHeader
};
constexpr std::uint32_t kFp32Inf = 0x7F800000u;

HistogramOptions options(int bins, int tail) {
  HistogramOptions o;
  o.bins = bins, o.tail = tail;
  return o;
}

[[noreturn]] void bad(const std::string& what) { throw std::invalid_argument("histogram state: " + what); }
}  // namespace

std::size_t HistogramObserver::state_words(int bins, int tail) {
  (void)HistogramObserver(options(bins, tail));  // the same range checks
  return kHeader + static_cast<std::size_t>(bins) + static_cast<std::size_t>(tail);
}

std::vector<std::uint64_t> HistogramObserver::to_state() const {
  std::vector<std::uint64_t> w(state_words(bins(), tail_capacity_), 0);
  w[kWTag] = kTag, w[kWVersion] = kVersion;
  w[kWLog2Bins] = static_cast<std::uint64_t>(log2_bins_), w[kWTail] = static_cast<std::uint64_t>(tail_capacity_);
  w[kWTop] = static_cast<std::uint64_t>(top_);
  w[kWCount] = count_, w[kWZeros] = zeros_, w[kWAmax] = amax_bits_, w[kWMin] = min_bits_;
  w[kWNan] = non_finite_.nan, w[kWPosInf] = non_finite_.pos_inf, w[kWNegInf] = non_finite_.neg_inf;
  w[kWTailSize] = tail_heap_.size();
  std::copy(counts_.begin(), counts_.end(), w.begin() + kHeader);
  std::vector<std::uint32_t> t = tail_heap_;
  std::sort(t.begin(), t.end(), std::greater<>());
  std::copy(t.begin(), t.end(), w.begin() + kHeader + counts_.size());
  return w;
}

HistogramObserver HistogramObserver::from_state(std::span<const std::uint64_t> w) {
  if (w.size() < kHeader) bad(std::to_string(w.size()) + " words; the header alone has " + std::to_string(kHeader));
  if (w[kWTag] != kTag) bad("word 0 is not the tag of an fp8q histogram state");
  if (w[kWVersion] != kVersion) bad("version " + std::to_string(w[kWVersion]) + " (this build reads version 1)");
  if (w[kWLog2Bins] < 6 || w[kWLog2Bins] > 16) bad("log2 bins " + std::to_string(w[kWLog2Bins]) + " outside [6, 16]");
  if (w[kWTail] > 65536) bad("tail capacity " + std::to_string(w[kWTail]) + " above 65536");
  const int bins = 1 << w[kWLog2Bins], cap = static_cast<int>(w[kWTail]);
  if (w.size() != state_words(bins, cap))
    bad(std::to_string(w.size()) + " words; a state of " + std::to_string(bins) + " bins and tail " +
        std::to_string(cap) + " has " + std::to_string(state_words(bins, cap)));
  HistogramObserver h(options(bins, cap));
  const std::uint64_t count = w[kWCount], zeros = w[kWZeros], amax = w[kWAmax], min = w[kWMin];
  if (zeros > count) bad("zeros " + std::to_string(zeros) + " exceed the count " + std::to_string(count));
  const std::uint64_t nonzero = count - zeros;
  // the amax and the smallest nonzero |x|: finite positive patterns, or "none" when all are zero
  if (nonzero == 0 ? amax != 0 : (amax == 0 || amax >= kFp32Inf))
    bad("amax pattern " + std::to_string(amax) + " for " + std::to_string(nonzero) + " nonzero samples");
  if (nonzero == 0 ? min != 0xFFFFFFFFu : (min == 0 || min > amax))
    bad("smallest nonzero pattern " + std::to_string(min) + " for " + std::to_string(nonzero) +
        " nonzero samples and amax pattern " + std::to_string(amax));
  // the range is the smallest 2^k above the amax, k >= -95 (histogram.hpp)
  const std::uint64_t want_top = std::max<std::uint64_t>(31, amax >> 23);
  if (w[kWTop] != want_top) bad("top exponent " + std::to_string(w[kWTop]) + "; the amax puts it at " +
                                std::to_string(want_top));
  h.top_ = static_cast<int>(want_top);
  h.count_ = count, h.zeros_ = zeros;
  h.amax_bits_ = static_cast<std::uint32_t>(amax), h.min_bits_ = static_cast<std::uint32_t>(min);
  h.non_finite_ = {w[kWNan], w[kWPosInf], w[kWNegInf]};
  // bins: sum to the count, zeros in bin 0, nothing above the amax's bin
  std::uint64_t sum = 0;
  const int top_bin = nonzero == 0 ? 0 : h.bin_of(std::bit_cast<float>(h.amax_bits_));
  for (int i = 0; i < bins; ++i) {
    const std::uint64_t c = w[kHeader + static_cast<std::size_t>(i)];
    if (c > count - sum) bad("bin " + std::to_string(i) + ": the counts exceed the sample count " + std::to_string(count));
    if (c != 0 && i > top_bin) bad("bin " + std::to_string(i) + " holds " + std::to_string(c) +
                                   " samples above the amax's bin " + std::to_string(top_bin));
    sum += c;
    h.counts_[static_cast<std::size_t>(i)] = c;
  }
  if (sum != count) bad("the bins hold " + std::to_string(sum) + " samples, the count is " + std::to_string(count));
  if (h.counts_[0] < zeros) bad("bin 0 holds fewer samples than the zeros " + std::to_string(zeros));
  if (nonzero != 0 && h.counts_[static_cast<std::size_t>(top_bin)] == 0)
    bad("the amax's bin " + std::to_string(top_bin) + " is empty");
  // the tail: the min(capacity, nonzero) largest values, descending, the first being the amax
  const std::uint64_t size = w[kWTailSize];
  if (size != std::min<std::uint64_t>(static_cast<std::uint64_t>(cap), nonzero))
    bad("tail size " + std::to_string(size) + "; with capacity " + std::to_string(cap) + " and " +
        std::to_string(nonzero) + " nonzero samples it is " +
        std::to_string(std::min<std::uint64_t>(static_cast<std::uint64_t>(cap), nonzero)));
  const std::size_t base = kHeader + static_cast<std::size_t>(bins);
  for (std::size_t i = 0; i < static_cast<std::size_t>(cap); ++i) {
    const std::uint64_t v = w[base + i];
    if (i >= size) {
      if (v != 0) bad("tail word " + std::to_string(i) + " past the tail size is not 0");
      continue;
    }
    if (v < min || v > amax) bad("tail value " + std::to_string(i) + " (pattern " + std::to_string(v) +
                                 ") lies outside [smallest nonzero, amax]");
    if (i == 0 ? v != amax : v > w[base + i - 1])
      bad("tail value " + std::to_string(i) + " breaks the descending order starting at the amax");
    h.tail_heap_.push_back(static_cast<std::uint32_t>(v));
  }
  std::make_heap(h.tail_heap_.begin(), h.tail_heap_.end(), std::greater<>());
  return h;
}

}  // namespace fp8q::calib
