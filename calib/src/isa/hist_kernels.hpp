// Internal: the histogram kernels' interface, shared by histogram.cpp and each ISA's
// translation unit. Not installed.
#pragma once

#include <cstddef>
#include <cstdint>

namespace fp8q::calib::detail {

// Increments are spread over this many tables (element i goes to table i % kTables), so that
// runs of equal bins do not wait on each other's store-to-load forwarding.
inline constexpr int kTables = 4;

struct ScanResult {
  std::uint32_t max_bits = 0;  // largest |x| pattern (fp32 bits; >= 0x7F800000: Inf or NaN seen)
  std::uint32_t zeros = 0;     // elements with |x| == 0
  std::uint32_t min_nonzero_bits = 0xFFFFFFFFu;  // smallest nonzero |x| pattern; all ones: none
};

// Scans n elements (fp32, or bf16 patterns).
using ScanFn = ScanResult (*)(const void* in, std::size_t n);
// For n finite elements below the histogram's range, with p = |x|'s pattern >> shift:
// tables[(i % kTables) * bins + max(p - base, 0)] += 1.
using CountFn = void (*)(const void* in, std::size_t n, int shift, int base, std::uint32_t* tables,
                         std::size_t bins);

struct HistKernels {
  ScanFn scan_f32, scan_bf16;
  CountFn count_f32, count_bf16;
};

const HistKernels& hist_kernels_generic();
// nullptr where this binary has no AVX2 path.
const HistKernels* hist_kernels_avx2();

}  // namespace fp8q::calib::detail
