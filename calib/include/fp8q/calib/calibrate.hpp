// fp8q/calib/calibrate.hpp: calibrate one tensor in one call (what `fp8q calibrate` needs).
//
// Given the samples of one tensor (fp32 values, or bf16 / f16 bit patterns), a method, a target
// format and a granularity, returns per tensor or per channel: the amax, the scale
// (quant's scale_from_amax), scale_inv = fp32(1 / scale), and the quantization error over the
// raw samples, computed exactly as the quantization itself:
//   q = convert(fp32(x * scale)) (nearest-even, saturating), x_hat = decode(q) / scale (double),
//   MSE = (1/N) sum (x - x_hat)^2,  SQNR = 10 log10(sum x^2 / sum (x - x_hat)^2) dB
// over the N finite samples (NaN and Inf are counted, never part of any statistic).
// Sums are in double, in a fixed order (blocks of 65536 elements summed in sequence, then the
// blocks in order), so the result is the same for any thread count and caller FP environment.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "fp8q/calib/amax_observer.hpp"
#include "fp8q/calib/calibrators.hpp"
#include "fp8q/calib/channels.hpp"
#include "fp8q/calib/histogram.hpp"
#include "fp8q/numerics/format.hpp"
#include "fp8q/quant/granularity.hpp"

namespace fp8q::calib {

struct CalibrationSpec {
  Method method = Method::kMax;
  FormatId format = FormatId::kE4M3FN;
  // tensor: one amax for the whole tensor; row: one per channel of the ChannelLayout (per row of
  // the 2-D view: ChannelLayout::along(shape, 0)); calibrate() refuses any other
  Granularity granularity = Granularity::tensor();
  CalibratorOptions calibrator;   // percentile, and the amax -> scale rule
  HistogramOptions histogram;     // bins, exact tail size (percentile, mse, entropy)
  int threads = 1;                // >= 1; results do not depend on it
};

struct ChannelCalibration {
  float amax = 0;            // the calibrated amax
  float scale = 1;           // scale_from_amax(amax, format, spec.calibrator.scale)
  float scale_inv = 1;       // fp32(1 / scale), what checkpoints store
  double mse = 0;            // over the finite samples; 0 when there are none
  double sqnr_db = 0;        // +Inf when the error is 0 (also for all-zero data)
  float observed_amax = 0;   // largest finite |x|
  std::uint64_t count = 0;   // finite samples
  NonFiniteCounts non_finite;
};

// Sum of squared errors, sum of squares and the number of finite samples of quantizing x
// with `scale` (see the header comment).
struct QuantError {
  double sum_sq_error = 0;
  double sum_sq_signal = 0;
  std::uint64_t count = 0;
};
QuantError quant_error(std::span<const float> x, float scale, const Format& target, int threads = 1);

// x holds layout.size() elements (row), or any number (tensor: the layout is ignored).
// Returns one entry per channel (one for kTensor). std::invalid_argument on a size mismatch,
// a target without a grid, or bad options.
std::vector<ChannelCalibration> calibrate(std::span<const float> x, const CalibrationSpec& spec,
                                          const ChannelLayout& layout = {});
// Bit patterns of `source` (kF32, kBF16 or kF16), little-endian, source.storage_bytes() each.
std::vector<ChannelCalibration> calibrate(std::span<const std::byte> x, const Format& source,
                                          const CalibrationSpec& spec, const ChannelLayout& layout = {});

}  // namespace fp8q::calib
