#include "fp8q/quant/amax.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <stdexcept>
#include <string>

#include "fp8q/numerics/parallel.hpp"

namespace fp8q {
namespace {

// |x| as an fp32 bit pattern: a plain loop of and + max that the compiler vectorizes.
inline std::uint32_t abs_bits(float x) { return std::bit_cast<std::uint32_t>(x) & 0x7FFFFFFFu; }
inline std::uint32_t abs_bits(std::uint16_t bf16) { return (std::uint32_t{bf16} << 16) & 0x7FFFFFFFu; }

template <class T>
float amax_of(std::span<const T> x, int threads) {
  if (threads < 1) throw std::invalid_argument("amax: threads must be >= 1, got " + std::to_string(threads));
  std::atomic<std::uint32_t> result{0};
  parallel_chunks(x.size(), threads, [&](std::size_t begin, std::size_t end) {
    std::uint32_t m = 0;
    for (std::size_t i = begin; i < end; ++i) m = std::max(m, abs_bits(x[i]));
    std::uint32_t seen = result.load();
    while (m > seen && !result.compare_exchange_weak(seen, m)) {
    }
  });
  return std::bit_cast<float>(result.load());
}

}  // namespace

float amax(std::span<const float> x, int threads) { return amax_of(x, threads); }
float amax_bf16(std::span<const std::uint16_t> x, int threads) { return amax_of(x, threads); }

}  // namespace fp8q
