// fp8q/quant/recipes/recipe.hpp: a training recipe, how each operand of a linear layer's three
// GEMMs is cast and on which device model they run (docs/training.md), and the operand plan that
// follows from it. The one implementation: LibTorch's Float8Linear uses it directly, Python's
// fp8q.training gets the named recipes, the checks and the plan from it through the torch ops.
//
// y = x W^T (x [M, K], W [N, K]) runs three GEMMs, each operand quantized along its contraction:
//   forward          y  = x W^T:  x along K,                 w along K
//   input gradient   dx = dy W:   dy along N,                w_t (W^T [K, N]) along N
//   weight gradient  dW = dy^T x: dy_t (dy^T [N, M]) along M, x_t (x^T [K, M]) along M
// Each role's cast is stated on the operand as the GEMM reads it, [rows, contraction].
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "fp8q/numerics/format.hpp"
#include "fp8q/numerics/policy.hpp"
#include "fp8q/quant/granularity.hpp"
#include "fp8q/quant/recipes/delayed_scaling.hpp"
#include "fp8q/quant/scale_rules.hpp"

namespace fp8q {

// The six operands, in the order of the GEMMs above. Names: x w dy w_t dy_t x_t.
enum class Role : std::uint8_t { kX, kW, kDy, kWT, kDyT, kXT };
inline constexpr std::array<Role, 6> kRoles = {Role::kX, Role::kW, Role::kDy, Role::kWT, Role::kDyT, Role::kXT};
std::string_view role_name(Role r);
std::optional<Role> parse_role(std::string_view name);

// Where a cast's per-tensor scale comes from: this tensor's amax (current), or the amax history
// of earlier steps (delayed: Transformer Engine's DelayedScaling, per tensor only).
// Names: current delayed.
enum class Scaling : std::uint8_t { kCurrent, kDelayed };

// One operand's cast: what fp8q.quantize / quantize_scaled run on it. rounding is kNearestEven
// or kStochastic (keyed per layer, step and role: docs/training.md).
struct Cast {
  FormatId format = FormatId::kE4M3FN;
  Granularity granularity = Granularity::tensor();  // tensor row block1x128 block128x128 mx nvfp4 nvfp4_16x16
  Scaling scaling = Scaling::kCurrent;
  ScaleOp scale_op = ScaleOp::kMultiply;
  bool power_of_two = false;
  MxScaleRule mx_rule = MxScaleRule::kFloor;
  Rounding rounding = Rounding::kNearestEven;
  // The 16-point random Hadamard transform (numerics/hadamard.hpp) along the contraction before
  // the cast (NVFP4 1 x 16 only; both operands of a GEMM or neither), its sign mask keyed per
  // layer and step (docs/training.md).
  bool hadamard = false;

  // std::invalid_argument "recipe: <where>: ..." naming the field.
  void validate(std::string_view where) const;
  // One role's object of Recipe::to_json(); from_json validates it (errors name `where`).
  std::string to_json() const;
  static Cast from_json(std::string_view json, std::string_view where);
  bool operator==(const Cast&) const = default;
};

struct Recipe {
  std::string name;
  std::array<Cast, 6> casts{};  // indexed by Role
  std::string profile = "trn3";  // the device profile (kernels/profile.hpp) whose model runs the GEMMs
  std::string model;             // empty: the profile's own
  int history_length = 1024;     // delayed scaling: Transformer Engine's settings
  AmaxAlgorithm amax_compute = AmaxAlgorithm::kMax;
  int margin = 0;
  std::uint64_t seed = 0;        // keys stochastic rounding

  const Cast& cast(Role r) const { return casts[static_cast<std::size_t>(r)]; }
  Cast& cast(Role r) { return casts[static_cast<std::size_t>(r)]; }
  bool delayed() const;     // any cast delayed: the layer keeps amax histories
  bool stochastic() const;  // any cast rounds stochastically: the step keys it
  // The named recipes (docs/training.md): tensorwise delayed rowwise blockwise mxfp8_trn3
  // mxfp8_rceil trn2_fp8 mxfp4_trn3 nvfp4; std::invalid_argument for any other name.
  static Recipe named(std::string_view name);
  // The same with the gradient casts (dy, dy_t) rounded stochastically.
  Recipe with_stochastic_gradients() const;
  // Every cast valid, delayed casts shared only by equal roles (x / x_t, w / w_t, dy / dy_t share
  // one state), and each GEMM's pair of granularities one the GEMM takes (1x128 with 128x128,
  // MX with MX, NVFP4 with NVFP4, tensor or row on either side otherwise); std::invalid_argument
  // naming the field.
  void validate() const;
  // {"name", "profile", "model" (null when empty), "history_length", "amax_compute", "margin",
  // "seed", and per role {"format", "granularity", "scaling", "scale_op", "power_of_two",
  // "mx_rule", "rounding", "hadamard"}}, keys sorted. from_json refuses unknown, missing or mistyped fields
  // and invalid recipes, naming the field.
  std::string to_json() const;
  static Recipe from_json(std::string_view json);
  bool operator==(const Recipe&) const = default;
};

inline constexpr std::string_view kRecipeNames[] = {"tensorwise",  "delayed",  "rowwise",    "blockwise", "mxfp8_trn3",
                                                    "mxfp8_rceil", "trn2_fp8", "mxfp4_trn3", "nvfp4"};

// The operand plan: where each backward operand's cast comes from, given t (W, x or dy) and the
// forward-side cast of it (w, x, dy).
enum class Source : std::uint8_t {
  kSameCast,         // the forward-side cast itself (equal per-tensor, 128x128 or NVFP4 16x16 casts)
  kCastOfT,          // the role's cast computed on t with the transposed granularity: the same
                     // bits as casting t^T (each block's amax is over the same elements)
  kCastOfTranspose,  // t^T materialised and cast (MX blocks run along rows; SR draws by position)
};
struct OperandPlan {
  Source source = Source::kCastOfTranspose;
  Granularity on_t = Granularity::tensor();  // kCastOfT: the granularity on t
};
// w_t from W, x_t from x (the backward GEMMs' B), dy_t from dy (the weight gradient's A).
struct TrainingPlan {
  OperandPlan w_t, x_t, dy_t;
};
TrainingPlan training_plan(const Recipe& r);
std::string_view source_name(Source s);  // same_cast cast_of_t cast_of_transpose
// {"w_t": {"source": ..., "granularity": ...}, "x_t": ..., "dy_t": ...}
std::string training_plan_json(const TrainingPlan& p);

}  // namespace fp8q
