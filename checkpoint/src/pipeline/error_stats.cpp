#include "fp8q/checkpoint/error_stats.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "fp8q/numerics/convert.hpp"
#include "fp8q/numerics/fp_env.hpp"
#include "fp8q/numerics/parallel.hpp"
#include "pipeline/error_kernels.hpp"

namespace fp8q::checkpoint {

double ErrorStats::sqnr_db() const {
  if (sum_sq_error == 0) return std::numeric_limits<double>::infinity();
  return 10.0 * std::log10(sum_sq_signal / sum_sq_error);
}
double ErrorStats::relative_error() const { return sum_sq_signal == 0 ? 0.0 : std::sqrt(sum_sq_error / sum_sq_signal); }
double ErrorStats::fraction_saturated() const { return count == 0 ? 0.0 : static_cast<double>(saturated) / count; }
void ErrorStats::merge(const ErrorStats& o) {
  count += o.count;
  nonfinite += o.nonfinite;
  saturated += o.saturated;
  sum_sq_signal += o.sum_sq_signal;
  sum_sq_error += o.sum_sq_error;
  max_abs_error = std::max(max_abs_error, o.max_abs_error);
}

namespace detail {

namespace {

const ErrorKernels kGenericKernels{&stretch_generic, &first_nonfinite_generic};

const ErrorKernels& kernels(Isa isa) {
  return *dispatch(isa, [] { return &kGenericKernels; }, error_kernels_avx2, kNoKernel, error_kernels_neon);
}

}  // namespace

StretchFn stretch_kernel(Isa isa) { return kernels(isa).stretch; }

namespace {

ScanFn scan_kernel(Isa isa) { return kernels(isa).first_nonfinite; }

// Rows are summed in chunks of about this many elements; the chunks' sums are added in
// order, so the split over threads never changes a bit.
constexpr std::size_t kChunkElements = std::size_t{1} << 16;

}  // namespace

ErrorMeasurement::ErrorMeasurement(std::span<const std::byte> original, DType dtype, const DequantView& v, Isa isa)
    : original_(original), v_(v) {
  if (dtype != DType::kF32 && dtype != DType::kBF16 && dtype != DType::kF16)
    throw std::invalid_argument("measure_error: dtype " + std::string(dtype_name(dtype)) + " is not F32, BF16 or F16");
  const std::size_t n = v.rows * v.cols;
  if (original.size() != n * dtype_bytes(dtype) || v.codes.size() != n)
    throw std::invalid_argument("measure_error: sizes do not match the view");
  const bool scales_fit =
      v.mx ? v.group_of_col.size() == v.cols && v.e8m0.size() == v.rows * v.groups_per_row &&
                 std::all_of(v.group_of_col.begin(), v.group_of_col.end(), [&](std::uint32_t g) { return g < v.groups_per_row; })
           : v.grid.rows == v.rows && v.grid.cols == v.cols && v.grid.block_rows > 0 && v.grid.block_cols > 0 &&
                 v.scale_inv.size() == v.grid.grid_size();
  if (!scales_fit) throw std::invalid_argument("measure_error: the view's scales do not match its shape");
  const Format& element = format_of(v.element);
  for (std::size_t c = 0; c < 256; ++c) decoded_[c] = decode_f32(c, element);
  kernel_ = stretch_kernel(isa);
  width_ = dtype_bytes(dtype);
  base_.dtype = dtype;
  base_.decoded = decoded_.data();
  // Clipped: |x| / s rounds (nearest-even) above max_finite had the format one more binade,
  // i.e. |x| / s > max_finite + half its top step. Quotients just above max_finite that round
  // back to it (the block maximum under a scale rounded down) are not counted.
  base_.clip = element.max_finite() + std::ldexp(1.0, element.emax() - element.man_bits - 1);
  {
    ScopedDefaultFpEnv env;  // the check multiplies in fp32
    arithmetic_decode(base_, element.man_bits, element.bias);
  }
  // MX: the runs of consecutive columns in one group (OCP: 32 columns each), so that a row's
  // per-element multipliers are filled run by run, each group's asked of scale() once.
  if (v.mx) {
    for (std::size_t c = 0; c < v.cols; ++c) {
      if (c == 0 || v.group_of_col[c] != v.group_of_col[c - 1])
        runs_.push_back({c, c + 1});
      else
        runs_.back().end = c + 1;
    }
  }
  chunk_rows_ = std::max<std::size_t>(1, kChunkElements / std::max<std::size_t>(v.cols, 1));
  partial_.resize((v.rows + chunk_rows_ - 1) / chunk_rows_);
}

void ErrorMeasurement::measure_chunk(std::size_t k, Scratch& scratch) {
  ScopedDefaultFpEnv env;  // x^ = fp32(decode(q) * s) in IEEE default arithmetic
  const DequantView& v = v_;
  if (v.mx && scratch.row_scale.size() != v.cols) scratch.row_scale.assign(v.cols, 0.0f);
  Stretch s = base_;
  ErrorStats st;  // chunk k's own sums, from zero whatever ran before on this thread
  const std::size_t r1 = std::min(v.rows, (k + 1) * chunk_rows_);
  for (std::size_t r = k * chunk_rows_; r < r1; ++r) {
    const std::byte* row = original_.data() + r * v.cols * width_;
    const std::uint8_t* codes = v.codes.data() + r * v.cols;
    if (v.mx) {
      // One stretch per row, each element under its group's multiplier.
      for (const Run& run : runs_)
        std::fill(scratch.row_scale.begin() + run.begin, scratch.row_scale.begin() + run.end, v.scale(r, run.begin));
      s.x = row;
      s.codes = codes;
      s.n = v.cols;
      s.scales = scratch.row_scale.data();
      kernel_({&s, 1}, st);
      continue;
    }
    // One stretch per block the row crosses, under that block's multiplier.
    scratch.row_stretches.clear();
    for (std::size_t c0 = 0; c0 < v.cols; c0 += v.grid.block_cols) {
      const std::size_t c1 = std::min(v.cols, c0 + v.grid.block_cols);
      s.x = row + c0 * width_;
      s.codes = codes + c0;
      s.n = c1 - c0;
      s.scale = v.scale_inv[v.grid.scale_index(r, c0)];
      scratch.row_stretches.push_back(s);
    }
    kernel_(scratch.row_stretches, st);
  }
  partial_[k] = st;
}

ErrorStats ErrorMeasurement::total() const {
  ErrorStats total;
  for (const auto& p : partial_) total.merge(p);
  return total;
}

ErrorStats measure_error_isa(std::span<const std::byte> original, DType dtype, const DequantView& v, int threads,
                             Isa isa) {
  ErrorMeasurement m(original, dtype, v, isa);
  parallel_chunks(
      m.chunks(), threads,
      [&](std::size_t b, std::size_t e) {
        ErrorMeasurement::Scratch scratch;
        for (std::size_t k = b; k < e; ++k) m.measure_chunk(k, scratch);
      },
      ChunkGrain{1, 1});
  return m.total();
}

std::optional<std::uint64_t> first_nonfinite_isa(std::span<const std::byte> data, DType dtype, int threads, Isa isa) {
  if (dtype != DType::kF32 && dtype != DType::kBF16 && dtype != DType::kF16)
    throw std::invalid_argument("first_nonfinite: dtype " + std::string(dtype_name(dtype)) + " is not F32, BF16 or F16");
  const std::size_t n = data.size() / dtype_bytes(dtype);
  const std::size_t chunks = (n + kChunkElements - 1) / kChunkElements;
  const ScanFn scan = scan_kernel(isa);
  std::vector<std::uint64_t> first(chunks, UINT64_MAX);
  parallel_chunks(
      chunks, threads,
      [&](std::size_t b, std::size_t e) {
        for (std::size_t k = b; k < e; ++k) {
          const std::size_t i0 = k * kChunkElements, i1 = std::min(n, i0 + kChunkElements);
          const std::size_t i = scan(data.data(), dtype, i0, i1);
          if (i < i1) {
            first[k] = i;
            return;  // a later chunk of this thread cannot hold an earlier element
          }
        }
      },
      ChunkGrain{1, 1});
  for (auto f : first)
    if (f != UINT64_MAX) return f;
  return std::nullopt;
}

}  // namespace detail

ErrorStats measure_error(std::span<const std::byte> original, DType dtype, const DequantView& v, int threads,
                         std::optional<Isa> isa) {
  return detail::measure_error_isa(original, dtype, v, threads, resolve_isa(isa, "measure_error: isa"));
}

std::optional<std::uint64_t> first_nonfinite(std::span<const std::byte> data, DType dtype, int threads,
                                             std::optional<Isa> isa) {
  return detail::first_nonfinite_isa(data, dtype, threads, resolve_isa(isa, "first_nonfinite: isa"));
}

}  // namespace fp8q::checkpoint
