// Observation for the |x| histogram (fp8q/calib/histogram.hpp): which path a call takes, and
// the paths. Every path gives the same state, bit for bit, for any input, chunking and thread
// count; tests/calib/histogram_paths_test.cpp checks each against a plain definition.
//
// 1. Fewer than kTallyMin elements: `observe_each`, one element at a time. This is the
//    specification: non-finite values are counted by kind, a new amax grows the range at once,
//    every value above the tail's threshold enters the tail.
// 2. bf16, and fp32 with at most 128 sub-bins per binade: a pattern tally (isa/hist_kernels.hpp).
//    Each element adds one to the slot of the top 16 bits of |x|, whatever the histogram's
//    range; at the end of the call (and every kFoldEvery elements, before a uint32 slot could
//    overflow) the range grows to the amax and the slots are folded into the bins. The state is
//    a function of the multiset of samples (histogram.hpp: growth then counting equals counting
//    with the final range), so growing once per call gives the bits of growing per new maximum.
//    fp32 keeps amax, zeros, the smallest nonzero |x| and the tail from each block's scan (the
//    slots round the low 16 bits away); for bf16 the slot is the exact value, so all of them
//    come from the table.
// 3. fp32 with more than 128 sub-bins per binade (the slots are coarser than the bins): per
//    block, a scan, growth to the block's max, and a count into bin-relative tables.
// Inf and NaN: a fp32 block whose scan sees one is looked at again element by element for the
// counts by kind and the finite statistics; in a bf16 tally they sit in slots >= 0x7F80 (the
// fold skips them), and a block that adds to the +/-Inf slot is read again for the signs.
#include <algorithm>
#include <bit>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "fp8q/calib/histogram.hpp"
#include "fp8q/numerics/parallel.hpp"
#include "isa/hist_kernels.hpp"

namespace fp8q::calib {

namespace detail {
const HistKernels& hist_kernels_for(const std::optional<Isa>& forced) {
  return *dispatch(
      resolve_isa(forced, "HistogramOptions::isa"), [] { return &hist_kernels_generic(); }, hist_kernels_avx2,
      hist_kernels_avx512, kNoKernel);
}
}  // namespace detail

namespace {

constexpr std::uint32_t kInfBits = 0x7F800000u;
// Path 2 pays a 2^15-slot table (clear and fold); below this many elements the
// element-by-element path is cheaper.
constexpr std::size_t kTallyMin = 8192;
// Elements per block: statistics and the choice of kernel per block; 16 KiB of fp32, so the
// rare second look at a block (tail, Inf/NaN) reads it from L1.
constexpr std::size_t kTallyBlock = 4096;
constexpr std::size_t kBinnedBlock = 2048;
// A block whose zeros are at least 1/5 of it makes the next block use the `_zeros` kernel,
// which skips the zeros' increments but pays for packing the others: the break-even share
// measured (docs/performance.md, "Histograms").
constexpr std::size_t kZeroHeavy = 5;
// No slot can pass 2^32 - 1 before a fold.
constexpr std::size_t kFoldEvery = std::size_t{1} << 31;

inline std::uint32_t abs_bits(float x) { return std::bit_cast<std::uint32_t>(x) & 0x7FFFFFFFu; }
inline std::uint32_t abs_bits(std::uint16_t b) { return (std::uint32_t{b} << 16) & 0x7FFFFFFFu; }
inline bool negative(float x) { return std::bit_cast<std::uint32_t>(x) >> 31; }
inline bool negative(std::uint16_t b) { return b >> 15; }

// The top binade's exponent field for the pattern a: its own (2^k > |x| with k = E - 126), at
// least 31.
int top_for(std::uint32_t a) { return std::max(31, static_cast<int>(a >> 23)); }

}  // namespace

// ---- 1. the specification ----------------------------------------------------------------------
template <class T>
void HistogramObserver::observe_each(std::span<const T> x) {
  for (const T v : x) {
    const std::uint32_t a = abs_bits(v);
    if (a >= kInfBits) {
      if (a > kInfBits) ++non_finite_.nan;
      else if (negative(v)) ++non_finite_.neg_inf;
      else ++non_finite_.pos_inf;
      continue;
    }
    ++count_;
    zeros_ += a == 0;
    if (a != 0 && a < min_bits_) min_bits_ = a;
    if (a > amax_bits_) {
      amax_bits_ = a;
      grow_to(top_for(a));
    }
    if (a > tail_threshold()) add_tail(a);
    ++counts_[static_cast<std::size_t>(bin_of(std::bit_cast<float>(a)))];
  }
}

// ---- 2. pattern tallies ------------------------------------------------------------------------
// Slot q holds the samples whose |x| pattern is q << 16 .. (q << 16) + 0xFFFF; their position is
// (q << 16) >> (23 - s) (histogram.hpp), which for s <= 7 is q >> (7 - s) and for bf16 (low half
// zero) with s > 7 is q << (s - 7). Every finite sample is at most the amax, so after the
// growth its bin max(position - base, 0) is below bins().
void HistogramObserver::fold_tally(std::uint32_t* table) {
  grow_to(top_for(amax_bits_));
  const std::int64_t base = static_cast<std::int64_t>(top_ - 31) << log2_sub_;
  const std::uint32_t q_top = amax_bits_ >> 16;
  for (std::uint32_t q = 0; q <= q_top; ++q) {
    if (table[q] == 0) continue;
    const std::int64_t p = log2_sub_ <= 7 ? std::int64_t{q} >> (7 - log2_sub_) : std::int64_t{q} << (log2_sub_ - 7);
    counts_[static_cast<std::size_t>(std::max<std::int64_t>(p - base, 0))] += table[q];
  }
  std::fill(table, table + detail::kTallySlots, 0u);
}

void HistogramObserver::tally_f32(std::span<const float> x) {
  const auto& kern = detail::hist_kernels_for(isa_);
  std::vector<std::uint32_t> table(detail::kTallySlots, 0), candidates(kTallyBlock);
  bool zero_heavy = false;
  std::size_t pending = 0;
  for (std::size_t b = 0; b < x.size(); b += kTallyBlock) {
    const std::size_t n = std::min(kTallyBlock, x.size() - b);
    const float* p = x.data() + b;
    detail::ScanResult s = (zero_heavy ? kern.tally_f32_zeros : kern.tally_f32)(p, n, table.data());
    zero_heavy = s.zeros * kZeroHeavy >= n;
    std::size_t finite = n;
    if (s.max_bits >= kInfBits) {
      // Inf or NaN in the block: tallied into slots the fold skips; count them by kind and take
      // the largest and smallest nonzero finite |x| again without them (zeros are unaffected)
      s.max_bits = 0;
      s.min_nonzero_bits = 0xFFFFFFFFu;
      for (std::size_t i = 0; i < n; ++i) {
        const std::uint32_t a = abs_bits(p[i]);
        if (a >= kInfBits) {
          --finite;
          if (a > kInfBits) ++non_finite_.nan;
          else if (negative(p[i])) ++non_finite_.neg_inf;
          else ++non_finite_.pos_inf;
          continue;
        }
        s.max_bits = std::max(s.max_bits, a);
        if (a != 0) s.min_nonzero_bits = std::min(s.min_nonzero_bits, a);
      }
    }
    count_ += finite;
    zeros_ += s.zeros;
    min_bits_ = std::min(min_bits_, s.min_nonzero_bits);
    amax_bits_ = std::max(amax_bits_, s.max_bits);
    // the tail: a block whose max beats its smallest value gives its candidates above the
    // threshold (which only rises, so no other element of the block could enter), in order
    if (const std::uint32_t above = tail_threshold(); s.max_bits > above) {
      const std::size_t k = kern.select_f32(p, n, above, candidates.data());
      for (std::size_t i = 0; i < k; ++i)
        if (candidates[i] > tail_threshold()) add_tail(candidates[i]);
    }
    pending += n;
    if (pending >= kFoldEvery) fold_tally(table.data()), pending = 0;
  }
  fold_tally(table.data());
}

void HistogramObserver::tally_bf16(std::span<const std::uint16_t> x) {
  using detail::kNonFiniteQ;
  const auto& kern = detail::hist_kernels_for(isa_);
  std::vector<std::uint32_t> table(detail::kTallySlots, 0);
  std::uint32_t* t = table.data();
  // every kernel puts the zeros in slot 0 (q == 0 is an exact zero for bf16)
  auto zeros_in_table = [t] { return std::uint64_t{t[0]}; };
  std::uint64_t neg_inf = 0;  // of the elements in the table
  // Every statistic from the table (the slot is the exact |x|), then the bins.
  auto fold = [&] {
    std::uint64_t finite = 0;
    for (std::uint32_t q = 0; q < kNonFiniteQ; ++q) finite += t[q];
    const std::uint64_t zeros = zeros_in_table();
    std::uint64_t nan = 0;
    for (std::uint32_t q = kNonFiniteQ + 1; q < detail::kPatternSlots; ++q) nan += t[q];
    non_finite_.nan += nan;
    non_finite_.neg_inf += neg_inf;
    non_finite_.pos_inf += t[kNonFiniteQ] - neg_inf;
    neg_inf = 0;
    count_ += finite;
    zeros_ += zeros;
    std::uint32_t q_lo = 1, q_hi = kNonFiniteQ - 1;
    while (q_lo < kNonFiniteQ && t[q_lo] == 0) ++q_lo;
    while (q_hi > 0 && t[q_hi] == 0) --q_hi;
    if (q_lo < kNonFiniteQ) min_bits_ = std::min(min_bits_, q_lo << 16);
    amax_bits_ = std::max(amax_bits_, q_hi << 16);  // q_hi = 0: no nonzero finite sample
    // the tail: from the largest value down, as many copies as enter
    for (std::uint32_t q = q_hi; q > 0 && (q << 16) > tail_threshold(); --q)
      for (std::uint32_t c = 0; c < t[q] && (q << 16) > tail_threshold(); ++c) add_tail(q << 16);
    fold_tally(t);
  };

  bool zero_heavy = false;
  std::uint64_t zeros_before = 0;
  std::size_t pending = 0;
  for (std::size_t b = 0; b < x.size(); b += kTallyBlock) {
    const std::size_t n = std::min(kTallyBlock, x.size() - b);
    const std::uint16_t* p = x.data() + b;
    const std::uint32_t inf_before = t[kNonFiniteQ];
    (zero_heavy ? kern.tally_bf16_zeros : kern.tally_bf16)(p, n, t);
    const std::uint64_t zeros_now = zeros_in_table();
    zero_heavy = (zeros_now - zeros_before) * kZeroHeavy >= n;
    zeros_before = zeros_now;
    if (t[kNonFiniteQ] != inf_before)  // an Inf of either sign: the slot has no sign
      for (std::size_t i = 0; i < n; ++i) neg_inf += p[i] == 0xFF80u;
    pending += n;
    if (pending >= kFoldEvery) fold(), pending = 0, zeros_before = 0;
  }
  fold();
}

// ---- 3. fp32 blocks counted into bins (more than 128 sub-bins per binade) ----------------------
void HistogramObserver::observe_binned(std::span<const float> x) {
  const auto& kern = detail::hist_kernels_for(isa_);
  const std::size_t nb = counts_.size();
  // uint32 tables, flushed before the bins change and at the end
  std::vector<std::uint32_t> tables(detail::kTables * nb);
  std::size_t pending = 0;
  auto flush = [&] {
    if (!pending) return;
    for (int t = 0; t < detail::kTables; ++t)
      for (std::size_t j = 0; j < nb; ++j) counts_[j] += tables[t * nb + j];
    std::fill(tables.begin(), tables.end(), 0);
    pending = 0;
  };
  for (std::size_t b = 0; b < x.size(); b += kBinnedBlock) {
    const std::size_t n = std::min(kBinnedBlock, x.size() - b);
    const float* p = x.data() + b;
    const detail::ScanResult s = kern.scan_f32(p, n);
    if (s.max_bits >= kInfBits) {
      flush();
      observe_each(std::span<const float>(p, n));
      continue;
    }
    count_ += n;
    zeros_ += s.zeros;
    min_bits_ = std::min(min_bits_, s.min_nonzero_bits);
    if (s.max_bits > amax_bits_) {
      amax_bits_ = s.max_bits;
      const int top = top_for(s.max_bits);
      if (top > top_) flush(), grow_to(top);
    }
    if (s.max_bits > tail_threshold())
      for (std::size_t i = 0; i < n; ++i) {
        const std::uint32_t a = abs_bits(p[i]);
        if (a > tail_threshold()) add_tail(a);
      }
    const int base = (top_ - 31) << log2_sub_;
    kern.count_f32(p, n, 23 - log2_sub_, base, tables.data(), nb);
    pending += n;
    if (pending >= kFoldEvery) flush();
  }
  flush();
}

// ---- dispatch ----------------------------------------------------------------------------------
template <class T>
void HistogramObserver::observe_serial(std::span<const T> x) {
  if (x.size() < kTallyMin) return observe_each(x);
  if constexpr (std::is_same_v<T, float>) {
    if (log2_sub_ <= 7) return tally_f32(x);
    return x.size() >= 8 * counts_.size() ? observe_binned(x) : observe_each(x);
  } else {
    return tally_bf16(x);
  }
}

template <class T>
void HistogramObserver::observe_threads(std::span<const T> x, int threads) {
  if (threads < 1) throw std::invalid_argument("HistogramObserver::observe: threads must be >= 1, got " + std::to_string(threads));
  if (threads == 1) return observe_serial(x);
  std::mutex m;
  std::vector<HistogramObserver> parts;
  HistogramOptions o;
  o.bins = bins();
  o.tail = tail_capacity_;
  o.isa = isa_;
  parallel_chunks(x.size(), threads, [&](std::size_t begin, std::size_t end) {
    HistogramObserver h(o);
    h.observe_serial(x.subspan(begin, end - begin));
    std::lock_guard<std::mutex> lock(m);
    parts.push_back(std::move(h));
  });
  for (const auto& h : parts) merge(h);  // exact and commutative: the order does not matter
}

void HistogramObserver::observe(std::span<const float> x, int threads) { observe_threads(x, threads); }
void HistogramObserver::observe_bf16(std::span<const std::uint16_t> x, int threads) { observe_threads(x, threads); }

}  // namespace fp8q::calib
