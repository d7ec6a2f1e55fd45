#include "fp8q/quant/recipes/recipe.hpp"

#include <nlohmann/json.hpp>

#include <set>
#include <stdexcept>
#include <utility>

namespace fp8q {
namespace {

using Json = nlohmann::json;

[[noreturn]] void fail(const std::string& what) { throw std::invalid_argument("recipe: " + what); }

// Granularities a training cast takes, each on its operand [rows, contraction].
bool cast_granularity(const Granularity& g) {
  return g == Granularity::tensor() || g == Granularity::row() || g == Granularity::block(1, 128) ||
         g == Granularity::block(128, 128) || g == Granularity::mx() || g == Granularity::nvfp4() ||
         g == Granularity::nvfp4_2d();
}

Cast make_cast(FormatId f, Granularity g = Granularity::tensor()) {
  Cast c;
  c.format = f;
  c.granularity = g;
  return c;
}

// x / w forward, dy gradient; the transposed roles as given (default: their own operand's).
Recipe with_roles(std::string name, const Cast& forward, const Cast& gradient, const Cast* w = nullptr,
                  const Cast* w_t = nullptr, const Cast* x_t = nullptr) {
  Recipe r;
  r.name = std::move(name);
  r.cast(Role::kX) = forward;
  r.cast(Role::kW) = w ? *w : forward;
  r.cast(Role::kDy) = gradient;
  r.cast(Role::kWT) = w_t ? *w_t : r.cast(Role::kW);
  r.cast(Role::kDyT) = gradient;
  r.cast(Role::kXT) = x_t ? *x_t : forward;
  return r;
}

std::string_view scaling_name(Scaling s) { return s == Scaling::kDelayed ? "delayed" : "current"; }

Json cast_json(const Cast& c) {
  return Json{{"format", format_of(c.format).name},
              {"granularity", granularity_name(c.granularity)},
              {"scaling", scaling_name(c.scaling)},
              {"scale_op", c.scale_op == ScaleOp::kDivide ? "divide" : "multiply"},
              {"power_of_two", c.power_of_two},
              {"mx_rule", mx_scale_rule_name(c.mx_rule)},
              {"rounding", rounding_name(c.rounding)},
              {"hadamard", c.hadamard}};
}

template <class T>
T field(const Json& j, const char* key, const std::string& where) {
  if (!j.contains(key)) fail(where + "field '" + key + "' is missing");
  try {
    return j.at(key).get<T>();
  } catch (const Json::exception&) {
    fail(where + "field '" + key + "' has the wrong type");
  }
}

void only(const Json& j, const std::set<std::string>& keys, const std::string& where) {
  for (const auto& [k, v] : j.items())
    if (!keys.count(k)) fail(where + "unknown field '" + k + "'");
}

// A name field parsed by `parse`: fail naming the field and the value otherwise.
template <class Parse>
auto named_field(const Json& j, const char* key, const std::string& where, Parse parse, const char* choices) {
  const std::string v = field<std::string>(j, key, where);
  auto p = parse(v);
  if (!p) fail(where + key + " '" + v + "' is not one of " + choices);
  return *p;
}

Cast cast_from_json(const Json& c, const std::string& where) {
  if (!c.is_object()) fail("field '" + where.substr(0, where.size() - 2) + "' is not an object");
  only(c, {"format", "granularity", "scaling", "scale_op", "power_of_two", "mx_rule", "rounding", "hadamard"}, where);
  Cast out;
  out.format = named_field(c, "format", where, parse_format, "the format names (e4m3fn e5m2 e4m3 ...)");
  out.granularity = named_field(c, "granularity", where, parse_granularity, "tensor row block1x128 block128x128 mx");
  out.scaling = named_field(c, "scaling", where, [](std::string_view s) -> std::optional<Scaling> {
    if (s == "current") return Scaling::kCurrent;
    if (s == "delayed") return Scaling::kDelayed;
    return std::nullopt;
  }, "current delayed");
  out.scale_op = named_field(c, "scale_op", where, [](std::string_view s) -> std::optional<ScaleOp> {
    if (s == "multiply") return ScaleOp::kMultiply;
    if (s == "divide") return ScaleOp::kDivide;
    return std::nullopt;
  }, "multiply divide");
  out.power_of_two = field<bool>(c, "power_of_two", where);
  out.mx_rule =
      named_field(c, "mx_rule", where, parse_mx_scale_rule, "floor ceil even rceil trainium3 compressed-tensors");
  out.rounding = named_field(c, "rounding", where, parse_rounding, "rne sr");
  out.hadamard = field<bool>(c, "hadamard", where);
  return out;
}

OperandPlan plan_of(const Cast& a, const Cast& b) {
  if (a == b && (a.granularity == Granularity::tensor() || a.granularity == Granularity::block(128, 128) ||
                 a.granularity == Granularity::nvfp4_2d()))
    return {Source::kSameCast, a.granularity};
  const Granularity on_t = transposed(b.granularity);
  // blocks along one axis (MX, NVFP4 1 x 16) are not quantize's to compute on t, nor is the
  // Hadamard transform along t's columns: cast t^T
  if (b.rounding == Rounding::kStochastic || b.hadamard || on_t == Granularity::mx_column() ||
      on_t == Granularity::nvfp4_column())
    return {};
  return {Source::kCastOfT, on_t};
}

}  // namespace

std::string Cast::to_json() const { return cast_json(*this).dump(); }

Cast Cast::from_json(std::string_view text, std::string_view where) {
  const Json j = Json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) fail(std::string(where) + ": not a JSON object");
  Cast c = cast_from_json(j, std::string(where) + ": ");
  c.validate(where);
  return c;
}

std::string_view role_name(Role r) {
  constexpr std::string_view names[] = {"x", "w", "dy", "w_t", "dy_t", "x_t"};
  return names[static_cast<std::size_t>(r)];
}

std::optional<Role> parse_role(std::string_view name) {
  for (Role r : kRoles)
    if (role_name(r) == name) return r;
  return std::nullopt;
}

void Cast::validate(std::string_view where) const {
  const std::string w(where);
  const Format& f = format_of(format);
  if (f.bits() > 8 || !f.is_signed || !f.has_zero())
    fail(w + ": format " + std::string(format_of(format).name) + " is not an element format");
  if (!cast_granularity(granularity))
    fail(w + ": granularity '" + granularity_name(granularity) +
         "' is not one of tensor row block1x128 block128x128 mx nvfp4 nvfp4_16x16");
  if (hadamard && granularity != Granularity::nvfp4())
    fail(w + ": the Hadamard transform runs on NVFP4's 1 x 16 blocks, not granularity '" + granularity_name(granularity) +
         "'");
  if (granularity.kind == GranularityKind::kNvfp4 && format != FormatId::kE2M1)
    fail(w + ": granularity '" + granularity_name(granularity) + "' quantizes to e2m1, not " +
         std::string(format_of(format).name));
  if (scaling != Scaling::kCurrent && scaling != Scaling::kDelayed) fail(w + ": scaling is not current or delayed");
  if (scaling == Scaling::kDelayed && granularity != Granularity::tensor())
    fail(w + ": delayed scaling is per tensor; granularity '" + granularity_name(granularity) + "' is current only");
  if (rounding != Rounding::kNearestEven && rounding != Rounding::kStochastic)
    fail(w + ": rounding '" + std::string(rounding_name(rounding)) + "' is not rne or sr");
  if (scale_op != ScaleOp::kMultiply && scale_op != ScaleOp::kDivide) fail(w + ": scale_op is not multiply or divide");
}

bool Recipe::delayed() const {
  for (const Cast& c : casts)
    if (c.scaling == Scaling::kDelayed) return true;
  return false;
}

bool Recipe::stochastic() const {
  for (const Cast& c : casts)
    if (c.rounding == Rounding::kStochastic) return true;
  return false;
}

Recipe Recipe::named(std::string_view name) {
  using F = FormatId;
  if (name == "tensorwise") return with_roles("tensorwise", make_cast(F::kE4M3FN), make_cast(F::kE5M2));  // HYBRID formats
  if (name == "delayed") {  // Transformer Engine's DelayedScaling(fp8_format=HYBRID)
    Cast f = make_cast(F::kE4M3FN), g = make_cast(F::kE5M2);
    f.scaling = g.scaling = Scaling::kDelayed;
    return with_roles("delayed", f, g);
  }
  if (name == "rowwise") {  // torchao's rowwise: per row along the contraction, power-of-two scales
    Cast c = make_cast(F::kE4M3FN, Granularity::row());
    c.power_of_two = true;
    return with_roles("rowwise", c, c);
  }
  if (name == "blockwise") {  // DeepSeek-V3: 1x128 activations and gradients, 128x128 weights, divide
    Cast a = make_cast(F::kE4M3FN, Granularity::block(1, 128)), b = make_cast(F::kE4M3FN, Granularity::block(128, 128));
    a.scale_op = b.scale_op = ScaleOp::kDivide;
    return with_roles("blockwise", a, a, &b, &b, &b);
  }
  if (name == "mxfp8_trn3") {  // Trainium3: NKI quantize_mx's rule, nc_matmul_mx over 1x32 tiles
    Cast f = make_cast(F::kE4M3FN, Granularity::mx()), g = make_cast(F::kE5M2, Granularity::mx());
    f.mx_rule = g.mx_rule = MxScaleRule::kTrainium3;
    Recipe r = with_roles("mxfp8_trn3", f, g);
    r.model = "trainium3_mx:1x32";
    return r;
  }
  if (name == "mxfp8_rceil") {  // torchao's / Transformer Engine's MXFP8 on Blackwell
    Cast c = make_cast(F::kE4M3FN, Granularity::mx());
    c.mx_rule = MxScaleRule::kRceil;
    Recipe r = with_roles("mxfp8_rceil", c, c);
    r.profile = "ocp";
    return r;
  }
  if (name == "mxfp4_trn3") {  // Trainium3's MXFP4: e2m1 MX everywhere, the gradients rounded stochastically
    Cast f = make_cast(F::kE2M1, Granularity::mx());
    f.mx_rule = MxScaleRule::kTrainium3;
    Cast g = f;
    g.rounding = Rounding::kStochastic;
    Recipe r = with_roles("mxfp4_trn3", f, g);
    r.model = "trainium3_mx:1x32";
    return r;
  }
  if (name == "nvfp4") {  // Transformer Engine's NVFP4BlockScaling: 1x16 data, 16x16 weights, SR gradients
    Cast d = make_cast(F::kE2M1, Granularity::nvfp4()), w = make_cast(F::kE2M1, Granularity::nvfp4_2d());
    Cast g = d, xt = d;
    g.rounding = Rounding::kStochastic;
    xt.hadamard = true;  // the weight gradient's operands, dy^T and x^T, along the tokens
    Recipe r = with_roles("nvfp4", d, g, &w, &w, &xt);
    r.cast(Role::kDyT).hadamard = true;
    r.profile = "ocp";
    return r;
  }
  if (name == "trn2_fp8") {  // Trainium2: IEEE-style e4m3 (range 240) forward, e5m2 gradients
    Recipe r = with_roles("trn2_fp8", make_cast(F::kE4M3), make_cast(F::kE5M2));
    r.profile = "trn2";
    return r;
  }
  std::string all;
  for (std::string_view n : kRecipeNames) all += (all.empty() ? "" : ", ") + std::string(n);
  throw std::invalid_argument("no recipe named '" + std::string(name) + "' (one of: " + all + ")");
}

Recipe Recipe::with_stochastic_gradients() const {
  Recipe r = *this;
  r.cast(Role::kDy).rounding = r.cast(Role::kDyT).rounding = Rounding::kStochastic;
  return r;
}

void Recipe::validate() const {
  for (Role r : kRoles) cast(r).validate(role_name(r));
  if (amax_compute != AmaxAlgorithm::kMax && amax_compute != AmaxAlgorithm::kMostRecent)
    fail("amax_compute is not max or most_recent");
  if (history_length < 1 || history_length > (1 << 24))
    fail("history_length " + std::to_string(history_length) + " is outside [1, 2^24]");
  if (margin < -kMaxMargin || margin > kMaxMargin)
    fail("margin " + std::to_string(margin) + " is outside [-" + std::to_string(kMaxMargin) + ", " +
         std::to_string(kMaxMargin) + "]");
  const std::pair<Role, Role> shared[] = {{Role::kX, Role::kXT}, {Role::kW, Role::kWT}, {Role::kDy, Role::kDyT}};
  for (const auto& [a, b] : shared) {
    const Cast &ca = cast(a), &cb = cast(b);
    if ((ca.scaling == Scaling::kDelayed || cb.scaling == Scaling::kDelayed) && !(ca == cb))
      fail(std::string(role_name(a)) + " and " + std::string(role_name(b)) +
           " share one delayed-scaling state: their casts must be equal");
  }
  const std::pair<Role, Role> gemms[] = {{Role::kX, Role::kW}, {Role::kDy, Role::kWT}, {Role::kDyT, Role::kXT}};
  for (const auto& [a, b] : gemms) {
    const Granularity &ga = cast(a).granularity, &gb = cast(b).granularity;
    if (cast(a).hadamard != cast(b).hadamard)
      fail(std::string(role_name(a)) + " and " + std::string(role_name(b)) +
           " are one GEMM's operands: the Hadamard transform cancels only on both (hadamard " +
           (cast(a).hadamard ? "true" : "false") + " and " + (cast(b).hadamard ? "true" : "false") + ")");
    if ((ga == Granularity::block(1, 128)) != (gb == Granularity::block(128, 128)) ||
        (ga == Granularity::mx()) != (gb == Granularity::mx()) ||
        (ga.kind == GranularityKind::kNvfp4) != (gb.kind == GranularityKind::kNvfp4))
      fail(std::string(role_name(a)) + " is " + granularity_name(ga) + " and " + std::string(role_name(b)) + " is " +
           granularity_name(gb) +
           ": a GEMM takes 1x128 blocks with 128x128 blocks, MX with MX, NVFP4 with NVFP4, and otherwise tensor or "
           "row scaling on either side");
  }
}

std::string Recipe::to_json() const {
  Json j{{"name", name},
         {"profile", profile},
         {"model", model.empty() ? Json(nullptr) : Json(model)},
         {"history_length", history_length},
         {"amax_compute", amax_algorithm_name(amax_compute)},
         {"margin", margin},
         {"seed", seed}};
  for (Role r : kRoles) j[std::string(role_name(r))] = cast_json(cast(r));
  return j.dump();  // nlohmann's object keeps its keys sorted
}

Recipe Recipe::from_json(std::string_view text) {
  const Json j = Json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) fail("not a JSON object");
  only(j, {"name", "profile", "model", "history_length", "amax_compute", "margin", "seed", "x", "w", "dy", "w_t",
           "dy_t", "x_t"},
       "");
  Recipe r;
  r.name = field<std::string>(j, "name", "");
  r.profile = field<std::string>(j, "profile", "");
  r.model = j.contains("model") && j["model"].is_null() ? "" : field<std::string>(j, "model", "");
  const auto history = field<std::int64_t>(j, "history_length", "");
  if (history < 1 || history > (1 << 24)) fail("history_length " + std::to_string(history) + " is outside [1, 2^24]");
  r.history_length = static_cast<int>(history);
  r.amax_compute = named_field(j, "amax_compute", "", parse_amax_algorithm, "max most_recent");
  const auto margin = field<std::int64_t>(j, "margin", "");
  if (margin < -kMaxMargin || margin > kMaxMargin) fail("margin " + std::to_string(margin) + " is out of range");
  r.margin = static_cast<int>(margin);
  r.seed = field<std::uint64_t>(j, "seed", "");
  for (Role role : kRoles) {
    const std::string name(role_name(role));
    if (!j.contains(name)) fail("field '" + name + "' is missing");
    r.cast(role) = cast_from_json(j[name], name + ": ");
  }
  r.validate();
  return r;
}

TrainingPlan training_plan(const Recipe& r) {
  return {plan_of(r.cast(Role::kW), r.cast(Role::kWT)), plan_of(r.cast(Role::kX), r.cast(Role::kXT)),
          plan_of(r.cast(Role::kDy), r.cast(Role::kDyT))};
}

std::string_view source_name(Source s) {
  switch (s) {
    case Source::kSameCast: return "same_cast";
    case Source::kCastOfT: return "cast_of_t";
    case Source::kCastOfTranspose: return "cast_of_transpose";
  }
  return "?";
}

std::string training_plan_json(const TrainingPlan& p) {
  auto one = [](const OperandPlan& o) {
    return Json{{"source", source_name(o.source)}, {"granularity", granularity_name(o.on_t)}};
  };
  return Json{{"w_t", one(p.w_t)}, {"x_t", one(p.x_t)}, {"dy_t", one(p.dy_t)}}.dump();
}

}  // namespace fp8q
