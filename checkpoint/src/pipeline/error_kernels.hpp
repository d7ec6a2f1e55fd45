// Internal: the kernels behind measure_error() (error_stats.hpp), one stretch at a time.
//
// A stretch is n consecutive elements of one row that measure_error() sums as one unit: a
// block-grid view's [c0, c1) of row r under one multiplier, or a whole row of an MX view
// (one multiplier per element, from its group). For element i of the stretch, with
// x = original (fp32, exact from F32/BF16/F16) and x^ = fp32(decoded[code] * s_i):
//   skipped (nonfinite += 1)   if x or x^ is NaN or +/-Inf;
//   otherwise (count += 1)     d = double(x), e = d - double(x^) (one double rounding),
//                              sig_k += d * d, err_k += e * e   (each product and sum rounded
//                              to double: no fused multiply-add),
//                              max_abs_error = max(max_abs_error, |e|),
//                              saturated += |d| > clip * double(s_i);
// where k = i mod 4 for the elements of the first 4 * floor(n / 4) (element 4j + k goes to
// partial k, in increasing j), and k = 0 for the last n mod 4 (in order). At the end of the
// stretch st.sum_sq_signal += (sig_0 + sig_1) + (sig_2 + sig_3), likewise sum_sq_error.
// Four partial sums make four independent dependency chains (one AVX2 register of doubles),
// and the order of every addition is fixed by the stretch, never by the thread count or the
// vector width. The sums of squares only ever add non-negative values, so adding +0.0 for a
// skipped element (what the vector kernels do) leaves a partial sum unchanged.
//
// stretch_generic() is the specification: plain C++, element by element. Every other kernel
// gives the same ErrorStats, bit for bit, for every input (tests/checkpoint/error_kernels_test).
// The caller runs the kernels in the default FP environment (ScopedDefaultFpEnv): x^ is an
// fp32 product, which flush-to-zero or denormals-are-zero would change.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "fp8q/checkpoint/error_stats.hpp"
#include "fp8q/numerics/isa.hpp"

namespace fp8q::checkpoint::detail {

struct Stretch {
  const std::byte* x = nullptr;         // n elements of the original, little-endian
  DType dtype = DType::kBF16;           // F32, BF16 or F16
  const std::uint8_t* codes = nullptr;  // n codes
  std::size_t n = 0;
  float scale = 1.0f;                   // s_i for every i, when scales == nullptr
  const float* scales = nullptr;        // else n per-element multipliers
  const float* decoded = nullptr;       // 256 entries: decode_f32(code, element format)
  double clip = 0;                      // max_finite + half the format's top step
  // Optional arithmetic decode, checked against `decoded` for all 256 codes by
  // arithmetic_decode() (decode_shift < 0: none): for a code q with magnitude m = q & 0x7F,
  //   m >= special_from:  decoded[q] is NaN or +/-Inf;
  //   otherwise:          decoded[q] = fp32 with bits (q & 0x80) << 24 | m << decode_shift,
  //                       times decode_pow (a power of two: exact, in the default FP
  //                       environment, also for the fp32 subnormals the small codes give).
  // Then fp32(decoded[q] * s) = fp32(bits * fp32(decode_pow * s)) whenever decode_pow * s is
  // finite: both are the one rounding of the same exact product.
  int decode_shift = -1;
  float decode_pow = 1.0f;
  std::uint32_t special_from = 128;
};

// Fills the arithmetic-decode fields of `s` from its `decoded` table (the e4m3fn, e4m3 and
// e5m2 tables have that form), or leaves decode_shift = -1 when the table has another form.
void arithmetic_decode(Stretch& s, int man_bits, int bias);

// Measures the stretches into `st`, one after the other in the order given (a row's blocks:
// one call per row keeps the per-call cost off each 128-element block).
using StretchFn = void (*)(std::span<const Stretch> stretches, ErrorStats& st);

void stretch_generic(std::span<const Stretch> stretches, ErrorStats& st);

// A stretch's running figures as the specification keeps them: the four partial sums of each
// kind, the maximum (starting from the ErrorStats' own) and the counts.
struct Partials {
  double sig[4] = {}, err[4] = {};
  double max_err = 0;
  std::uint64_t counted = 0, nonfinite = 0, saturated = 0;
};
// Elements [i, s.n) of the stretch into p as the specification steps them (i a multiple of
// 4; the vector kernels' tails), and the stretch's figures into st at its end. Throws
// std::invalid_argument for a dtype other than F32, BF16 or F16.
void add_elements(const Stretch& s, std::size_t i, Partials& p);
inline void close_stretch(const Partials& p, ErrorStats& st) {
  st.count += p.counted;
  st.nonfinite += p.nonfinite;
  st.saturated += p.saturated;
  st.sum_sq_signal += (p.sig[0] + p.sig[1]) + (p.sig[2] + p.sig[3]);
  st.sum_sq_error += (p.err[0] + p.err[1]) + (p.err[2] + p.err[3]);
  st.max_abs_error = p.max_err;
}

// The kernel for an instruction set, as dispatch() picks it (AVX2 for kAvx2 and kAvx512, NEON
// for kNeon, where the binary has it), the generic one otherwise.
StretchFn stretch_kernel(Isa isa);

// The first index of [begin, end) whose element is NaN or +/-Inf (end if none): the exponent
// field all ones, bits 30..23 (F32), 14..7 (BF16), 14..10 (F16).
using ScanFn = std::size_t (*)(const std::byte* data, DType dtype, std::size_t begin, std::size_t end);
std::size_t first_nonfinite_generic(const std::byte* data, DType dtype, std::size_t begin, std::size_t end);

// One ISA's kernels, as the generic ones above.
struct ErrorKernels {
  StretchFn stretch;
  ScanFn first_nonfinite;
};
// The vector kernels: error_stretch_kernel.hpp over xsimd, one file per ISA. Call only where
// the ISA is supported; null where this target does not compile it.
#if defined(FP8Q_HAVE_AVX2)
const ErrorKernels* error_kernels_avx2();  // AVX2 + F16C
#else
inline const ErrorKernels* error_kernels_avx2() { return nullptr; }
#endif
#if defined(FP8Q_HAVE_NEON)
const ErrorKernels* error_kernels_neon();
#else
inline const ErrorKernels* error_kernels_neon() { return nullptr; }
#endif

// measure_error() cut into its fixed chunks of rows, so that a caller can run the chunks in
// any order on any thread, mixed with other work (the pipeline writes the weight's output
// between them), and still get measure_error()'s figures bit for bit: chunk k's sums are
// kept apart and total() adds them in chunk order. The view and the original must outlive
// the object.
class ErrorMeasurement {
 public:
  // Per-thread buffers (a row's stretches, an MX row's multipliers), reused chunk to chunk.
  struct Scratch {
    std::vector<float> row_scale;
    std::vector<Stretch> row_stretches;
  };
  // Throws std::invalid_argument for a dtype other than F32/BF16/F16 or a view whose sizes
  // or scales do not match.
  ErrorMeasurement(std::span<const std::byte> original, DType dtype, const DequantView& view, Isa isa);
  std::size_t chunks() const { return partial_.size(); }
  // Measures chunk k (each k once). Runs in the default FP environment by itself.
  void measure_chunk(std::size_t k, Scratch& scratch);
  // The figures of all chunks, added in chunk order (call after every chunk has run).
  ErrorStats total() const;

 private:
  struct Run {
    std::size_t begin, end;
  };
  std::span<const std::byte> original_;
  const DequantView& v_;
  std::size_t width_ = 0, chunk_rows_ = 1;
  StretchFn kernel_ = nullptr;
  std::array<float, 256> decoded_{};
  Stretch base_;
  std::vector<Run> runs_;  // MX: the runs of consecutive columns in one group
  std::vector<ErrorStats> partial_;
};

// measure_error() and first_nonfinite() with the kernels of `isa` (tests compare the paths).
ErrorStats measure_error_isa(std::span<const std::byte> original, DType dtype, const DequantView& view, int threads,
                             Isa isa);
std::optional<std::uint64_t> first_nonfinite_isa(std::span<const std::byte> data, DType dtype, int threads, Isa isa);

}  // namespace fp8q::checkpoint::detail
