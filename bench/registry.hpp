// The benchmark cases and the baselines each is measured against. Every performance figure
// fp8q prints is a ratio to a baseline measured in the same run.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

namespace fp8q::bench {

// Arrays of at least 64 MiB: beyond every cache, so conversions are compared with memory
// traffic, not with cache bandwidth.
inline constexpr std::size_t kArrayBytes = std::size_t{64} << 20;

struct CaseInfo {
  std::string name;
  std::vector<std::string> baselines;  // names of other cases, measured in the same run
};

// Registers a Google Benchmark case (real time, ms) and records its baselines.
void add_case(const std::string& name, std::vector<std::string> baselines,
              std::function<void(benchmark::State&)> body);
const std::vector<CaseInfo>& cases();

// Registers every suite (idempotent).
void register_all();
void register_baselines();
void register_convert();
void register_quant();
void register_cast_transpose_floor();
void register_calib();
void register_gemm();
// The OpenBLAS kernel the sgemm/dgemm baselines run ("Haswell", "SkylakeX", ...): the CPU's,
// or the one OPENBLAS_CORETYPE names for this process.
std::string openblas_kernel();
void register_checkpoint();

// Runs body(begin, end) over `threads` contiguous chunks of [0, n), each but the first on a
// fresh thread started for this call, as the library's bulk calls do, so the baselines pay
// the same thread start-up.
void parallel_for(std::size_t n, int threads, const std::function<void(std::size_t, std::size_t)>& body);

}  // namespace fp8q::bench
