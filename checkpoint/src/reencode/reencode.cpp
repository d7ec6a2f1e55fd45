#include "reencode/reencode.hpp"

#include <cmath>
#include <cstring>
#include <limits>

#include "fp8q/numerics/convert.hpp"

namespace fp8q::checkpoint::reencode {

std::vector<double> exact_values(const DequantView& v) {
  const Format& f = format_of(v.element);
  std::vector<double> out(v.rows * v.cols);
  for (std::size_t r = 0; r < v.rows; ++r)
    for (std::size_t c = 0; c < v.cols; ++c) {
      const std::size_t i = r * v.cols + c;
      // at most 8 significant bits times fp32's 24: exact in fp64
      out[i] = decode_f64(v.codes[i], f) * static_cast<double>(v.scale(r, c));
    }
  return out;
}

std::vector<float> round_to_odd_f32(const std::vector<double>& values, std::uint64_t& rounded) {
  ConvertOptions o;
  o.rounding = Rounding::kOdd;
  o.overflow = Overflow::kInfOrNan;  // beyond fp32: max finite under round-to-odd; Inf stays Inf
  std::vector<float> out(values.size());
  rounded = 0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    const double x = values[i];
    if (std::isnan(x)) {
      out[i] = std::numeric_limits<float>::quiet_NaN();
      continue;
    }
    out[i] = float_of(static_cast<std::uint32_t>(encode_f64(x, kF32, o)));
    rounded += static_cast<double>(out[i]) != x;
  }
  return out;
}

namespace {

// codes[i] = the nearest-even code of values[i] / scale for every i in `members`; false when a
// quotient is not exact in fp64 (a value from another source scale), so that the code is one
// rounding of the exact value.
bool encode_members(const std::vector<double>& values, const std::vector<std::size_t>& members, double scale,
                    const Format& f, std::vector<std::uint8_t>& codes) {
  for (std::size_t i : members) {
    const double q = values[i] / scale;
    if (q * scale != values[i]) return false;
    codes[i] = static_cast<std::uint8_t>(encode_f64(q, f));
  }
  return true;
}

// The smallest j with amax <= max_finite * 2^j * base.
int smallest_exponent(double amax, double base, double max_finite) {
  int j = std::ilogb(amax / base) - std::ilogb(max_finite) - 1;
  while (amax > std::ldexp(max_finite * base, j)) ++j;
  return j;
}

}  // namespace

std::optional<DequantView> source_scaled_encoding(const std::vector<double>& values, const DequantView& source,
                                                  const DequantView& structure) {
  const Format& f = format_of(structure.element);
  const double max_finite = f.max_finite();
  DequantView out = structure;
  const std::size_t rows = structure.rows, cols = structure.cols;
  // The members of each block: (row, block) for MX, grid index otherwise.
  const std::size_t blocks = structure.mx ? rows * structure.groups_per_row : structure.scale_inv.size();
  std::vector<std::vector<std::size_t>> members(blocks);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) {
      const std::size_t b = structure.mx ? r * structure.groups_per_row + structure.group_of_col[c]
                                         : structure.grid.scale_index(r, c);
      members[b].push_back(r * cols + c);
    }
  for (std::size_t b = 0; b < blocks; ++b) {
    double amax = 0;
    std::size_t at = 0;
    for (std::size_t i : members[b]) {
      if (std::isnan(values[i]) || std::isinf(values[i])) return std::nullopt;
      if (std::fabs(values[i]) > amax) amax = std::fabs(values[i]), at = i;
    }
    double scale = structure.mx ? std::ldexp(1.0, static_cast<int>(structure.e8m0[b]) - 127) : structure.scale_inv[b];
    if (amax > 0) {
      if (structure.mx) {
        const int k = smallest_exponent(amax, 1.0, max_finite);
        if (k < -127 || k > 127) return std::nullopt;
        out.e8m0[b] = static_cast<std::uint8_t>(k + 127);
        scale = std::ldexp(1.0, k);
      } else {
        // the source's scale of the block's largest element, times the power of two that fits
        const double base = source.scale(at / cols, at % cols);
        scale = std::ldexp(base, smallest_exponent(amax, base, max_finite));
        if (!(scale > 0) || static_cast<double>(static_cast<float>(scale)) != scale) return std::nullopt;
        out.scale_inv[b] = static_cast<float>(scale);
      }
    }
    if (!encode_members(values, members[b], scale, f, out.codes)) return std::nullopt;
  }
  return out;
}

namespace {

void count_changes(const std::vector<double>& want, const std::vector<double>& got, Conversion& c) {
  c.changed = 0;
  c.max_change = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double a = want[i], b = got[i];
    if (a == b || (std::isnan(a) && std::isnan(b))) continue;
    ++c.changed;
    const double d = std::isnan(a) || std::isnan(b) ? std::numeric_limits<double>::infinity() : std::fabs(a - b);
    if (!(d <= c.max_change)) c.max_change = d;
  }
}

}  // namespace

Reencoded reencode(const DequantView& source, const Layout& target, WeightRef w, const LayoutOptions& options) {
  Reencoded r;
  const std::vector<double> exact = exact_values(source);
  r.values = round_to_odd_f32(exact, r.report.fp32_rounded);
  w.dtype = DType::kF32;
  w.data = std::as_bytes(std::span<const float>(r.values));
  r.q = target.quantize(w, options);
  r.report.path = "requantized";
  count_changes(exact, exact_values(r.q.view), r.report);
  if (r.report.changed == 0) return r;
  auto view = source_scaled_encoding(exact, source, r.q.view);
  if (!view) return r;
  Conversion c = r.report;
  count_changes(exact, exact_values(*view), c);
  if (c.changed >= r.report.changed) return r;
  try {
    r.q.tensors = target.store(w, *view, options);
  } catch (const std::invalid_argument&) {
    return r;  // the layout cannot store those scales: the requantized weight stands
  }
  r.q.view = std::move(*view);
  r.report = c;
  r.report.path = "re-encoded";
  return r;
}

}  // namespace fp8q::checkpoint::reencode
