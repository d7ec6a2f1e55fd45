// One-call calibration of a tensor (fp8q/calib/calibrate.hpp).
#include "fp8q/calib/calibrate.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

#include "fp8q/numerics/arith.hpp"
#include "fp8q/numerics/bulk.hpp"
#include "fp8q/numerics/convert.hpp"
#include "fp8q/numerics/parallel.hpp"
#include "fp8q/numerics/fp_env.hpp"
#include "grid.hpp"

namespace fp8q::calib {
namespace {

constexpr std::size_t kErrorBlock = 65536;

// The error sums of one block, in element order.
QuantError block_error(std::span<const float> x, float scale, const detail::Grid& g, std::vector<std::uint8_t>& codes) {
  ConvertOptions o;
  o.scale = scale;
  o.nan = NanPolicy::kZero;  // non-finite inputs are skipped below
  codes.resize(x.size());
  convert(x, std::span<std::uint8_t>(codes), *g.format, o);
  QuantError e;
  const double s = scale;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (!std::isfinite(x[i])) continue;
    const double v = x[i], d = v - g.decode[codes[i]] / s;
    e.sum_sq_error += d * d;
    e.sum_sq_signal += v * v;
    ++e.count;
  }
  return e;
}

ChannelCalibration finish(float amax, float observed_amax, const NonFiniteCounts& nf, const QuantError& e, float scale) {
  ChannelCalibration r;
  r.amax = amax;
  r.scale = scale;
  r.scale_inv = scale > 0.0f ? divide_rne(1.0f, scale) : std::numeric_limits<float>::infinity();
  r.count = e.count;
  r.mse = e.count ? e.sum_sq_error / static_cast<double>(e.count) : 0.0;
  r.sqnr_db = e.sum_sq_error > 0 ? 10.0 * std::log10(e.sum_sq_signal / e.sum_sq_error)
                                 : std::numeric_limits<double>::infinity();
  r.observed_amax = observed_amax;
  r.non_finite = nf;
  return r;
}

// What one channel is observed into: an amax observer for `max`, a histogram for the others
// (which also holds the amax and the non-finite counts).
struct ChannelState {
  AmaxObserver amax;
  std::optional<HistogramObserver> hist;

  float observed_amax() const { return hist ? hist->amax() : amax.amax(); }
  const NonFiniteCounts& non_finite() const { return hist ? hist->non_finite() : amax.non_finite(); }
};

template <class T>
void observe(ChannelState& st, std::span<const T> x, int threads) {
  if constexpr (std::is_same_v<T, float>) {
    if (st.hist) st.hist->observe(x, threads);
    else st.amax.observe(x);
  } else {
    if (st.hist) st.hist->observe_bf16(x, threads);
    else st.amax.observe_bf16(x);
  }
}

template <class T>
std::vector<ChannelCalibration> run(std::span<const T> x, const CalibrationSpec& spec, const ChannelLayout& layout) {
  if (spec.threads < 1) throw std::invalid_argument("CalibrationSpec::threads must be >= 1, got " + std::to_string(spec.threads));
  // every option is checked before any sample is read, whichever method uses it
  if (static_cast<unsigned>(spec.method) > static_cast<unsigned>(Method::kEntropy))
    throw std::invalid_argument("CalibrationSpec::method " + std::to_string(static_cast<unsigned>(spec.method)) +
                                " is not a method");
  const double p = spec.calibrator.percentile;
  if (!(p > 0.0 && p <= 100.0))
    throw std::invalid_argument("CalibrationSpec::calibrator.percentile must be in (0, 100], got " + std::to_string(p));
  if (spec.method == Method::kMax) HistogramObserver check(spec.histogram);  // the constructor checks the options
  if (spec.granularity != Granularity::tensor() && spec.granularity != Granularity::row())
    throw std::invalid_argument("CalibrationSpec::granularity " + granularity_name(spec.granularity) +
                                " is not tensor or row (one amax per channel of the layout)");
  const Format& target = format_of(spec.format);
  const detail::Grid& grid = detail::grid_of(target);
  ChannelLayout l = layout;
  if (spec.granularity == Granularity::tensor()) l = {1, 1, x.size()};
  const bool need_hist = spec.method != Method::kMax;
  std::vector<ChannelState> st(l.channels);
  for (auto& s : st)
    if (need_hist) s.hist.emplace(spec.histogram);
  const int t = spec.granularity == Granularity::tensor() ? spec.threads : 1;
  for_each_channel_batch(x, l, [&](std::size_t c, std::span<const T> run) { observe(st[c], run, t); });

  // amax and scale per channel, then the error over the raw samples (widened to fp32 exactly)
  std::vector<ChannelCalibration> out(l.channels);
  std::vector<float> amax(l.channels), scale(l.channels);
  for (std::size_t c = 0; c < l.channels; ++c) {
    amax[c] = need_hist ? calibrate_amax(*st[c].hist, spec.method, target, spec.calibrator) : st[c].amax.amax();
    scale[c] = scale_from_amax(amax[c], target, spec.calibrator.scale);
  }
  std::vector<QuantError> err(l.channels);
  ScopedDefaultFpEnv env;  // the IEEE default: the caller's MXCSR changes no bit
  bool done = false;
  if constexpr (std::is_same_v<T, float>) {
    if (spec.granularity == Granularity::tensor()) {
      err[0] = quant_error(x, scale[0], target, t);  // blocks in order: any thread count
      done = true;
    }
  }
  if (!done) {
    std::vector<std::uint8_t> codes;
    std::vector<float> wide;
    for_each_channel_batch(x, l, [&](std::size_t c, std::span<const T> run) {
      std::span<const float> v;
      if constexpr (std::is_same_v<T, float>) {
        v = run;
      } else {
        wide.resize(run.size());
        for (std::size_t i = 0; i < run.size(); ++i) {
          const std::uint32_t u = std::uint32_t{run[i]} << 16;  // bf16 -> fp32 is exact
          std::memcpy(&wide[i], &u, 4);
        }
        v = wide;
      }
      for (std::size_t b = 0; b < v.size(); b += kErrorBlock) {
        const QuantError p = block_error(v.subspan(b, std::min(kErrorBlock, v.size() - b)), scale[c], grid, codes);
        err[c].sum_sq_error += p.sum_sq_error, err[c].sum_sq_signal += p.sum_sq_signal, err[c].count += p.count;
      }
    }, kErrorBlock);
  }
  for (std::size_t c = 0; c < l.channels; ++c)
    out[c] = finish(amax[c], st[c].observed_amax(), st[c].non_finite(), err[c], scale[c]);
  return out;
}

}  // namespace

QuantError quant_error(std::span<const float> x, float scale, const Format& target, int threads) {
  if (threads < 1) throw std::invalid_argument("quant_error: threads must be >= 1, got " + std::to_string(threads));
  const detail::Grid& grid = detail::grid_of(target);
  const std::size_t blocks = (x.size() + kErrorBlock - 1) / kErrorBlock;
  std::vector<QuantError> part(blocks);
  parallel_chunks(blocks, threads, [&](std::size_t b0, std::size_t b1) {
    ScopedDefaultFpEnv env;  // the IEEE default: the caller's MXCSR changes no bit
    std::vector<std::uint8_t> codes;
    for (std::size_t b = b0; b < b1; ++b) {
      const std::size_t begin = b * kErrorBlock;
      part[b] = block_error(x.subspan(begin, std::min(kErrorBlock, x.size() - begin)), scale, grid, codes);
    }
  });
  QuantError e;
  ScopedDefaultFpEnv env;  // the IEEE default: the caller's MXCSR changes no bit
  for (const auto& p : part) e.sum_sq_error += p.sum_sq_error, e.sum_sq_signal += p.sum_sq_signal, e.count += p.count;
  return e;
}

std::vector<ChannelCalibration> calibrate(std::span<const float> x, const CalibrationSpec& spec,
                                          const ChannelLayout& layout) {
  return run(x, spec, layout);
}

std::vector<ChannelCalibration> calibrate(std::span<const std::byte> x, const Format& source,
                                          const CalibrationSpec& spec, const ChannelLayout& layout) {
  const std::size_t eb = static_cast<std::size_t>(source.storage_bytes());
  if (!(source == kF32 || source == kBF16 || source == kF16))
    throw std::invalid_argument("calibrate: source must be f32, bf16 or f16, got " + std::string(source.name));
  if (x.size() % eb != 0)
    throw std::invalid_argument("calibrate: " + std::to_string(x.size()) + " bytes is not a whole number of " +
                                std::string(source.name) + " elements");
  const std::size_t n = x.size() / eb;
  if (source == kBF16) {
    std::vector<std::uint16_t> v(n);
    std::memcpy(v.data(), x.data(), x.size());
    return run(std::span<const std::uint16_t>(v), spec, layout);
  }
  std::vector<float> v(n);
  if (source == kF32) {
    std::memcpy(v.data(), x.data(), x.size());
  } else {  // f16 -> fp32 is exact
    ConvertOptions o;
    fp8q::convert(x, kF16, std::as_writable_bytes(std::span<float>(v)), kF32, o, {spec.threads, std::nullopt});
  }
  return run(std::span<const float>(v), spec, layout);
}

}  // namespace fp8q::calib
