// Internal: the histogram kernels' interface, shared by the observation code and each ISA's
// translation unit. Not installed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "fp8q/numerics/isa.hpp"

namespace fp8q::calib::detail {

// ---- pattern tallies (the fast path) -----------------------------------------------------------
// A tally counts samples by q = the top 16 bits of |x|'s fp32 pattern (for bf16, the pattern
// itself without its sign): table[q] += 1. Every bin edge of a histogram with at most 128
// sub-bins per binade is a multiple of 2^16 in the fp32 pattern (position = a >> (23 - log2 S)),
// and a bf16 value is exactly its q, so the bins are a function of q and are folded from the
// table once per call; no element needs the histogram's range. q >= 0x7F80 is Inf or NaN (the
// fold skips them).
//
// Why a table and one increment per sample: AVX2 has no scatter, so a histogram is one
// load-add-store per sample; Zen 3 retires about one such store per cycle (two only when they
// are to adjacent addresses), which is the limit of the plain variants. The cost beyond that is
// a chain of increments to one address: store-to-load forwarding makes each wait for the one
// before. That happens when one value is common, and in practice that value is zero (ReLU
// outputs, padding, pruned weights), so the `_zeros` variants do not tally the samples with
// q == 0 at all: they count them (with vector compares in the AVX2 kernels) and add the count
// to slot 0 once per call; only the other samples take a store. The caller picks the variant
// per block from the previous block's zeros: the plain one is faster when zeros are rare, and
// both leave the same table.
inline constexpr std::size_t kPatternSlots = 0x8000;  // q in [0, 2^15)
inline constexpr std::size_t kTallySlots = kPatternSlots;
inline constexpr std::uint32_t kNonFiniteQ = 0x7F80;  // q of +Inf; above it NaN

struct ScanResult {
  std::uint32_t max_bits = 0;  // largest |x| pattern (fp32 bits; >= 0x7F800000: Inf or NaN seen)
  std::uint32_t zeros = 0;     // elements with |x| == 0
  std::uint32_t min_nonzero_bits = 0xFFFFFFFFu;  // smallest nonzero |x| pattern; all ones: none
};

// fp32: tallies n elements into table (kTallySlots entries) and returns their scan (non-finite
// values included: a max_bits >= 0x7F800000 tells the caller to look at the block again).
using TallyF32Fn = ScanResult (*)(const float* in, std::size_t n, std::uint32_t* table);
// bf16 patterns: tallies n elements; the table alone gives every statistic (q is exact).
using TallyBf16Fn = void (*)(const std::uint16_t* in, std::size_t n, std::uint32_t* table);
// fp32: writes to out, in order, the |x| patterns a of the n elements with above < a < +Inf
// (above <= 0x7F7FFFFF); returns how many. The candidates for the tail.
using SelectF32Fn = std::size_t (*)(const float* in, std::size_t n, std::uint32_t above, std::uint32_t* out);

// ---- bin-relative kernels (fp32 histograms with more than 128 sub-bins per binade) -----------
// Increments are spread over this many tables (element i goes to table i % kTables), so that
// runs of equal bins do not wait on each other's store-to-load forwarding.
inline constexpr int kTables = 4;

// Scans n fp32 elements.
using ScanFn = ScanResult (*)(const float* in, std::size_t n);
// For n finite fp32 elements below the histogram's range, with p = |x|'s pattern >> shift:
// tables[(i % kTables) * bins + max(p - base, 0)] += 1.
using CountFn = void (*)(const float* in, std::size_t n, int shift, int base, std::uint32_t* tables,
                         std::size_t bins);

struct HistKernels {
  ScanFn scan_f32;
  CountFn count_f32;
  TallyF32Fn tally_f32, tally_f32_zeros;
  TallyBf16Fn tally_bf16, tally_bf16_zeros;
  SelectF32Fn select_f32;
};

const HistKernels& hist_kernels_generic();
// nullptr where this binary has no such path. The AVX-512 kernels are hist_kernel16.hpp.
#if defined(FP8Q_HAVE_AVX2)
const HistKernels* hist_kernels_avx2();  // call only where Isa::kAvx2 is supported
#else
inline const HistKernels* hist_kernels_avx2() { return nullptr; }  // not compiled for this target
#endif
#if defined(FP8Q_HAVE_AVX512)
const HistKernels* hist_kernels_avx512();  // call only where Isa::kAvx512 is supported
#else
inline const HistKernels* hist_kernels_avx512() { return nullptr; }  // not compiled for this target
#endif
// The kernels for a forced ISA (std::invalid_argument if this machine lacks it), or for
// fp8q::active_isa().
const HistKernels& hist_kernels_for(const std::optional<Isa>& forced);

}  // namespace fp8q::calib::detail
