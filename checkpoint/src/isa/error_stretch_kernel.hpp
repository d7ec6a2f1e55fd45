// Internal: the vector kernels of measure_error() (error_kernels.hpp), written once over xsimd
// for any architecture A whose float batch holds twice the lanes of its double batch (AVX2:
// 8 and 4; NEON: 4 and 2). What xsimd 8.1 lacks comes from X, one small struct per ISA file
// (error_stretch_avx2.cpp, error_stretch_neon.cpp):
//   Fb X::load_bf16(p), X::load_f16(p)   Fb::size elements of the original, widened exactly
//   Ib X::load_codes(p)                  Fb::size codes as int32
//   Fb X::gather(table, Ib)              table[code] per lane
//   Db X::widen_lo(Fb), X::widen_hi(Fb)  the low / high half of the lanes as double (exact)
//   int X::count(batch_bool<double>)     lanes that hold true
//
// Why they give the specification's bits:
//   - the four partial sums sig_0..3 (and err_0..3) are the four lanes of one quad (4 / Db::size
//     double batches), so element 4j + k is added into lane k in increasing j; a step of 8
//     elements adds its first 4 (group 2j) and then its last 4 (group 2j + 1);
//   - a skipped element (x or x^ NaN / Inf) adds +0.0, which leaves a sum of squares (never
//     -0.0) unchanged, and takes part in neither a count nor the maximum;
//   - x^ = fp32(decoded[q] * s) is one fp32 product, the widening to double is exact, and every
//     double operation is the single rounded operation the specification writes (the module is
//     compiled with -ffp-contract=off; no FMA is used);
//   - the maximum of non-negative, non-NaN values does not depend on the order;
//   - the last n mod 8 elements run through the specification's own steps (add_elements).
#pragma once

#include <xsimd/xsimd.hpp>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>

#include "pipeline/error_kernels.hpp"

namespace fp8q::checkpoint::detail {

template <class A, class X>
struct ErrorStretchKernel {
  using Fb = xsimd::batch<float, A>;
  using Db = xsimd::batch<double, A>;
  using Ib = xsimd::batch<std::int32_t, A>;
  using Dm = xsimd::batch_bool<double, A>;
  static constexpr std::size_t kF = 8 / Fb::size;  // float batches in a step of 8 elements
  static constexpr std::size_t kD = 4 / Db::size;  // double batches in a quad of 4 elements
  static_assert(Fb::size == 2 * Db::size && kF * Fb::size == 8 && kD * Db::size == 4, "4 or 8 float lanes");

  struct Quad {
    Db p[kD];
  };

  // Elements 4q..4q+3 of a step held in f[kF], as doubles.
  static Quad quad(const Fb (&f)[kF], std::size_t q) {
    Quad r;
    for (std::size_t j = 0; j < kD; ++j) {
      const std::size_t e = 4 * q + j * Db::size;
      const Fb& v = f[e / Fb::size];
      r.p[j] = (e % Fb::size) == 0 ? X::widen_lo(v) : X::widen_hi(v);
    }
    return r;
  }

  template <DType D>
  static Fb load(const std::byte* x, std::size_t i) {
    if constexpr (D == DType::kF32) {
      return Fb::load_unaligned(reinterpret_cast<const float*>(x) + i);
    } else if constexpr (D == DType::kBF16) {
      return X::load_bf16(x + 2 * i);
    } else {
      return X::load_f16(x + 2 * i);
    }
  }

  // The partial sums (quads) and maximum of a stretch's vector steps into p.
  static void store(const Quad& sig, const Quad& err, Partials& p) {
    for (std::size_t j = 0; j < kD; ++j) {
      sig.p[j].store_unaligned(p.sig + j * Db::size);
      err.p[j].store_unaligned(p.err + j * Db::size);
    }
  }
  static double hmax(const Quad& m) {
    alignas(64) double lanes[4];
    for (std::size_t j = 0; j < kD; ++j) m.p[j].store_aligned(lanes + j * Db::size);
    return std::max(std::max(lanes[0], lanes[1]), std::max(lanes[2], lanes[3]));
  }

  // The masked kernel: any stretch, including NaN / Inf and saturated elements.
  template <DType D, bool kPerElement>
  static void masked(const Stretch& s, ErrorStats& st) {
    const Db flt_max(static_cast<double>(FLT_MAX)), zero(0.0), clip(s.clip);
    const Db threshold(s.clip * static_cast<double>(s.scale));
    Quad sig, err, mx;
    for (std::size_t j = 0; j < kD; ++j) sig.p[j] = err.p[j] = mx.p[j] = zero;
    Partials p;
    std::size_t i = 0;
    for (; i + 8 <= s.n; i += 8) {
      Fb xv[kF], xh[kF], sc[kF];
      for (std::size_t k = 0; k < kF; ++k) {
        const std::size_t at = i + k * Fb::size;
        xv[k] = load<D>(s.x, at);
        sc[k] = kPerElement ? Fb::load_unaligned(s.scales + at) : Fb(s.scale);
        xh[k] = X::gather(s.decoded, X::load_codes(s.codes + at)) * sc[k];
      }
      for (std::size_t q = 0; q < 2; ++q) {
        const Quad x = quad(xv, q), h = quad(xh, q);
        Quad t;
        if constexpr (kPerElement) t = quad(sc, q);
        for (std::size_t j = 0; j < kD; ++j) {
          const Db ax = xsimd::abs(x.p[j]), e = x.p[j] - h.p[j];
          const Dm keep = (ax <= flt_max) & (xsimd::abs(h.p[j]) <= flt_max);
          p.counted += static_cast<std::uint64_t>(X::count(keep));
          sig.p[j] = sig.p[j] + xsimd::select(keep, x.p[j] * x.p[j], zero);
          err.p[j] = err.p[j] + xsimd::select(keep, e * e, zero);
          mx.p[j] = xsimd::max(mx.p[j], xsimd::select(keep, xsimd::abs(e), zero));
          const Db thr = kPerElement ? clip * t.p[j] : threshold;
          p.saturated += static_cast<std::uint64_t>(X::count(keep & (ax > thr)));
        }
      }
    }
    store(sig, err, p);
    p.max_err = std::max(st.max_abs_error, hmax(mx));
    p.nonfinite = i - p.counted;
    if (i < s.n) add_elements(s, i, p);
    close_stretch(p, st);
  }

  // The fast kernel, for the stretches of real weights: every x and x^ finite, no code NaN or
  // Inf, nothing saturated (in the vector steps). It measures on the assumption that this
  // holds, without masks, counts or a table, and checks it once at the end:
  //   - a NaN / Inf x or x^ makes some x * x or e * e NaN or +Inf, and a partial sum that has
  //     taken one in stays NaN or +Inf (only non-negative values are ever added); while x and
  //     x^ are finite fp32 values, no square (< 2^257) and no sum of them can overflow a double;
  //   - codes whose table value is NaN / Inf (magnitude >= special_from) are seen by one
  //     compare, since the arithmetic decode would give them a finite value;
  //   - saturated elements: with one multiplier, max |x| <= clip * s says there are none; with
  //     one per element, each compare result is or-ed up.
  // If the check fails it returns false with `st` untouched, and the masked kernel measures
  // the stretch. Otherwise the sums, the maximum and the counts are the masked kernel's: the
  // same additions into the same lanes, and x^ from the checked arithmetic decode.
  template <DType D, bool kPerElement>
  static bool fast(const Stretch& s, ErrorStats& st) {
    if (s.decode_shift < 0 || s.n < 8) return false;
    const float scale_pow = s.scale * s.decode_pow;  // exact when finite (decode_pow = 2^k, k >= 0)
    if (!kPerElement && !(std::fabs(scale_pow) <= FLT_MAX)) return false;
    const Ib magnitude(0x7F), sign(0x80), special_below(static_cast<std::int32_t>(s.special_from) - 1);
    const Fb pow(s.decode_pow), scale(scale_pow);
    const Db zero(0.0), clip(s.clip);
    const std::int32_t shift = s.decode_shift;
    Quad sig, err, max_e;
    for (std::size_t j = 0; j < kD; ++j) sig.p[j] = err.p[j] = max_e.p[j] = zero;
    Fb max_x(0.0f);                        // one multiplier: max |x|
    Dm over(false);                        // one per element: any |x| > clip * s_i
    xsimd::batch_bool<std::int32_t, A> special(false);
    const std::size_t n8 = s.n / 8 * 8;
    for (std::size_t i = 0; i < n8; i += 8) {
      Fb xv[kF], xh[kF], si[kF];
      for (std::size_t k = 0; k < kF; ++k) {
        const std::size_t at = i + k * Fb::size;
        xv[k] = load<D>(s.x, at);
        const Ib q = X::load_codes(s.codes + at), m = q & magnitude;
        special = special | (m > special_below);
        const Fb bits = xsimd::bitwise_cast<Fb>((m << shift) | ((q & sign) << 24));
        if constexpr (kPerElement) {
          si[k] = Fb::load_unaligned(s.scales + at);
          xh[k] = bits * (si[k] * pow);  // = fp32(decoded[q] * s_i), or non-finite
        } else {
          xh[k] = bits * scale;
          max_x = xsimd::max(max_x, xsimd::abs(xv[k]));
        }
      }
      for (std::size_t q = 0; q < 2; ++q) {
        const Quad x = quad(xv, q), h = quad(xh, q);
        Quad t;
        if constexpr (kPerElement) t = quad(si, q);
        for (std::size_t j = 0; j < kD; ++j) {
          const Db e = x.p[j] - h.p[j];
          sig.p[j] = sig.p[j] + x.p[j] * x.p[j];
          err.p[j] = err.p[j] + e * e;
          max_e.p[j] = xsimd::max(max_e.p[j], xsimd::abs(e));
          if constexpr (kPerElement) over = over | (xsimd::abs(x.p[j]) > clip * t.p[j]);
        }
      }
    }
    if (xsimd::any(special)) return false;
    const Db dbl_max(DBL_MAX);
    for (std::size_t j = 0; j < kD; ++j)
      if (!xsimd::all((sig.p[j] <= dbl_max) & (err.p[j] <= dbl_max))) return false;
    if constexpr (kPerElement) {
      if (xsimd::any(over)) return false;
    } else {
      alignas(64) float lanes[Fb::size];
      max_x.store_aligned(lanes);
      const float mx = *std::max_element(lanes, lanes + Fb::size);
      if (static_cast<double>(mx) > s.clip * static_cast<double>(s.scale)) return false;
    }
    // The check passed: n8 elements measured, none saturated; the rest as the specification.
    Partials p;
    store(sig, err, p);
    p.max_err = std::max(st.max_abs_error, hmax(max_e));
    p.counted = n8;
    if (n8 < s.n) add_elements(s, n8, p);
    close_stretch(p, st);
    return true;
  }

  template <DType D>
  static void stretches_of(std::span<const Stretch> stretches, ErrorStats& st) {
    for (const Stretch& s : stretches) {
      if (s.scales != nullptr) {
        if (!fast<D, true>(s, st)) masked<D, true>(s, st);
      } else {
        if (!fast<D, false>(s, st)) masked<D, false>(s, st);
      }
    }
  }

  static void stretches(std::span<const Stretch> stretches, ErrorStats& st) {
    if (stretches.empty()) return;
    // One dtype per call (measure_error's): dispatched once, not per stretch.
    const DType d = stretches.front().dtype;
    for (const Stretch& s : stretches)
      if (s.dtype != d) throw std::logic_error("measure_error: stretches of different dtypes in one call");
    switch (d) {
      case DType::kF32: stretches_of<DType::kF32>(stretches, st); break;
      case DType::kBF16: stretches_of<DType::kBF16>(stretches, st); break;
      case DType::kF16: stretches_of<DType::kF16>(stretches, st); break;
      default: stretch_generic(stretches, st); break;  // throws the specification's error
    }
  }

  // Whether any of 64 elements of T at p has the exponent field `mask` all ones.
  template <class T>
  static bool any_nonfinite64(const std::byte* p, T mask) {
    using B = xsimd::batch<T, A>;
    const B m(mask);
    xsimd::batch_bool<T, A> hit(false);
    for (std::size_t k = 0; k < 64; k += B::size) {
      const B v = B::load_unaligned(reinterpret_cast<const T*>(p) + k);
      hit = hit | ((v & m) == m);
    }
    return xsimd::any(hit);
  }

  // Blocks of 64 elements are tested with a few vector compares; the first block that has a
  // NaN / Inf is searched element by element, so the index is the generic scan's.
  static std::size_t first_nonfinite(const std::byte* data, DType dtype, std::size_t begin, std::size_t end) {
    const std::size_t width = dtype == DType::kF32 ? 4 : 2;
    const auto mask16 = static_cast<std::uint16_t>(dtype == DType::kBF16 ? 0x7F80 : 0x7C00);
    std::size_t i = begin;
    for (; i + 64 <= end; i += 64) {
      const std::byte* p = data + width * i;
      const bool any = dtype == DType::kF32 ? any_nonfinite64<std::uint32_t>(p, 0x7F800000u) : any_nonfinite64(p, mask16);
      if (any) return first_nonfinite_generic(data, dtype, i, i + 64);
    }
    return first_nonfinite_generic(data, dtype, i, end);
  }

  static constexpr ErrorKernels kKernels{&stretches, &first_nonfinite};
};

}  // namespace fp8q::checkpoint::detail
