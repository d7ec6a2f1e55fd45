// fp8q/checkpoint/error_stats.hpp: how much a quantized weight lost.
//
// Over the N finite elements x of the original and their dequantized values x^ (DequantView):
//   SQNR           = 10 log10(sum x^2 / sum (x - x^)^2) dB   (+Inf when nothing was lost)
//   max abs error  = max |x - x^|
//   relative error = sqrt(sum (x - x^)^2 / sum x^2)           (0 for an all-zero tensor)
//   saturated      = elements clipped to the largest code: |x| / s > max_finite + half the
//                    format's top step (e4m3fn: 464, e4m3: 248), where rounding with more
//                    range would have given a larger value
// Sums are in double over fixed chunks of rows added in order, so the figures do not depend
// on the thread count. Non-finite x (only with --allow-nonfinite) are counted, not measured.
// The exact order of every addition is in checkpoint/src/pipeline/error_kernels.hpp; every
// kernel path (chosen at run time as fp8q/numerics/isa.hpp says; `isa` forces one) gives the
// generic path's bits, and all run in the IEEE default FP environment whatever the caller set.
#pragma once

#include <cstdint>
#include <span>

#include "fp8q/checkpoint/layout.hpp"

namespace fp8q::checkpoint {

struct ErrorStats {
  std::uint64_t count = 0;       // finite elements measured
  std::uint64_t nonfinite = 0;   // NaN / Inf elements of the original
  std::uint64_t saturated = 0;
  double sum_sq_signal = 0, sum_sq_error = 0, max_abs_error = 0;

  double sqnr_db() const;
  double relative_error() const;
  double fraction_saturated() const;
  void merge(const ErrorStats& o);
};

// `original`: the weight as stored in the input (F32, BF16 or F16), view.rows x view.cols.
ErrorStats measure_error(std::span<const std::byte> original, DType dtype, const DequantView& view, int threads = 1,
                         std::optional<Isa> isa = {});

// The first element (row-major index) of `data` that is NaN or +/-Inf, if any.
std::optional<std::uint64_t> first_nonfinite(std::span<const std::byte> data, DType dtype, int threads = 1,
                                             std::optional<Isa> isa = {});

}  // namespace fp8q::checkpoint
