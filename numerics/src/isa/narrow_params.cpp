// The constants of the narrowing kernels, taken from the format descriptor.
#include "isa/narrow.hpp"

#include <algorithm>
#include <cstring>

namespace fp8q::detail {

bool narrow_supported(const Format& from, const Format& to) {
  const bool source_ok = from == kF32 || from == kBF16 || from == kF16;
  // e8m0 (no zero, unsigned) keeps to the scalar path: it holds scales, not tensors.
  return source_ok && to.bits() <= 8 && to.has_zero() && to.is_signed;
}

NarrowParams make_narrow_params(const Format& from, const Format& to, const ConvertOptions& o) {
  NarrowParams p;
  p.from = &from;
  p.to = &to;
  p.options = &o;
  p.scale = o.scale.value_or(1.0f);
  p.divide = o.scale_op == ScaleOp::kDivide;
  p.man_bits = to.man_bits;
  p.emin = to.emin();
  p.max_code = static_cast<std::int32_t>(to.max_finite_code());
  const auto max_value = static_cast<float>(to.max_finite());
  std::memcpy(&p.max_bits, &max_value, 4);
  p.has_nan = to.has_nan();
  p.nan_code = static_cast<std::int32_t>(to.canonical_nan());
  p.inf_or_nan = static_cast<std::int32_t>(to.has_inf() ? to.inf_code() : to.canonical_nan());
  p.sign_shift = to.exp_bits + to.man_bits;
  p.inf_result = o.overflow == Overflow::kInfOrNan && to.has_nan();
  p.negative_zero = to.has_negative_zero();
  return p;
}

void fill_bf16_codes(MxParams& m) {
  for (std::uint32_t e = 0; e < 256; ++e) {
    // f << 16 >= threshold  <=>  f >= ceil(threshold / 2^16); a threshold of 2^23 never steps
    const std::uint32_t t = m.table->threshold[e];
    m.bf16_base[e] = e == 255 ? 0xFF : e == 0 ? 0 : m.table->base[e];
    m.bf16_step[e] = static_cast<std::uint8_t>(e == 0 || e == 255 ? 128 : std::min<std::uint32_t>((t + 0xFFFF) >> 16, 128));
  }
  // the longest run of binades around e = 127 where base[e] - e and the step are constant and
  // every code is a finite scale (<= 254: the kernel sends the affine codes to the element
  // kernels without looking for the NaN scale 0xFF)
  const int c = m.bf16_base[127] - 127, step = m.bf16_step[127];
  auto affine = [&](int e) {
    return m.bf16_base[e] - e == c && m.bf16_step[e] == step && m.bf16_base[e] + (step < 128 ? 1 : 0) <= 254;
  };
  int lo = 127, hi = 127;
  if (!affine(127)) {  // no affine run at all: an empty range
    m.affine_lo = 1;
    m.affine_hi = 0;
    return;
  }
  while (lo > 1 && affine(lo - 1)) --lo;
  while (hi < 254 && affine(hi + 1)) ++hi;
  m.affine_lo = static_cast<std::int16_t>(lo);
  m.affine_hi = static_cast<std::int16_t>(hi);
  m.affine_c = static_cast<std::int16_t>(c);
  m.affine_step = static_cast<std::int16_t>(step);
}

}  // namespace fp8q::detail
