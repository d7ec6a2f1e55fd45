// fp8q/calib/channels.hpp: per-channel observers along one axis of a row-major tensor.
//
// A tensor of shape (d_0, ..., d_{r-1}) seen along axis a is (outer, channels, inner) with
// outer = d_0 ... d_{a-1}, channels = d_a, inner = d_{a+1} ... d_{r-1}: element
// (o, c, i) sits at index (o * channels + c) * inner + i. Channel c is `outer` runs of `inner`
// contiguous elements. Per-row scales of a 2-D weight [rows, cols] are axis 0 (runs of a whole
// row); per-column scales are axis 1 (runs of one element).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace fp8q::calib {

struct ChannelLayout {
  std::size_t outer = 1, channels = 1, inner = 1;

  std::size_t size() const { return outer * channels * inner; }
  bool operator==(const ChannelLayout&) const = default;

  // std::invalid_argument when axis is out of range (negative counts from the end).
  static ChannelLayout along(std::span<const std::size_t> shape, int axis) {
    const int r = static_cast<int>(shape.size());
    const int a = axis < 0 ? axis + r : axis;
    if (a < 0 || a >= r)
      throw std::invalid_argument("channel axis " + std::to_string(axis) + " is out of range for a tensor of rank " +
                                  std::to_string(r));
    ChannelLayout l;
    for (int d = 0; d < a; ++d) l.outer *= shape[static_cast<std::size_t>(d)];
    l.channels = shape[static_cast<std::size_t>(a)];
    for (int d = a + 1; d < r; ++d) l.inner *= shape[static_cast<std::size_t>(d)];
    return l;
  }
};

// Calls fn(channel, run) for every run of every channel, channel by channel; runs of fewer than
// `batch` elements are gathered into batches first, so an observer sees few, large spans.
template <class T, class Fn>
void for_each_channel_batch(std::span<const T> x, const ChannelLayout& l, Fn&& fn, std::size_t batch = 4096) {
  if (x.size() != l.size())
    throw std::invalid_argument("tensor of " + std::to_string(x.size()) + " elements does not match the channel layout (" +
                                std::to_string(l.outer) + " x " + std::to_string(l.channels) + " x " +
                                std::to_string(l.inner) + ")");
  std::vector<T> buf;
  for (std::size_t c = 0; c < l.channels; ++c) {
    if (l.outer == 1 || l.inner >= batch) {
      for (std::size_t o = 0; o < l.outer; ++o) fn(c, x.subspan((o * l.channels + c) * l.inner, l.inner));
      continue;
    }
    buf.clear();
    for (std::size_t o = 0; o < l.outer; ++o) {
      const T* p = x.data() + (o * l.channels + c) * l.inner;
      buf.insert(buf.end(), p, p + l.inner);
      if (buf.size() >= batch) fn(c, std::span<const T>(buf)), buf.clear();
    }
    if (!buf.empty()) fn(c, std::span<const T>(buf));
  }
}

// One observer per channel. Observer needs observe(span<const float>), observe_bf16(span<const
// uint16_t>) and merge(); the per-channel observer merges exactly when its observer does.
// The layout's `outer` is taken from each observed span (size / (channels * inner), which must
// divide), so batches of any number of rows can be observed and merged.
template <class Observer>
class PerChannel {
 public:
  PerChannel(const ChannelLayout& layout, const Observer& prototype)
      : layout_(layout), channels_(layout.channels, prototype) {}

  void observe(std::span<const float> x) {
    for_each_channel_batch(x, layout_for(x.size()),
                           [&](std::size_t c, std::span<const float> run) { channels_[c].observe(run); });
  }
  void observe_bf16(std::span<const std::uint16_t> x) {
    for_each_channel_batch(x, layout_for(x.size()),
                           [&](std::size_t c, std::span<const std::uint16_t> run) { channels_[c].observe_bf16(run); });
  }
  void merge(const PerChannel& o) {
    if (o.layout_.channels != layout_.channels || o.layout_.inner != layout_.inner)
      throw std::invalid_argument("PerChannel::merge: " + std::to_string(layout_.channels) + " channels x " +
                                  std::to_string(layout_.inner) + " vs " + std::to_string(o.layout_.channels) +
                                  " channels x " + std::to_string(o.layout_.inner));
    for (std::size_t c = 0; c < channels_.size(); ++c) channels_[c].merge(o.channels_[c]);
  }

  const ChannelLayout& layout() const { return layout_; }
  std::size_t size() const { return channels_.size(); }
  const Observer& operator[](std::size_t c) const { return channels_.at(c); }
  bool operator==(const PerChannel& o) const { return channels_ == o.channels_; }

 private:
  ChannelLayout layout_for(std::size_t n) const {
    ChannelLayout l = layout_;
    const std::size_t per = l.channels * l.inner;
    if (per == 0 || n % per != 0)
      throw std::invalid_argument("tensor of " + std::to_string(n) + " elements is not a whole number of rows of " +
                                  std::to_string(l.channels) + " channels x " + std::to_string(l.inner));
    l.outer = n / per;
    return l;
  }

  ChannelLayout layout_;
  std::vector<Observer> channels_;
};

}  // namespace fp8q::calib
