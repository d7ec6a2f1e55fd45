// fp8q/quant/recipes/delayed_scaling.hpp: per-tensor delayed scaling (Transformer Engine's
// DelayedScaling), the scale of step t taken from the amax seen in earlier steps.
//
// State: the amax history (length L, most recent first) and the current scale.
// update(amax) at the end of a step:
//   1. history = [amax, history[0], ..., history[L-2]]             (the oldest drops out)
//   2. a = max(history)            (kMax)  or  history[0]  (kMostRecent)
//   3. candidate = scale_from_amax-style fp32(max_finite / a) / 2^margin (power of two if asked),
//      except that an amax of 0, Inf or NaN keeps the previous scale (TE: "where(amax > 0
//      and isfinite(amax), new, old)"), and an infinite quotient becomes FLT_MAX.
// scale() is what the next step multiplies by: q = convert(fp32(x * scale)); scale_inv() =
// fp32(1 / scale) (correctly rounded) is what dequantization multiplies by. A step's cast and
// the amax it passes to update() come from one read of x with convert_with_amax()
// (fp8q/numerics/bulk.hpp).
// The state serializes to a fixed little-endian byte layout (see serialize()), so a training
// checkpoint restores it bit for bit.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "fp8q/numerics/format.hpp"

namespace fp8q {

enum class AmaxAlgorithm : std::uint8_t { kMax, kMostRecent };
std::optional<AmaxAlgorithm> parse_amax_algorithm(std::string_view name);  // max most_recent
std::string_view amax_algorithm_name(AmaxAlgorithm a);

struct DelayedScalingConfig {
  FormatId format = FormatId::kE4M3FN;
  int history_length = 1024;  // 1 <= L <= 2^24
  AmaxAlgorithm algorithm = AmaxAlgorithm::kMax;
  int margin = 0;             // |margin| <= kMaxMargin
  bool power_of_two = false;
};

class DelayedScaling {
 public:
  // Starts with an all-zero history and scale 1. Throws std::invalid_argument on a bad config.
  explicit DelayedScaling(const DelayedScalingConfig& config);
  // Resumes a state: `history` (history_length amaxes, most recent first, none negative) and
  // `scale` (in [2^-127, FLT_MAX], a power of two under power_of_two). Throws naming the field.
  DelayedScaling(const DelayedScalingConfig& config, std::span<const float> history, float scale);

  void update(float amax);  // one step; amax = max |x| of the step's tensor (NaN allowed)

  float scale() const { return scale_; }
  float scale_inv() const;
  std::span<const float> history() const { return history_; }  // most recent first
  const DelayedScalingConfig& config() const { return config_; }

  // Layout (little-endian): "FP8QDS01", u8 format, u8 algorithm, u8 power_of_two, u8 0,
  // i32 margin, u32 L, fp32 scale, L x fp32 history (bit patterns, most recent first).
  std::vector<std::uint8_t> serialize() const;
  // Rebuilds the exact state; throws std::invalid_argument naming the field on bad input.
  static DelayedScaling deserialize(std::span<const std::uint8_t> bytes);

 private:
  DelayedScalingConfig config_;
  std::vector<float> history_;
  float scale_ = 1.0f;
};

}  // namespace fp8q
