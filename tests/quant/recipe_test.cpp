// quant/recipes/recipe.hpp: the named recipes hold the casts docs/training.md gives them, their
// JSON round-trips and refuses bad fields by name, validation refuses what no GEMM or delayed
// state can run, and the operand plan says where each backward operand's cast comes from.
#include "fp8q/quant/recipes/recipe.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace fp8q {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(Recipe, NamedRecipesHoldTheDocumentedCasts) {
  const Recipe t = Recipe::named("tensorwise");
  EXPECT_EQ(t.cast(Role::kX).format, FormatId::kE4M3FN);
  EXPECT_EQ(t.cast(Role::kDy).format, FormatId::kE5M2);
  EXPECT_EQ(t.cast(Role::kXT), t.cast(Role::kX));
  EXPECT_EQ(t.profile, "trn3");
  EXPECT_FALSE(t.delayed());
  EXPECT_TRUE(Recipe::named("delayed").delayed());
  const Recipe rw = Recipe::named("rowwise");
  EXPECT_EQ(rw.cast(Role::kW).granularity, Granularity::row());
  EXPECT_TRUE(rw.cast(Role::kDyT).power_of_two);
  const Recipe b = Recipe::named("blockwise");
  EXPECT_EQ(b.cast(Role::kX).granularity, Granularity::block(1, 128));
  EXPECT_EQ(b.cast(Role::kDy).granularity, Granularity::block(1, 128));
  for (Role r : {Role::kW, Role::kWT, Role::kXT}) EXPECT_EQ(b.cast(r).granularity, Granularity::block(128, 128));
  EXPECT_EQ(b.cast(Role::kW).scale_op, ScaleOp::kDivide);
  const Recipe m = Recipe::named("mxfp8_trn3");
  EXPECT_EQ(m.model, "trainium3_mx:1x32");
  EXPECT_EQ(m.cast(Role::kDyT).mx_rule, MxScaleRule::kTrainium3);
  EXPECT_EQ(m.cast(Role::kDyT).format, FormatId::kE5M2);
  EXPECT_EQ(Recipe::named("mxfp8_rceil").profile, "ocp");
  EXPECT_EQ(Recipe::named("mxfp8_rceil").cast(Role::kDy).format, FormatId::kE4M3FN);
  EXPECT_EQ(Recipe::named("trn2_fp8").cast(Role::kW).format, FormatId::kE4M3);  // IEEE-style, max 240
  EXPECT_EQ(Recipe::named("trn2_fp8").profile, "trn2");
  EXPECT_EQ(error_of([] { Recipe::named("fp4"); }),
            "no recipe named 'fp4' (one of: tensorwise, delayed, rowwise, blockwise, mxfp8_trn3, mxfp8_rceil, trn2_fp8, "
            "mxfp4_trn3, nvfp4)");
  const Recipe m4 = Recipe::named("mxfp4_trn3");
  for (Role r : kRoles) {
    EXPECT_EQ(m4.cast(r).format, FormatId::kE2M1);
    EXPECT_EQ(m4.cast(r).granularity, Granularity::mx());
    EXPECT_EQ(m4.cast(r).mx_rule, MxScaleRule::kTrainium3);
    const bool gradient = r == Role::kDy || r == Role::kDyT;
    EXPECT_EQ(m4.cast(r).rounding, gradient ? Rounding::kStochastic : Rounding::kNearestEven) << role_name(r);
  }
  EXPECT_EQ(m4.model, "trainium3_mx:1x32");
  const Recipe nv = Recipe::named("nvfp4");
  EXPECT_EQ(nv.profile, "ocp");
  EXPECT_EQ(nv.cast(Role::kW).granularity, Granularity::nvfp4_2d());
  EXPECT_EQ(nv.cast(Role::kWT).granularity, Granularity::nvfp4_2d());
  for (Role r : {Role::kX, Role::kDy, Role::kDyT, Role::kXT}) EXPECT_EQ(nv.cast(r).granularity, Granularity::nvfp4());
  EXPECT_EQ(nv.cast(Role::kDyT).rounding, Rounding::kStochastic);
  EXPECT_EQ(nv.cast(Role::kXT).rounding, Rounding::kNearestEven);
  EXPECT_TRUE(nv.cast(Role::kXT).hadamard && nv.cast(Role::kDyT).hadamard);
  EXPECT_FALSE(nv.cast(Role::kX).hadamard || nv.cast(Role::kDy).hadamard || nv.cast(Role::kW).hadamard);
  // W's 16x16 cast is its own transpose's; the 1 x 16 x_t is cast from x^T
  const TrainingPlan plan = training_plan(nv);
  EXPECT_EQ(plan.w_t.source, Source::kSameCast);
  EXPECT_EQ(plan.x_t.source, Source::kCastOfTranspose);
  EXPECT_EQ(plan.dy_t.source, Source::kCastOfTranspose);
  Recipe bad = nv;
  bad.cast(Role::kXT).hadamard = false;
  EXPECT_EQ(error_of([&] { bad.validate(); }),
            "recipe: dy_t and x_t are one GEMM's operands: the Hadamard transform cancels only on both (hadamard true "
            "and false)");
  bad = nv;
  bad.cast(Role::kW).hadamard = true;
  EXPECT_EQ(error_of([&] { bad.validate(); }),
            "recipe: w: the Hadamard transform runs on NVFP4's 1 x 16 blocks, not granularity 'nvfp4_16x16'");
  bad = nv;
  bad.cast(Role::kX).format = FormatId::kE4M3FN;
  EXPECT_EQ(error_of([&] { bad.validate(); }), "recipe: x: granularity 'nvfp4' quantizes to e2m1, not e4m3fn");
  bad = nv;
  bad.cast(Role::kW) = bad.cast(Role::kWT) = Recipe::named("mxfp4_trn3").cast(Role::kW);
  EXPECT_NE(error_of([&] { bad.validate(); }).find("x is nvfp4 and w is mx: a GEMM takes"), std::string::npos)
      << error_of([&] { bad.validate(); });
  const Recipe sr = t.with_stochastic_gradients();
  EXPECT_EQ(sr.cast(Role::kDy).rounding, Rounding::kStochastic);
  EXPECT_EQ(sr.cast(Role::kDyT).rounding, Rounding::kStochastic);
  EXPECT_EQ(sr.cast(Role::kX).rounding, Rounding::kNearestEven);
  EXPECT_TRUE(sr.stochastic() && !t.stochastic());
}

TEST(Recipe, JsonRoundTripsEveryNamedRecipe) {
  for (std::string_view name : kRecipeNames) {
    Recipe r = Recipe::named(name);
    r.validate();
    EXPECT_EQ(Recipe::from_json(r.to_json()), r) << name;
    r = r.with_stochastic_gradients();
    r.seed = 0xFFFFFFFFFFFFFFFFull;
    r.margin = -3;
    EXPECT_EQ(Recipe::from_json(r.to_json()), r) << name;
  }
  const std::string cast =
      R"({"format":"e4m3fn","granularity":"tensor","hadamard":false,"mx_rule":"floor","power_of_two":false,"rounding":"rne",)"
      R"("scale_op":"multiply","scaling":"current"})";
  const std::string grad =
      R"({"format":"e5m2","granularity":"tensor","hadamard":false,"mx_rule":"floor","power_of_two":false,"rounding":"rne",)"
      R"("scale_op":"multiply","scaling":"current"})";
  EXPECT_EQ(Recipe::named("tensorwise").to_json(),
            R"({"amax_compute":"max","dy":)" + grad + R"(,"dy_t":)" + grad +
                R"(,"history_length":1024,"margin":0,"model":null,"name":"tensorwise","profile":"trn3","seed":0,"w":)" +
                cast + R"(,"w_t":)" + cast + R"(,"x":)" + cast + R"(,"x_t":)" + cast + "}");
}

TEST(Recipe, FromJsonNamesTheBadField) {
  const std::string good = Recipe::named("tensorwise").to_json();
  auto with = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    const auto at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return s.replace(at, from.size(), to);
  };
  EXPECT_EQ(error_of([&] { Recipe::from_json("[1]"); }), "recipe: not a JSON object");
  EXPECT_EQ(error_of([&] { Recipe::from_json(with(R"("seed":0)", R"("seed":0,"extra":1)")); }),
            "recipe: unknown field 'extra'");
  EXPECT_EQ(error_of([&] { Recipe::from_json(with(R"("margin":0,)", "")); }), "recipe: field 'margin' is missing");
  EXPECT_EQ(error_of([&] { Recipe::from_json(with(R"("history_length":1024)", R"("history_length":"x")")); }),
            "recipe: field 'history_length' has the wrong type");
  EXPECT_EQ(error_of([&] { Recipe::from_json(with(R"("history_length":1024)", R"("history_length":0)")); }),
            "recipe: history_length 0 is outside [1, 2^24]");
  EXPECT_EQ(error_of([&] { Recipe::from_json(with(R"("amax_compute":"max")", R"("amax_compute":"mean")")); }),
            "recipe: amax_compute 'mean' is not one of max most_recent");
  EXPECT_EQ(error_of([&] { Recipe::from_json(with(R"("dy":{"format":"e5m2")", R"("dy":{"format":"e9m9")")); }),
            "recipe: dy: format 'e9m9' is not one of the format names (e4m3fn e5m2 e4m3 ...)");
  EXPECT_EQ(error_of([&] { Recipe::from_json(with(R"("dy":{"format":"e5m2")", R"("dy":{"format":"bf16")")); }),
            "recipe: dy: format bf16 is not an element format");
  EXPECT_EQ(error_of([&] { Recipe::from_json(with(R"("dy":{"format":"e5m2")", R"("dy":{"extra":0,"format":"e5m2")")); }),
            "recipe: dy: unknown field 'extra'");
  EXPECT_EQ(error_of([&] { Recipe::from_json(with(R"("granularity":"tensor")", R"("granularity":"col")")); }),
            "recipe: dy: granularity 'col' is not one of tensor row block1x128 block128x128 mx nvfp4 nvfp4_16x16");
  EXPECT_EQ(error_of([&] { Recipe::from_json(with(R"("rounding":"rne")", R"("rounding":"rtz")")); }),
            "recipe: dy: rounding 'rtz' is not rne or sr");
  EXPECT_EQ(error_of([&] { Recipe::from_json(with(R"("scaling":"current")", R"("scaling":"lazy")")); }),
            "recipe: dy: scaling 'lazy' is not one of current delayed");
}

TEST(Recipe, ValidateRefusesWhatNoGemmOrStateRuns) {
  Recipe r = Recipe::named("rowwise");
  r.cast(Role::kX).scaling = Scaling::kDelayed;
  EXPECT_EQ(error_of([&] { r.validate(); }), "recipe: x: delayed scaling is per tensor; granularity 'row' is current only");
  r = Recipe::named("delayed");
  r.cast(Role::kWT).power_of_two = true;
  EXPECT_EQ(error_of([&] { r.validate(); }),
            "recipe: w and w_t share one delayed-scaling state: their casts must be equal");
  r = Recipe::named("blockwise");
  r.cast(Role::kWT).granularity = Granularity::tensor();
  EXPECT_EQ(error_of([&] { r.validate(); }),
            "recipe: dy is block1x128 and w_t is tensor: a GEMM takes 1x128 blocks with 128x128 blocks, MX with MX, NVFP4 with NVFP4, "
            "and otherwise tensor or row scaling on either side");
  r = Recipe::named("tensorwise");
  r.cast(Role::kXT).granularity = Granularity::mx();
  EXPECT_NE(error_of([&] { r.validate(); }).find("recipe: dy_t is tensor and x_t is mx"), std::string::npos);
  r = Recipe::named("tensorwise");
  r.margin = 513;
  EXPECT_EQ(error_of([&] { r.validate(); }), "recipe: margin 513 is outside [-512, 512]");
}

TEST(Recipe, PlanSaysWhereEachBackwardCastComesFrom) {
  const auto expect = [](std::string_view name, Source w_t, Source x_t, Source dy_t) {
    const TrainingPlan p = training_plan(Recipe::named(name));
    EXPECT_EQ(p.w_t.source, w_t) << name;
    EXPECT_EQ(p.x_t.source, x_t) << name;
    EXPECT_EQ(p.dy_t.source, dy_t) << name;
    return p;
  };
  expect("tensorwise", Source::kSameCast, Source::kSameCast, Source::kSameCast);
  expect("delayed", Source::kSameCast, Source::kSameCast, Source::kSameCast);
  // per row along the contraction: the transposed role is per column of t
  const TrainingPlan rw = expect("rowwise", Source::kCastOfT, Source::kCastOfT, Source::kCastOfT);
  EXPECT_EQ(rw.w_t.on_t, Granularity::column());
  // 128x128 weights are their own transpose; x_t's 128x128 and dy_t's 1x128 are cast on t
  const TrainingPlan b = expect("blockwise", Source::kSameCast, Source::kCastOfT, Source::kCastOfT);
  EXPECT_EQ(b.x_t.on_t, Granularity::block(128, 128));
  EXPECT_EQ(b.dy_t.on_t, Granularity::block(128, 1));
  // MX blocks run along rows: the transpose itself is cast
  expect("mxfp8_trn3", Source::kCastOfTranspose, Source::kCastOfTranspose, Source::kCastOfTranspose);
  // stochastic rounding draws by position: dy_t of a 1x128 recipe casts dy^T
  const Recipe sr = Recipe::named("blockwise").with_stochastic_gradients();
  EXPECT_EQ(training_plan(sr).dy_t.source, Source::kCastOfTranspose);
  EXPECT_EQ(training_plan_json(training_plan(Recipe::named("rowwise"))),
            R"({"dy_t":{"granularity":"col","source":"cast_of_t"},"w_t":{"granularity":"col","source":"cast_of_t"},)"
            R"("x_t":{"granularity":"col","source":"cast_of_t"}})");
}

TEST(Recipe, RoleNamesRoundTrip) {
  for (Role r : kRoles) EXPECT_EQ(parse_role(role_name(r)), r);
  EXPECT_FALSE(parse_role("wt").has_value());
}

}  // namespace
}  // namespace fp8q
