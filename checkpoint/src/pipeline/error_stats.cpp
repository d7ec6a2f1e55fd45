#include "fp8q/checkpoint/error_stats.hpp"

#include <array>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "fp8q/numerics/convert.hpp"
#include "fp8q/numerics/parallel.hpp"

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

namespace {

// The original element i as fp32 (exact for F32, BF16 and F16).
struct Source {
  const std::byte* data;
  DType dtype;
  float operator()(std::size_t i) const {
    switch (dtype) {
      case DType::kF32: {
        float v;
        std::memcpy(&v, data + 4 * i, 4);
        return v;
      }
      case DType::kBF16: {
        std::uint16_t b;
        std::memcpy(&b, data + 2 * i, 2);
        return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
      }
      default: {
        static const std::vector<float> f16 = [] {
          std::vector<float> t(65536);
          for (std::uint32_t c = 0; c < 65536; ++c) t[c] = decode_f32(c, kF16);
          return t;
        }();
        std::uint16_t b;
        std::memcpy(&b, data + 2 * i, 2);
        return f16[b];
      }
    }
  }
};

constexpr std::size_t kChunkElements = std::size_t{1} << 16;

}  // namespace

ErrorStats measure_error(std::span<const std::byte> original, DType dtype, const DequantView& v, int threads) {
  const std::size_t n = v.rows * v.cols;
  if (original.size() != n * dtype_bytes(dtype) || v.codes.size() != n)
    throw std::invalid_argument("measure_error: sizes do not match the view");
  const Format& element = format_of(v.element);
  std::array<float, 256> decoded{};
  for (std::size_t c = 0; c < 256; ++c) decoded[c] = decode_f32(c, element);
  // Clipped: |x| / s rounds (nearest-even) above max_finite had the format one more binade,
  // i.e. |x| / s > max_finite + half its top step. Quotients just above max_finite that round
  // back to it (the block maximum under a scale rounded down) are not counted.
  const double clip = element.max_finite() + std::ldexp(1.0, element.emax() - element.man_bits - 1);
  const Source x{original.data(), dtype};

  const std::size_t chunk_rows = std::max<std::size_t>(1, kChunkElements / std::max<std::size_t>(v.cols, 1));
  const std::size_t chunks = (v.rows + chunk_rows - 1) / chunk_rows;
  std::vector<ErrorStats> partial(chunks);
  // One stretch [c0, c1) of row r with one multiplier s (MX: per group). Four independent
  // partial sums per quantity (elements c0 + 4j + k go to partial k, the tail to partial 0,
  // combined in a fixed order at the end of the stretch), kept in registers, so the additions
  // are not one long dependency chain; the order is fixed by the layout, not by the thread
  // count.
  auto stretch = [&]<class Load>(Load load, std::size_t r, std::size_t c0, std::size_t c1, float s, ErrorStats& st) {
    const std::uint8_t* codes = v.codes.data() + r * v.cols;
    const bool mx = v.mx;
    double max_err = st.max_abs_error;
    std::uint64_t counted = 0, nonfinite = 0, saturated = 0;
    // one element into the partial sums (sig, err) it is given
    auto add = [&](std::size_t c, double& sig, double& err) {
      const float xv = load(r * v.cols + c);
      const float sc = mx ? v.scale(r, c) : s;    // per group; a block-grid scale is per stretch
      const float xh = decoded[codes[c]] * sc;     // fp32(decode(q) * s): one rounding
      if (!(std::fabs(xv) <= FLT_MAX) || !(std::fabs(xh) <= FLT_MAX)) {  // NaN or Inf
        ++nonfinite;
        return;
      }
      const double x = xv, e = x - static_cast<double>(xh);
      ++counted;
      sig += x * x;
      err += e * e;
      max_err = std::max(max_err, std::fabs(e));
      saturated += std::fabs(x) > clip * static_cast<double>(sc) ? 1 : 0;
    };
    double sig0 = 0, sig1 = 0, sig2 = 0, sig3 = 0, err0 = 0, err1 = 0, err2 = 0, err3 = 0;
    std::size_t c = c0;
    for (; c + 4 <= c1; c += 4) {
      add(c, sig0, err0);
      add(c + 1, sig1, err1);
      add(c + 2, sig2, err2);
      add(c + 3, sig3, err3);
    }
    for (; c < c1; ++c) add(c, sig0, err0);
    st.count += counted;
    st.nonfinite += nonfinite;
    st.saturated += saturated;
    st.sum_sq_signal += (sig0 + sig1) + (sig2 + sig3);
    st.sum_sq_error += (err0 + err1) + (err2 + err3);
    st.max_abs_error = max_err;
  };
  auto one = [&](std::size_t r, std::size_t c0, std::size_t c1, float s, ErrorStats& st) {
    const std::byte* data = original.data();
    switch (dtype) {
      case DType::kF32:
        stretch([data](std::size_t i) { float f; std::memcpy(&f, data + 4 * i, 4); return f; }, r, c0, c1, s, st);
        break;
      case DType::kBF16:
        stretch([data](std::size_t i) {
                  std::uint16_t b;
                  std::memcpy(&b, data + 2 * i, 2);
                  return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);  // inline, per element
                },
                r, c0, c1, s, st);
        break;
      default: stretch(x, r, c0, c1, s, st); break;
    }
  };
  parallel_chunks(
      chunks, threads,
      [&](std::size_t b, std::size_t e) {
        for (std::size_t k = b; k < e; ++k) {
          ErrorStats& st = partial[k];
          const std::size_t r1 = std::min(v.rows, (k + 1) * chunk_rows);
          for (std::size_t r = k * chunk_rows; r < r1; ++r) {
            if (v.mx) {
              one(r, 0, v.cols, 0.0f, st);
              continue;
            }
            for (std::size_t c0 = 0; c0 < v.cols; c0 += v.grid.block_cols) {
              const std::size_t c1 = std::min(v.cols, c0 + v.grid.block_cols);
              one(r, c0, c1, v.scale_inv[v.grid.scale_index(r, c0)], st);
            }
          }
        }
      },
      ChunkGrain{1, 1});
  ErrorStats total;
  for (const auto& p : partial) total.merge(p);
  return total;
}

std::optional<std::uint64_t> first_nonfinite(std::span<const std::byte> data, DType dtype, int threads) {
  const std::size_t width = dtype_bytes(dtype);
  const std::size_t n = data.size() / width;
  const std::size_t chunks = (n + kChunkElements - 1) / kChunkElements;
  std::vector<std::uint64_t> first(chunks, UINT64_MAX);
  // Exponent all ones = Inf or NaN: bits 30..23 (F32), 14..7 (BF16), 14..10 (F16).
  parallel_chunks(
      chunks, threads,
      [&](std::size_t b, std::size_t e) {
        for (std::size_t k = b; k < e; ++k) {
          const std::size_t i1 = std::min(n, (k + 1) * kChunkElements);
          for (std::size_t i = k * kChunkElements; i < i1; ++i) {
            bool bad;
            if (width == 4) {
              std::uint32_t u;
              std::memcpy(&u, data.data() + 4 * i, 4);
              bad = (u & 0x7F800000u) == 0x7F800000u;
            } else {
              std::uint16_t u;
              std::memcpy(&u, data.data() + 2 * i, 2);
              bad = dtype == DType::kBF16 ? (u & 0x7F80u) == 0x7F80u : (u & 0x7C00u) == 0x7C00u;
            }
            if (bad) {
              first[k] = i;
              break;
            }
          }
        }
      },
      ChunkGrain{1, 1});
  for (auto f : first)
    if (f != UINT64_MAX) return f;
  return std::nullopt;
}

}  // namespace fp8q::checkpoint
