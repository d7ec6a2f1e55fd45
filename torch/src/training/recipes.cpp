// The named training recipes and their JSON: the same values and fields as
// python/fp8q/training/recipes.py (tests/python/test_training_libtorch.py compares them).
#include <nlohmann/json.hpp>

#include <array>
#include <set>
#include <stdexcept>
#include <utility>

#include "fp8q/torch/training.hpp"

namespace fp8q::torch {
namespace {

using Json = nlohmann::json;
constexpr std::array kRoles = {"x", "w", "dy", "w_t", "dy_t", "x_t"};
const std::set<std::string> kGranularities = {"tensor", "row", "block1x128", "block128x128", "mx"};

Cast* role(Recipe& r, std::string_view name) {
  Cast* all[] = {&r.x, &r.w, &r.dy, &r.w_t, &r.dy_t, &r.x_t};
  for (std::size_t i = 0; i < kRoles.size(); ++i)
    if (name == kRoles[i]) return all[i];
  return nullptr;
}
const Cast& role(const Recipe& r, std::string_view name) { return *role(const_cast<Recipe&>(r), name); }

// x / w forward, dy gradient; the transposed roles as given (default: their own operand's).
Recipe with_roles(std::string name, const Cast& forward, const Cast& gradient, const Cast* w = nullptr,
                  const Cast* w_t = nullptr, const Cast* x_t = nullptr) {
  Recipe r;
  r.name = std::move(name);
  r.x = forward;
  r.w = w ? *w : forward;
  r.dy = gradient;
  r.w_t = w_t ? *w_t : r.w;
  r.dy_t = gradient;
  r.x_t = x_t ? *x_t : forward;
  return r;
}

Cast cast(std::string format, std::string granularity = "tensor") {
  Cast c;
  c.format = std::move(format);
  c.granularity = std::move(granularity);
  return c;
}

void check_cast(const Cast& c, const std::string& role) {
  auto fail = [&](const std::string& what) { throw std::invalid_argument("recipe: " + role + ": " + what); };
  if (!kGranularities.count(c.granularity)) fail("granularity '" + c.granularity + "' is not one of tensor row block1x128 block128x128 mx");
  if (c.scaling != "current" && c.scaling != "delayed") fail("scaling '" + c.scaling + "' is not current or delayed");
  if (c.scaling == "delayed" && c.granularity != "tensor") fail("delayed scaling is per tensor");
  if (c.rounding != "rne" && c.rounding != "sr") fail("rounding '" + c.rounding + "' is not rne or sr");
  if (c.scale_op != "multiply" && c.scale_op != "divide") fail("scale_op '" + c.scale_op + "' is not multiply or divide");
}

Json cast_json(const Cast& c) {
  return Json{{"format", c.format},   {"granularity", c.granularity}, {"scaling", c.scaling},
              {"scale_op", c.scale_op}, {"power_of_two", c.power_of_two}, {"mx_rule", c.mx_rule},
              {"rounding", c.rounding}};
}

template <class T>
T field(const Json& j, const char* key, const std::string& where) {
  if (!j.contains(key)) throw std::invalid_argument("recipe: " + where + "field '" + key + "' is missing");
  try {
    return j.at(key).get<T>();
  } catch (const Json::exception&) {
    throw std::invalid_argument("recipe: " + where + "field '" + key + "' has the wrong type");
  }
}

void only(const Json& j, const std::set<std::string>& keys, const std::string& where) {
  for (const auto& [k, v] : j.items())
    if (!keys.count(k)) throw std::invalid_argument("recipe: " + where + "unknown field '" + k + "'");
}

}  // namespace

Recipe Recipe::named(std::string_view name) {
  if (name == "tensorwise") return with_roles("tensorwise", cast("e4m3fn"), cast("e5m2"));
  if (name == "delayed") {
    Cast f = cast("e4m3fn"), g = cast("e5m2");
    f.scaling = g.scaling = "delayed";
    return with_roles("delayed", f, g);
  }
  if (name == "rowwise") {
    Cast c = cast("e4m3fn", "row");
    c.power_of_two = true;
    return with_roles("rowwise", c, c);
  }
  if (name == "blockwise") {
    Cast a = cast("e4m3fn", "block1x128"), b = cast("e4m3fn", "block128x128");
    a.scale_op = b.scale_op = "divide";
    return with_roles("blockwise", a, a, &b, &b, &b);
  }
  if (name == "mxfp8_trn3") {
    Cast f = cast("e4m3fn", "mx"), g = cast("e5m2", "mx");
    f.mx_rule = g.mx_rule = "trainium3";
    Recipe r = with_roles("mxfp8_trn3", f, g);
    r.model = "trainium3_mx:1x32";
    return r;
  }
  if (name == "mxfp8_rceil") {
    Cast c = cast("e4m3fn", "mx");
    c.mx_rule = "rceil";
    Recipe r = with_roles("mxfp8_rceil", c, c);
    r.profile = "ocp";
    return r;
  }
  if (name == "trn2_fp8") {
    Recipe r = with_roles("trn2_fp8", cast("e4m3"), cast("e5m2"));
    r.profile = "trn2";
    return r;
  }
  throw std::invalid_argument("no recipe named '" + std::string(name) +
                              "' (one of: tensorwise delayed rowwise blockwise mxfp8_trn3 mxfp8_rceil trn2_fp8)");
}

bool Recipe::delayed() const {
  for (const char* r : kRoles)
    if (role(*this, r).scaling == "delayed") return true;
  return false;
}

void Recipe::validate() const {
  for (const char* r : kRoles) check_cast(role(*this, r), r);
  if (amax_compute != "max" && amax_compute != "most_recent")
    throw std::invalid_argument("recipe: amax_compute '" + amax_compute + "' is not max or most_recent");
  if (history_length < 1 || history_length > (std::int64_t{1} << 24))
    throw std::invalid_argument("recipe: history_length " + std::to_string(history_length) + " is outside [1, 2^24]");
  const std::pair<const char*, const char*> shared[] = {{"x", "x_t"}, {"w", "w_t"}, {"dy", "dy_t"}};
  for (const auto& [a, b] : shared) {
    const Cast &ca = role(*this, a), &cb = role(*this, b);
    if ((ca.scaling == "delayed" || cb.scaling == "delayed") && !(ca == cb))
      throw std::invalid_argument(std::string("recipe: ") + a + " and " + b +
                                  " share one delayed-scaling state: their casts must be equal");
  }
  const std::pair<const char*, const char*> gemms[] = {{"x", "w"}, {"dy", "w_t"}, {"dy_t", "x_t"}};
  for (const auto& [a, b] : gemms) {
    const std::string &ga = role(*this, a).granularity, &gb = role(*this, b).granularity;
    if ((ga == "block1x128") != (gb == "block128x128") || (ga == "mx") != (gb == "mx"))
      throw std::invalid_argument(std::string("recipe: ") + a + " is " + ga + " and " + b + " is " + gb +
                                  ": a GEMM takes 1x128 blocks with 128x128 blocks, MX with MX, and otherwise "
                                  "tensor or row scaling on either side");
  }
}

std::string Recipe::to_json() const {
  Json j{{"name", name},
         {"profile", profile},
         {"model", model.empty() ? Json(nullptr) : Json(model)},
         {"history_length", history_length},
         {"amax_compute", amax_compute},
         {"margin", margin},
         {"seed", seed}};
  for (const char* r : kRoles) j[r] = cast_json(role(*this, r));
  return j.dump();  // nlohmann's object keeps its keys sorted
}

Recipe Recipe::from_json(std::string_view text) {
  const Json j = Json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw std::invalid_argument("recipe: not a JSON object");
  only(j, {"name", "profile", "model", "history_length", "amax_compute", "margin", "seed", "x", "w", "dy", "w_t",
           "dy_t", "x_t"},
       "");
  Recipe r;
  r.name = field<std::string>(j, "name", "");
  r.profile = field<std::string>(j, "profile", "");
  r.model = j.contains("model") && j["model"].is_null() ? "" : field<std::string>(j, "model", "");
  r.history_length = field<std::int64_t>(j, "history_length", "");
  r.amax_compute = field<std::string>(j, "amax_compute", "");
  r.margin = field<std::int64_t>(j, "margin", "");
  r.seed = field<std::uint64_t>(j, "seed", "");
  for (const char* name : kRoles) {
    const std::string where = std::string(name) + ": ";
    const Json c = field<Json>(j, name, "");
    if (!c.is_object()) throw std::invalid_argument("recipe: field '" + std::string(name) + "' is not an object");
    only(c, {"format", "granularity", "scaling", "scale_op", "power_of_two", "mx_rule", "rounding"}, where);
    Cast& out = *role(r, name);
    out.format = field<std::string>(c, "format", where);
    out.granularity = field<std::string>(c, "granularity", where);
    out.scaling = field<std::string>(c, "scaling", where);
    out.scale_op = field<std::string>(c, "scale_op", where);
    out.power_of_two = field<bool>(c, "power_of_two", where);
    out.mx_rule = field<std::string>(c, "mx_rule", where);
    out.rounding = field<std::string>(c, "rounding", where);
  }
  r.validate();
  return r;
}

}  // namespace fp8q::torch
