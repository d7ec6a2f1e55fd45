// Internal: the decoding kernel of isa/widen.hpp written once over an `Ops` type: AVX2 + F16C
// (widen_avx2.cpp, 8 lanes) and NEON (widen_neon.cpp, 4 lanes). Included only inside an
// anonymous namespace, after the headers it includes, so that no inline function compiled with
// one ISA's flags reaches another translation unit.
//
// A step is four vectors of codes: each decoded by the formula of widen.hpp, and if any code of
// the step is special, the whole step taken from the table instead (special codes are rare in
// data: one test a step finds them).
//
// Ops: I (kLanes x int32 bit patterns), F (kLanes x fp32), Count (a shift count), and
//   codes(p)            kLanes codes at p, zero-extended
//   set1(x), set1f(x), count(n), and_, or_, sll(a, Count)
//   mul(a, m)           the bits of fp32(float_of(a) * m)
//   gt(a, b) (signed), eq(a, b)  all-ones lanes where true;  any(m)
//   store_f32(p, v), store_f16(p, v) (exact: every non-special result is an fp16 value)
//   store_bf16(p, a, b) the high halves of a's lanes, then b's (the low halves are 0)
#pragma once

#include <cstddef>
#include <cstdint>

#include "isa/widen.hpp"

template <class Ops, fp8q::detail::WideOut kOut>
void widen_run(const std::uint8_t* in, std::byte* out, std::size_t n, const fp8q::detail::WidenParams& p) {
  using fp8q::detail::WideOut;
  using I = typename Ops::I;
  constexpr std::size_t kLanes = Ops::kLanes, kStep = 4 * kLanes;
  constexpr std::size_t kBytes = kOut == WideOut::kF32 ? 4 : 2;
  const I mag_mask = Ops::set1((1 << p.sign_bit) - 1), max_mag = Ops::set1(static_cast<std::int32_t>(p.max_mag));
  const I special = Ops::set1(p.special_code), sign = Ops::set1(static_cast<std::int32_t>(0x80000000u));
  const auto shift = Ops::count(p.shift), sign_shift = Ops::count(31 - p.sign_bit);
  const auto multiplier = Ops::set1f(p.multiplier);
  std::size_t i = 0;
  for (; i + kStep <= n; i += kStep) {
    I f0, f1, f2, f3, odd = Ops::set1(0);
    // x = fp32(float_of(mag << shift) * multiplier) with the code's sign; odd: a special code
    const auto decode = [&](std::size_t j) {
      const I c = Ops::codes(in + i + j * kLanes), mag = Ops::and_(c, mag_mask);
      odd = Ops::or_(odd, Ops::or_(Ops::gt(mag, max_mag), Ops::eq(c, special)));
      return Ops::or_(Ops::mul(Ops::sll(mag, shift), multiplier), Ops::and_(Ops::sll(c, sign_shift), sign));
    };
    f0 = decode(0), f1 = decode(1), f2 = decode(2), f3 = decode(3);
    std::byte* o = out + i * kBytes;
    if (Ops::any(odd)) {
      fp8q::detail::widen_from_table(in + i, o, kStep, p, kBytes);
      continue;
    }
    if constexpr (kOut == WideOut::kF32) {
      Ops::store_f32(o, f0), Ops::store_f32(o + 4 * kLanes, f1);
      Ops::store_f32(o + 8 * kLanes, f2), Ops::store_f32(o + 12 * kLanes, f3);
    } else if constexpr (kOut == WideOut::kBF16) {
      Ops::store_bf16(o, f0, f1), Ops::store_bf16(o + 4 * kLanes, f2, f3);
    } else {
      Ops::store_f16(o, f0), Ops::store_f16(o + 2 * kLanes, f1);
      Ops::store_f16(o + 4 * kLanes, f2), Ops::store_f16(o + 6 * kLanes, f3);
    }
  }
  fp8q::detail::widen_from_table(in + i, out + i * kBytes, n - i, p, kBytes);
}

template <class Ops>
fp8q::detail::WidenFn widen_run_for(fp8q::detail::WideOut out) {
  using fp8q::detail::WideOut;
  switch (out) {
    case WideOut::kF32: return &widen_run<Ops, WideOut::kF32>;
    case WideOut::kBF16: return &widen_run<Ops, WideOut::kBF16>;
    case WideOut::kF16: return &widen_run<Ops, WideOut::kF16>;
  }
  return nullptr;
}
