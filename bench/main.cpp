// fp8q_bench: the Google Benchmark program over every suite (console or JSON output, all of
// Google Benchmark's flags). `fp8q bench` runs the same cases and prints ratios.
#include <benchmark/benchmark.h>

#include "registry.hpp"

int main(int argc, char** argv) {
  fp8q::bench::register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
