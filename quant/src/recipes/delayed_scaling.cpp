#include "fp8q/quant/recipes/delayed_scaling.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

#include "fp8q/numerics/arith.hpp"
#include "fp8q/numerics/convert.hpp"
#include "fp8q/quant/scale_rules.hpp"

namespace fp8q {

std::optional<AmaxAlgorithm> parse_amax_algorithm(std::string_view name) {
  if (name == "max") return AmaxAlgorithm::kMax;
  if (name == "most_recent") return AmaxAlgorithm::kMostRecent;
  return std::nullopt;
}

std::string_view amax_algorithm_name(AmaxAlgorithm a) { return a == AmaxAlgorithm::kMostRecent ? "most_recent" : "max"; }

namespace {

std::string hex32(std::uint32_t v) {
  char b[9];
  std::snprintf(b, sizeof b, "%08X", v);
  return b;
}

constexpr char kMagic[8] = {'F', 'P', '8', 'Q', 'D', 'S', '0', '1'};
constexpr std::size_t kHeader = 8 + 4 + 4 + 4 + 4;  // magic, 4 u8, margin, L, scale

// The longest history a state may hold (what deserialize() accepts: 64 MiB of history).
constexpr std::uint32_t kMaxHistory = 1u << 24;

void check(const DelayedScalingConfig& c) {
  if (c.history_length < 1 || static_cast<std::uint32_t>(c.history_length) > kMaxHistory)
    throw std::invalid_argument("delayed scaling: history_length must be in [1, " + std::to_string(kMaxHistory) +
                                "], got " + std::to_string(c.history_length));
  if (c.margin < -kMaxMargin || c.margin > kMaxMargin)
    throw std::invalid_argument("delayed scaling: margin must be in [-" + std::to_string(kMaxMargin) + ", " +
                                std::to_string(kMaxMargin) + "], got " + std::to_string(c.margin));
  const Format& f = format_of(c.format);
  if (f.bits() > 8 || !f.is_signed || f.specials == Specials::kExponentOnly)
    throw std::invalid_argument("delayed scaling: format must be a signed 8-bit-or-narrower element format, got " +
                                std::string(f.name));
}

void put_u32(std::vector<std::uint8_t>& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}
std::uint32_t get_u32(std::span<const std::uint8_t> b, std::size_t at) {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= std::uint32_t{b[at + i]} << (8 * i);
  return v;
}

}  // namespace

DelayedScaling::DelayedScaling(const DelayedScalingConfig& config) : config_(config) {
  check(config_);
  history_.assign(static_cast<std::size_t>(config_.history_length), 0.0f);
}

DelayedScaling::DelayedScaling(const DelayedScalingConfig& config, std::span<const float> history, float scale)
    : DelayedScaling(config) {
  auto fail = [](const std::string& what) { throw std::invalid_argument("delayed scaling state: " + what); };
  if (history.size() != history_.size())
    fail("history holds " + std::to_string(history.size()) + " amaxes, history_length is " +
         std::to_string(history_.size()));
  const std::uint32_t scale_bits = bits_of(scale);
  // what update() can produce: [2^-127, FLT_MAX] (a smaller scale has an infinite scale_inv),
  // and a power of two under power_of_two (the initial 1 or one kept across a bad amax)
  if (scale_bits < 0x00400000u || scale_bits >= 0x7F800000u)
    fail("scale must be in [2^-127, FLT_MAX], got bits 0x" + hex32(scale_bits));
  if (config_.power_of_two && (scale_bits & 0x7FFFFFu) != 0 && scale_bits != 0x00400000u)
    fail("scale must be a power of two under power_of_two, got bits 0x" + hex32(scale_bits));
  for (std::size_t i = 0; i < history.size(); ++i)
    if (bits_of(history[i]) >> 31) fail("history[" + std::to_string(i) + "] is negative");
  scale_ = scale;
  std::copy(history.begin(), history.end(), history_.begin());
}

void DelayedScaling::update(float amax) {
  // 1. roll the history: the newest first, the oldest out
  std::rotate(history_.rbegin(), history_.rbegin() + 1, history_.rend());
  history_[0] = float_of(bits_of(amax) & 0x7FFFFFFFu);
  // 2. the amax the scale is computed from (bit patterns order non-negative floats; NaN
  //    patterns sort above Inf, so a NaN in the window makes `max` NaN, as in PyTorch)
  std::uint32_t a = bits_of(history_[0]);
  if (config_.algorithm == AmaxAlgorithm::kMax)
    for (float h : history_) a = std::max(a, bits_of(h));
  // 3. a new scale, except that 0, Inf or NaN keeps the previous one
  if (a == 0 || a >= 0x7F800000u) return;
  scale_ = scale_from_amax(float_of(a), format_of(config_.format),
                           {.margin = config_.margin, .amax_epsilon = 0.0f, .power_of_two = config_.power_of_two});
}

float DelayedScaling::scale_inv() const { return divide_rne(1.0f, scale_); }

std::vector<std::uint8_t> DelayedScaling::serialize() const {
  std::vector<std::uint8_t> out(kMagic, kMagic + 8);
  out.push_back(static_cast<std::uint8_t>(config_.format));
  out.push_back(static_cast<std::uint8_t>(config_.algorithm));
  out.push_back(config_.power_of_two ? 1 : 0);
  out.push_back(0);
  put_u32(out, static_cast<std::uint32_t>(config_.margin));
  put_u32(out, static_cast<std::uint32_t>(history_.size()));
  put_u32(out, bits_of(scale_));
  for (float h : history_) put_u32(out, bits_of(h));
  return out;
}

DelayedScaling DelayedScaling::deserialize(std::span<const std::uint8_t> b) {
  auto fail = [](const std::string& what) { throw std::invalid_argument("delayed scaling state: " + what); };
  if (b.size() < kHeader) fail("truncated header (" + std::to_string(b.size()) + " bytes)");
  if (std::memcmp(b.data(), kMagic, 8) != 0) fail("bad magic (not an fp8q delayed-scaling state, version 01)");
  DelayedScalingConfig c;
  if (b[8] >= kAllFormats.size()) fail("format id " + std::to_string(b[8]) + " unknown");
  c.format = static_cast<FormatId>(b[8]);
  if (b[9] > 1) fail("algorithm " + std::to_string(b[9]) + " unknown");
  c.algorithm = static_cast<AmaxAlgorithm>(b[9]);
  if (b[10] > 1 || b[11] != 0) fail("flags byte " + std::to_string(b[10]) + "/" + std::to_string(b[11]) + " invalid");
  c.power_of_two = b[10] == 1;
  c.margin = static_cast<std::int32_t>(get_u32(b, 12));
  const std::uint32_t length = get_u32(b, 16);
  if (length == 0 || length > kMaxHistory) fail("history length " + std::to_string(length) + " out of range");
  c.history_length = static_cast<int>(length);
  if (b.size() != kHeader + 4 * std::size_t{length})
    fail("size " + std::to_string(b.size()) + " bytes, expected " + std::to_string(kHeader + 4 * std::size_t{length}));
  std::vector<float> history(length);
  for (std::uint32_t i = 0; i < length; ++i) history[i] = float_of(get_u32(b, kHeader + 4 * std::size_t{i}));
  return DelayedScaling(c, history, float_of(get_u32(b, 20)));  // checks the format, scale and history
}

}  // namespace fp8q
