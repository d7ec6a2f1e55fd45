// The stop request of stop.hpp: two lock-free atomics, so that a signal handler may set them.
#include "fp8q/checkpoint/stop.hpp"

#include <atomic>

namespace fp8q::checkpoint {
namespace {

std::atomic<bool> g_requested{false};
std::atomic<int> g_signal{0};
static_assert(std::atomic<bool>::is_always_lock_free && std::atomic<int>::is_always_lock_free,
              "a signal handler may only touch lock-free atomics");

}  // namespace

void request_stop(int signal) noexcept {
  g_signal.store(signal, std::memory_order_relaxed);
  g_requested.store(true, std::memory_order_release);
}

bool stop_requested() noexcept { return g_requested.load(std::memory_order_acquire); }

void throw_if_stop_requested() {
  if (stop_requested()) throw Stopped(g_signal.load(std::memory_order_relaxed));
}

void clear_stop() noexcept {
  g_requested.store(false, std::memory_order_release);
  g_signal.store(0, std::memory_order_relaxed);
}

}  // namespace fp8q::checkpoint
