#include "registry.hpp"

#include <algorithm>
#include <thread>

namespace fp8q::bench {

namespace {
std::vector<CaseInfo>& mutable_cases() {
  static std::vector<CaseInfo> all;
  return all;
}
}  // namespace

void add_case(const std::string& name, std::vector<std::string> baselines,
              std::function<void(benchmark::State&)> body) {
  benchmark::RegisterBenchmark(name.c_str(), [body](benchmark::State& s) { body(s); })
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  mutable_cases().push_back({name, std::move(baselines)});
}

const std::vector<CaseInfo>& cases() { return mutable_cases(); }

void register_all() {
  static const bool once = [] {
    register_baselines();
    register_convert();
    register_quant();
    register_cast_transpose_floor();
    register_calib();
    register_gemm();
    register_checkpoint();
    return true;
  }();
  (void)once;
}

void parallel_for(std::size_t n, int threads, const std::function<void(std::size_t, std::size_t)>& body) {
  const auto t = static_cast<std::size_t>(std::max(threads, 1));
  const std::size_t per = (n + t - 1) / t / 64 * 64 + 64;
  std::vector<std::thread> pool;
  for (std::size_t c = 1; c < t; ++c)
    pool.emplace_back([&, c] { body(std::min(n, c * per), std::min(n, (c + 1) * per)); });
  body(0, std::min(n, per));
  for (auto& th : pool) th.join();
}

}  // namespace fp8q::bench
