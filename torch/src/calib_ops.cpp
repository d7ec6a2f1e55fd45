// torch/src/calib_ops.cpp: the histogram observer as an int64 state tensor and the four
// calibrators (calib/histogram.hpp, calib/calibrators.hpp).
#include <ATen/ops/empty.h>

#include <cstring>

#include "fp8q/calib/calibrators.hpp"
#include "fp8q/calib/histogram.hpp"
#include "fp8q/numerics/bulk.hpp"
#include "fp8q/torch/ops.hpp"
#include "tensor_args.hpp"

namespace fp8q::torch {

using namespace detail;
using calib::HistogramObserver;

namespace {
at::Tensor state_tensor(const std::vector<std::uint64_t>& w, const at::Tensor* like) {
  const auto opts = (like ? like->options() : at::TensorOptions()).dtype(at::kLong);
  at::Tensor t = at::empty({static_cast<std::int64_t>(w.size())}, opts);
  if (!t.is_meta()) std::memcpy(t.mutable_data_ptr(), w.data(), w.size() * sizeof(std::uint64_t));
  return t;
}

// A histogram's state words: int64, 1-D (dense() first).
void check_state(const at::Tensor& s, const char* arg) {
  check_dtype(s, at::kLong, arg);
  check_dims(s, 1, arg);
}

HistogramObserver observer(const at::Tensor& s, const char* arg) {
  try {
    return HistogramObserver::from_state({static_cast<const std::uint64_t*>(s.const_data_ptr()),
                                          static_cast<std::size_t>(s.numel())});
  } catch (const std::invalid_argument& e) {
    TORCH_CHECK_VALUE(false, arg, ": ", e.what());
  }
}
}  // namespace

at::Tensor histogram_new(std::int64_t bins, std::int64_t tail) {
  return guarded("histogram_new", [&] {
    TORCH_CHECK_VALUE(bins >= 64 && bins <= 65536 && (bins & (bins - 1)) == 0, "bins: ", bins,
                      " is not a power of two in [64, 65536]");
    TORCH_CHECK_VALUE(tail >= 0 && tail <= 65536, "tail: ", tail, " is outside [0, 65536]");
    calib::HistogramOptions o;
    o.bins = static_cast<int>(bins), o.tail = static_cast<int>(tail);
    const HistogramObserver h(o);
    return state_tensor(h.to_state(), nullptr);
  });
}

at::Tensor histogram_observe(const at::Tensor& state_in, const at::Tensor& x_in) {
  return guarded("histogram_observe", [&] {
    const at::Tensor state = dense(state_in, "state"), x = dense(x_in, "x");
    check_state(state, "state");
    check_same_device(x, state, "x", "state");
    const Format& from = source_format(x, "x");
    if (!compute(state)) return at::empty(state.sizes(), state.options());
    HistogramObserver h = observer(state, "state");
    const int t = threads();
    if (from == kBF16) {
      h.observe_bf16({static_cast<const std::uint16_t*>(x.const_data_ptr()), static_cast<std::size_t>(x.numel())}, t);
    } else if (from == kF32) {
      h.observe(f32(x), t);
    } else {  // float16 widens exactly to float32 (Inf stays Inf: not saturated)
      std::vector<float> wide(static_cast<std::size_t>(x.numel()));
      ConvertOptions exact;
      exact.overflow = Overflow::kInfOrNan;
      BulkOptions bulk;
      bulk.threads = t;
      fp8q::convert(bytes(x), kF16, std::as_writable_bytes(std::span(wide)), kF32, exact, bulk);
      h.observe(wide, t);
    }
    return state_tensor(h.to_state(), &state);
  });
}

at::Tensor histogram_merge(const at::Tensor& a_in, const at::Tensor& b_in) {
  return guarded("histogram_merge", [&] {
    const at::Tensor a = dense(a_in, "a"), b = dense(b_in, "b");
    check_state(a, "a");
    check_state(b, "b");
    check_same_device(b, a, "b", "a");
    TORCH_CHECK_VALUE(a.numel() == b.numel(), "b has ", b.numel(), " state words but a has ", a.numel(),
                      ": histograms merge only with the same bins and tail");
    if (!compute(a)) return at::empty(a.sizes(), a.options());
    HistogramObserver h = observer(a, "a");
    h.merge(observer(b, "b"));
    return state_tensor(h.to_state(), &a);
  });
}

at::Tensor calibrate(const at::Tensor& state_in, std::string_view method, std::string_view format, double percentile,
                     std::int64_t margin, double amax_epsilon, bool power_of_two) {
  return guarded("calibrate", [&] {
    const at::Tensor state = dense(state_in, "state");
    check_state(state, "state");
    const auto m = calib::parse_method(method);
    TORCH_CHECK_VALUE(m.has_value(), "method: unknown '", std::string(method),
                      "' (one of: max percentile mse entropy)");
    const Format& target = format_of(parse_format_arg(format, "format"));
    calib::CalibratorOptions o;
    o.percentile = percentile;
    o.scale = amax_scale_options(margin, amax_epsilon, power_of_two);
    at::Tensor out = at::empty({}, state.options().dtype(at::kFloat));
    if (!compute(state)) return out;
    *out.mutable_data_ptr<float>() = calib::calibrate_amax(observer(state, "state"), *m, target, o);
    return out;
  });
}

}  // namespace fp8q::torch
