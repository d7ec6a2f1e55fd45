// fp8q_cast_in_cache: the casts of `fp8q bench --set mxfp8` on inputs that fit in L1 (8192
// elements), in L2 (131072) and in memory (32 Mi): where the rate in cache equals the rate from
// memory the kernel is bound by its instructions, not by memory (docs/performance.md). One
// thread; the best of 5 runs of 2 GiB of traffic each; GB/s = bytes read + written per second.
//   fp8q_cast_in_cache
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <span>
#include <vector>

#include "fp8q/numerics/block_scaled.hpp"
#include "fp8q/numerics/bulk.hpp"
#include "fp8q/quant/scale_rules.hpp"

namespace {

template <class F>
double rate(std::size_t bytes, const F& f) {
  const std::size_t reps = std::max<std::size_t>(1, (std::size_t{2} << 30) / bytes);
  double best = 1e300;
  for (int k = 0; k < 5; ++k) {
    const auto t0 = std::chrono::steady_clock::now();
    for (std::size_t r = 0; r < reps; ++r) f();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return static_cast<double>(bytes * reps) / best / 1e9;
}

}  // namespace

int main() {
  using namespace fp8q;
  const Pow2ScaleTable table = mx_scale_table(kE4M3FN, MxScaleRule::kFloor);
  std::printf("%-10s %-10s %14s %14s %14s %14s\n", "elements", "fits", "bf16->e4m3fn", "f32 scaled", "MX bf16", "MX f32");
  for (const std::size_t n : {std::size_t{8192}, std::size_t{131072}, std::size_t{32} << 20}) {
    std::vector<std::uint16_t> b(n);
    std::vector<float> f(n);
    std::vector<std::uint8_t> out(n), scales(n / 32);
    std::uint32_t s = 1;
    for (std::size_t i = 0; i < n; ++i) {  // bf16 of binades 2^-8 .. 2^-2, fp32 of +/-8.4
      s = s * 1664525u + 1013904223u;
      b[i] = static_cast<std::uint16_t>((s >> 16 & 0x8000) | ((119 + (s >> 8) % 7) << 7) | (s & 0x7F));
      f[i] = static_cast<float>(static_cast<int>(s >> 8) - (1 << 23)) * 1e-6f;
    }
    ConvertOptions scaled;
    scaled.scale = 3.0f;
    const auto bytes16 = std::as_bytes(std::span(b));
    const auto bytes32 = std::as_bytes(std::span(f));
    const double c16 = rate(3 * n, [&] { convert(bytes16, kBF16, std::as_writable_bytes(std::span(out)), kE4M3FN); });
    const double c32 = rate(5 * n, [&] { convert(bytes32, kF32, std::as_writable_bytes(std::span(out)), kE4M3FN, scaled); });
    const double m16 = rate(3 * n, [&] { convert_mx(bytes16, kBF16, n / 1024, 1024, 32, out, scales, kE4M3FN, table); });
    const double m32 = rate(5 * n, [&] { convert_mx(bytes32, kF32, n / 1024, 1024, 32, out, scales, kE4M3FN, table); });
    std::printf("%-10zu %-10s %14.2f %14.2f %14.2f %14.2f\n", n, n <= 8192 ? "L1" : n <= 131072 ? "L2" : "memory", c16, c32,
                m16, m32);
  }
}
