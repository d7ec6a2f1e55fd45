// fp8q/numerics/parallel.hpp: the one way fp8q splits work across threads.
//
// body(begin, end) runs over contiguous chunks of [0, n), one per thread (the calling thread
// takes the first). Chunk edges are multiples of 64 elements; no thread gets fewer than
// 16384 elements (other units, e.g. rows, pass their own ChunkGrain). Results must not depend on the split: callers key everything by the
// global element index. The first exception by element order is rethrown, so errors do not
// depend on the thread count either. If no more threads can be started, the calling thread
// runs the remaining chunks itself.
#pragma once

#include <algorithm>
#include <cstddef>
#include <exception>
#include <system_error>
#include <thread>
#include <vector>

namespace fp8q {

// The split: chunk edges at multiples of `align`, at least `min_per_thread` units each.
struct ChunkGrain {
  std::size_t align = 64;
  std::size_t min_per_thread = 16 * 1024;
};

template <class Body>
void parallel_chunks(std::size_t n, int threads, const Body& body, ChunkGrain grain = {}) {
  const std::size_t align_units = std::max<std::size_t>(1, grain.align);
  const std::size_t min_units = std::max<std::size_t>(1, grain.min_per_thread);
  const std::size_t max_useful = std::max<std::size_t>(1, n / min_units);
  const std::size_t t = std::min<std::size_t>(static_cast<std::size_t>(std::max(threads, 1)), max_useful);
  std::size_t per = (n + t - 1) / t;
  per = (per + align_units - 1) / align_units * align_units;
  std::vector<std::exception_ptr> errors(t);
  auto run = [&](std::size_t c) {
    const std::size_t begin = std::min(n, c * per), end = std::min(n, begin + per);
    try {
      body(begin, end);
    } catch (...) {
      errors[c] = std::current_exception();
    }
  };
  std::vector<std::thread> pool;
  std::size_t started = 1;
  try {
    for (; started < t; ++started) pool.emplace_back(run, started);
  } catch (const std::system_error&) {
    // no more threads to be had: the calling thread does the remaining chunks (same bits)
  }
  run(0);
  for (std::size_t c = started; c < t; ++c) run(c);
  for (auto& th : pool) th.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace fp8q
