// Runs the registered cases and returns what each measured, for `fp8q bench`.
#pragma once

#include <string>
#include <vector>

namespace fp8q::bench {

struct Measurement {
  std::string name;
  double bytes_per_second = 0;  // bytes read + written
  double items_per_second = 0;  // elements
  double real_time_ms = 0;      // per iteration
  std::string label;            // what the case ran, where it says (the kernel: gemm_path, the ISA)
};

// Runs every case whose name matches `filter` (a regular expression), plus the baselines
// those cases name; with repetitions > 1 each figure is the median of the repetitions.
std::vector<Measurement> run_cases(const std::string& filter, double min_time_s, int repetitions);

}  // namespace fp8q::bench
