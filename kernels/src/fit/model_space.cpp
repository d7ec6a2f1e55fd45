// The samples and candidates fit works on (fp8q/kernels/fit.hpp): checks, predictions with
// the scalar references, and the finite grid of models fit searches.
#include <cmath>
#include <stdexcept>
#include <string>
#include <tuple>

#include "fp8q/kernels/fit.hpp"
#include "fp8q/numerics/arith.hpp"
#include "fp8q/numerics/convert.hpp"

namespace fp8q {

bool is_value_of(float v, const Format& f) {
  const ConvertOptions exact{.overflow = Overflow::kInfOrNan};  // Inf stays Inf only where f has it
  return std::isnan(v) ? f.has_nan() : decode_f32(encode_f32(v, f, exact), f) == v;
}

void DotSamples::check() const {
  auto expect = [](const char* field, std::size_t got, std::size_t want) {
    if (got != want)
      throw std::invalid_argument(std::string("samples: ") + field + " has " + std::to_string(got) +
                                  " values, expected " + std::to_string(want));
  };
  if (k == 0) throw std::invalid_argument("samples: K is 0");
  if (diagonal && m != n) throw std::invalid_argument("samples: diagonal samples need M == N");
  expect("a", a.size(), m * k);
  expect("b", bt.size(), n * k);
  expect("d", d.size(), count());
  if (!c.empty()) expect("c", c.size(), count());
  for (auto [values, id, name] : {std::tuple{&a, format_a, "a"}, std::tuple{&bt, format_b, "b"}}) {
    const Format& f = format_of(id);
    if (!is_operand_format(id))
      throw std::invalid_argument(std::string("samples: format_") + name + " " + std::string(f.name) +
                                  " is not an operand format (an element format, f16 or bf16)");
    for (std::size_t i = 0; i < values->size(); ++i) {
      const float v = (*values)[i];
      if (!is_value_of(v, f))
        throw std::invalid_argument(std::string("samples: ") + name + " value " + std::to_string(i) + " (" +
                                    float_text(v) + ") is not a value of " + std::string(f.name));
    }
  }
}

bool is_operand_format(FormatId id) {
  const Format& f = format_of(id);
  return (f.bits() <= 8 && f.specials != Specials::kExponentOnly) || id == FormatId::kF16 || id == FormatId::kBF16;
}

std::string candidate_name(const Candidate& c) {
  return model_name(c.model) + (c.c_role == CRole::kEpilogue ? " (C as epilogue)" : "");
}

std::uint32_t predict(const Candidate& c, const DotSamples& s, std::size_t i) {
  const std::size_t r = s.row(i), col = s.col(i);
  const float cv = s.c.empty() ? 0.0f : s.c[i];
  const bool accumulates = c.c_role == CRole::kAccumulator;
  const DotInput in{.a = std::span(s.a).subspan(r * s.k, s.k),
                    .b = std::span(s.bt).subspan(col * s.k, s.k),
                    .emin_a = format_of(s.format_a).emin(),
                    .emin_b = format_of(s.format_b).emin(),
                    .c = accumulates ? cv : 0.0f};
  const float acc = reference_dot(c.model, in);
  return bits_of(accumulates || s.c.empty() ? acc : add_f32_rne(acc, cv));
}

bool same_result(std::uint32_t expected, std::uint32_t got) {
  auto nan = [](std::uint32_t u) { return (u & 0x7FFFFFFFu) > 0x7F800000u; };
  return expected == got || (nan(expected) && nan(got));
}

std::vector<Candidate> model_space(bool with_c) {
  using M = AccumulationModel;
  std::vector<M> models = {M::fp32_sequential()};
  for (int b : {2, 4, 8, 16, 32, 64, 128}) models.push_back(M::exact_block(b));
  for (int t : {16, 32, 64, 128, 256}) models.push_back(M::systolic(t));
  for (int n : {4, 8, 16, 32, 64})
    for (int promote : {0, 128})
      for (int group : {1, 2, 4})
        for (int result = 10; result <= 23; ++result)
          for (int align = result; align <= result + 3; ++align)
            for (Rounding r : {Rounding::kTowardZero, Rounding::kNearestEven})
              models.push_back(M::fused_widths(n, align, result, r, group, promote));
  std::vector<Candidate> space;
  for (const M& m : models) {
    space.push_back({m, CRole::kAccumulator});
    if (with_c) space.push_back({m, CRole::kEpilogue});
  }
  return space;
}

}  // namespace fp8q
