// libFuzzer target for HistogramObserver::from_state (the state tensors fp8q's torch operators
// read): any bytes, as 64-bit words, are either refused with std::invalid_argument or give an
// observer that saves back the same words and that merge and observe accept.
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "fp8q/calib/histogram.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using fp8q::calib::HistogramObserver;
  std::vector<std::uint64_t> words(size / 8);
  if (!words.empty()) std::memcpy(words.data(), data, words.size() * 8);
  HistogramObserver h;
  try {
    h = HistogramObserver::from_state(words);
  } catch (const std::invalid_argument&) {
    return 0;
  }
  if (h.to_state() != words) __builtin_trap();  // a state that loads saves back the same words
  HistogramObserver twice = h;
  twice.merge(h);
  const float more[] = {1.0f, -3e38f, 1e-40f, 0.0f};
  twice.observe(more);
  if (twice.count() != 2 * h.count() + 4) __builtin_trap();
  if (!(HistogramObserver::from_state(twice.to_state()) == twice)) __builtin_trap();
  return 0;
}
