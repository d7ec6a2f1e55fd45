// fp8q/quant/recipes/roles.hpp: which FP8 format each tensor of a linear layer gets.
#pragma once

#include <cstdint>

#include "fp8q/numerics/format.hpp"

namespace fp8q {

enum class TensorRole : std::uint8_t {
  kActivation,  // forward input
  kWeight,
  kGradient,    // gradients of the backward pass
};

// Forward tensors take one format, gradients another (Transformer Engine's Format.E4M3 and
// Format.HYBRID; on Trainium2 the E4M3 is the IEEE-style e4m3 with range +/-240).
struct RoleFormats {
  FormatId forward = FormatId::kE4M3FN;
  FormatId gradient = FormatId::kE4M3FN;

  static constexpr RoleFormats e4m3() { return {FormatId::kE4M3FN, FormatId::kE4M3FN}; }
  static constexpr RoleFormats hybrid() { return {FormatId::kE4M3FN, FormatId::kE5M2}; }
  static constexpr RoleFormats trainium2_hybrid() { return {FormatId::kE4M3, FormatId::kE5M2}; }

  constexpr const Format& of(TensorRole role) const {
    return format_of(role == TensorRole::kGradient ? gradient : forward);
  }
};

}  // namespace fp8q
