// fp8q_convert_timer: the C++ side of bench/python/bench_convert.py. Times the library call
// fp8q::convert(bf16 -> e4m3fn, nearest-even, saturating) on BYTES of bf16 input with THREADS
// threads and prints one line: the median wall-clock seconds of REPS calls.
//   fp8q_convert_timer BYTES THREADS REPS
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "fp8q/numerics/bulk.hpp"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: fp8q_convert_timer BYTES THREADS REPS\n");
    return 2;
  }
  const std::size_t n = std::strtoull(argv[1], nullptr, 10) / 2;
  const int threads = std::atoi(argv[2]), reps = std::atoi(argv[3]);
  if (n == 0 || threads < 1 || reps < 1) {
    std::fprintf(stderr, "fp8q_convert_timer: BYTES >= 2, THREADS >= 1, REPS >= 1\n");
    return 2;
  }
  // the same distribution as the Python side: N(0, 1) * 64, rounded to bf16
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 64.0f);
  std::vector<std::uint16_t> x(n);
  for (auto& v : x) {
    const float f = normal(rng);
    std::uint32_t b;
    std::memcpy(&b, &f, 4);
    v = static_cast<std::uint16_t>((b + 0x7FFF + ((b >> 16) & 1)) >> 16);
  }
  std::vector<std::byte> out(n);
  fp8q::BulkOptions bulk;
  bulk.threads = threads;
  std::vector<double> t(static_cast<std::size_t>(reps));
  fp8q::convert(std::as_bytes(std::span(x)), fp8q::kBF16, out, fp8q::kE4M3FN, {}, bulk);  // warm
  for (double& s : t) {
    const auto t0 = std::chrono::steady_clock::now();
    fp8q::convert(std::as_bytes(std::span(x)), fp8q::kBF16, out, fp8q::kE4M3FN, {}, bulk);
    s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  std::nth_element(t.begin(), t.begin() + reps / 2, t.end());
  std::printf("%.9e\n", t[static_cast<std::size_t>(reps / 2)]);
  return 0;
}
