// Calibration benchmarks (fp8q/calib): histogram observation of fp32 and bf16 arrays (Student-t,
// and the same through a ReLU) against a read of the same bytes measured in the same run, and
// the time of each calibrator's search over a 2048-bin histogram.
#include <bit>
#include <cstdint>
#include <cstring>
#include <random>
#include <type_traits>
#include <vector>

#include "fp8q/calib/calibrators.hpp"
#include "fp8q/calib/histogram.hpp"
#include "fp8q/numerics/convert.hpp"
#include "registry.hpp"

namespace fp8q::bench {
namespace {

// Student-t (3 degrees of freedom) samples: a heavy-tailed activation, the case calibration
// is for (the histogram's range is set by a few outliers, the bulk sits in the low bins).
const std::vector<float>& t3_data() {
  static const std::vector<float> v = [] {
    std::vector<float> x(kArrayBytes / 4);
    std::mt19937 rng(5);
    std::student_t_distribution<float> t(3.0f);
    for (float& f : x) f = t(rng);
    return x;
  }();
  return v;
}

const std::vector<std::uint16_t>& t3_bf16() {
  static const std::vector<std::uint16_t> v = [] {
    const auto& f = t3_data();
    std::vector<std::uint16_t> x(kArrayBytes / 2);
    for (std::size_t i = 0; i < x.size(); ++i)
      x[i] = static_cast<std::uint16_t>(convert_one(bits_of(f[i % f.size()]), kF32, kBF16, {}).code);
    return x;
  }();
  return v;
}

// The same samples through a ReLU: half of them exact zeros, the common value that would make
// every other increment of a histogram wait for the one before (see calib/src/isa/hist_kernels.hpp).
template <class T>
std::vector<T> relu(const std::vector<T>& x) {
  std::vector<T> r(x);
  for (T& v : r)
    if (std::bit_cast<std::make_signed_t<std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint16_t>>>(v) < 0) v = T{};
  return r;
}
const std::vector<float>& t3_relu() {
  static const std::vector<float> v = relu(t3_data());
  return v;
}
const std::vector<std::uint16_t>& t3_relu_bf16() {
  static const std::vector<std::uint16_t> v = relu(t3_bf16());
  return v;
}

// Read baseline: the same number of bytes read and summed as 64-bit words (integer adds, which
// the compiler vectorizes; a float sum would be serialized by its order). One baseline for the
// fp32 and the bf16 cases: the bytes are what is read. Words of 64 bits because narrower ones
// measure the widening adds, not the memory (docs/performance.md, "Histograms").
void read_case(benchmark::State& state) {
  const std::size_t n = kArrayBytes / 8;
  std::vector<std::uint64_t> in(n);
  for (std::size_t i = 0; i < n; ++i) in[i] = i * 0x9E3779B97F4A7C15ull;
  for (auto _ : state) {
    std::uint64_t s = 0;
    const std::uint64_t* p = in.data();
    for (std::size_t i = 0; i < n; ++i) s += p[i];
    benchmark::DoNotOptimize(s);
  }
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(kArrayBytes));
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n));
}

template <class T>
void observe_case(benchmark::State& state, const std::vector<T>& x) {
  for (auto _ : state) {
    calib::HistogramObserver h;
    if constexpr (std::is_same_v<T, float>) h.observe(x);
    else h.observe_bf16(x);
    benchmark::DoNotOptimize(h.counts().data());
  }
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(x.size() * sizeof(T)));
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(x.size()));
  state.SetLabel(std::string(isa_name(active_isa())));
}

// A 2048-bin histogram of 2^20 Student-t samples (range set by the outliers).
const calib::HistogramObserver& search_histogram() {
  static const calib::HistogramObserver h = [] {
    calib::HistogramObserver o;
    const auto& x = t3_data();
    o.observe(std::span<const float>(x.data(), std::size_t{1} << 20));
    return o;
  }();
  return h;
}

void search_case(benchmark::State& state, calib::Method m, const Format& f) {
  const auto& h = search_histogram();
  calib::CalibratorOptions o;
  o.percentile = 99.99;
  for (auto _ : state) benchmark::DoNotOptimize(calib::calibrate_amax(h, m, f, o));
  // "bytes" = the histogram's counts, so that the report has a figure; the time is the point
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(h.bins() * sizeof(std::uint64_t)));
  state.SetItemsProcessed(state.iterations());
}

}  // namespace

void register_calib() {
  add_case("baseline/read", {}, [](benchmark::State& s) { read_case(s); });
  add_case("calib/histogram_f32/threads:1", {"baseline/read"},
           [](benchmark::State& s) { observe_case(s, t3_data()); });
  add_case("calib/histogram_bf16/threads:1", {"baseline/read"},
           [](benchmark::State& s) { observe_case(s, t3_bf16()); });
  add_case("calib/histogram_f32_relu/threads:1", {"baseline/read"},
           [](benchmark::State& s) { observe_case(s, t3_relu()); });
  add_case("calib/histogram_bf16_relu/threads:1", {"baseline/read"},
           [](benchmark::State& s) { observe_case(s, t3_relu_bf16()); });
  for (const Format* f : {&kE4M3FN, &kE5M2})
    for (calib::Method m : {calib::Method::kMax, calib::Method::kPercentile, calib::Method::kMse, calib::Method::kEntropy})
      add_case("calib/search_2048/" + std::string(calib::method_name(m)) + "/" + std::string(f->name), {},
               [m, f](benchmark::State& s) { search_case(s, m, *f); });
}

}  // namespace fp8q::bench
