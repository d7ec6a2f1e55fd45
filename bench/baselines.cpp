// Copy baselines: the cheapest kernels that read and write exactly the bytes a conversion
// reads and writes (4 -> 1, 2 -> 1 and 1 -> 4 bytes per element). A conversion at ratio 1.0
// against its copy baseline runs at the speed of its memory traffic.
#include <cstdint>
#include <cstring>
#include <vector>

#include "registry.hpp"

namespace fp8q::bench {
namespace {

template <class In, class Out>
void copy_case(benchmark::State& state, int threads) {
  const std::size_t n = kArrayBytes / std::max(sizeof(In), sizeof(Out));
  std::vector<In> in(n);
  std::vector<Out> out(n);
  for (std::size_t i = 0; i < n; ++i) in[i] = static_cast<In>(i * 2654435761u);
  for (auto _ : state) {
    parallel_for(n, threads, [&](std::size_t b, std::size_t e) {
      const In* src = in.data();
      Out* dst = out.data();
      for (std::size_t i = b; i < e; ++i) dst[i] = static_cast<Out>(src[i]);  // keep the low bytes
    });
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  const auto per_elem = static_cast<std::int64_t>(sizeof(In) + sizeof(Out));
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(n) * per_elem);
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n));
}

}  // namespace

void register_baselines() {
  for (int t : {1, 2}) {
    const std::string suffix = "/threads:" + std::to_string(t);
    add_case("copy/4B_to_1B" + suffix, {}, [t](benchmark::State& s) { copy_case<std::uint32_t, std::uint8_t>(s, t); });
    add_case("copy/2B_to_1B" + suffix, {}, [t](benchmark::State& s) { copy_case<std::uint16_t, std::uint8_t>(s, t); });
    add_case("copy/1B_to_4B" + suffix, {}, [t](benchmark::State& s) { copy_case<std::uint8_t, std::uint32_t>(s, t); });
  }
}

}  // namespace fp8q::bench
