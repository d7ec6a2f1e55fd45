#include "reencode/reencode.hpp"

#include <array>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <string>

#include "fp8q/numerics/bulk.hpp"
#include "fp8q/numerics/convert.hpp"
#include "fp8q/numerics/parallel.hpp"
#include "reencode/rows.hpp"

namespace fp8q::checkpoint::reencode {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The column runs of a weight's blocks: block(r, c) = base(r) + c / width where `contiguous`
// (grids, and MX groups of consecutive columns); else through group_of_col.
struct Runs {
  std::size_t width = 0;
  bool contiguous = true;
  explicit Runs(const DequantView& v) {
    if (!v.mx) {
      width = v.grid.block_cols;
      return;
    }
    width = 32;
    contiguous = v.groups_per_row == (v.cols + 31) / 32;
    for (std::size_t c = 0; c < v.cols && contiguous; ++c) contiguous = v.group_of_col[c] == c / 32;
  }
};

// A view's exact values, one row at a time: every code's value and every E8M0 scale as doubles.
class Decoder {
 public:
  Decoder(const DequantView& v, const RowKernels& k)
      : v_(v), k_(k), runs_(v), rule_(minifloat_rule(format_of(v.element))) {
    const Format& f = format_of(v.element);
    for (std::size_t i = 0; i < 256; ++i) code_[i] = f.bits() < 8 && (i >> f.bits()) != 0 ? kNaN : decode_f64(i, f);
    for (int e = 0; e < 256; ++e) pow2_[e] = e == 255 ? kNaN : std::ldexp(1.0, e - 127);
  }
  // s[c] = scale(r, c) * global_scale: at most 24 + 24 significant bits, exact in fp64 (an
  // MX view's global scale is 1).
  void scales(std::size_t r, double* s) const {
    const std::size_t cols = v_.cols;
    if (v_.mx) {
      const std::uint8_t* e = v_.e8m0.data() + r * v_.groups_per_row;
      if (runs_.contiguous) {
        for (std::size_t c0 = 0, g = 0; c0 < cols; c0 += 32, ++g) fill(s, c0, pow2_[e[g]] * v_.global_scale);
      } else {
        for (std::size_t c = 0; c < cols; ++c) s[c] = pow2_[e[v_.group_of_col[c]]] * v_.global_scale;
      }
      return;
    }
    const float* b = v_.scale_inv.data() + (r / v_.grid.block_rows) * v_.grid.grid_cols();
    for (std::size_t c0 = 0, j = 0; c0 < cols; c0 += runs_.width, ++j) fill(s, c0, b[j] * v_.global_scale);
  }
  // x[c] = decode(code(r, c)) * s[c] (at most 8 + 48 bits, exact in fp64), s = scales(r).
  void row(std::size_t r, double* s, double* x) const {
    scales(r, s);
    const std::uint8_t* q = v_.codes.data() + r * v_.cols;
    if (!rule_ || k_.decode_rule(q, *rule_, s, v_.cols, x) != 0) k_.decode(q, code_.data(), s, v_.cols, x);
  }

 private:
  void fill(double* s, std::size_t c0, double value) const {
    std::fill(s + c0, s + std::min(v_.cols, c0 + runs_.width), value);
  }
  const DequantView& v_;
  const RowKernels& k_;
  Runs runs_;
  std::optional<MinifloatRule> rule_;  // the codes decoded by their fields, else by the table
  std::array<double, 256> code_{}, pow2_{};
};

// fp32 round-to-odd of x: the fp32 truncation of x with its last bit set when x is inexact. In
// fp32's normal range by the bits of x (no FP environment involved); elsewhere by the scalar
// conversion.
float to_odd_f32(double x, std::uint64_t& rounded) {
  std::uint64_t b;
  std::memcpy(&b, &x, 8);
  const std::uint64_t mag = b & ~(std::uint64_t{1} << 63);
  const int e = static_cast<int>(mag >> 52) - 1023;
  if (mag == 0) return std::bit_cast<float>(static_cast<std::uint32_t>(b >> 32 & 0x80000000u));  // +/-0
  if (e >= -126 && e <= 127) {
    const bool sticky = (mag & ((std::uint64_t{1} << 29) - 1)) != 0;
    rounded += sticky;
    std::uint32_t f = static_cast<std::uint32_t>(e + 127) << 23 | static_cast<std::uint32_t>((mag >> 29) & 0x7FFFFF);
    f |= static_cast<std::uint32_t>(sticky) | static_cast<std::uint32_t>(b >> 32 & 0x80000000u);
    return std::bit_cast<float>(f);
  }
  if (std::isnan(x)) return std::copysign(std::numeric_limits<float>::quiet_NaN(), std::signbit(x) ? -1.0f : 1.0f);
  ConvertOptions o;
  o.rounding = Rounding::kOdd;
  o.overflow = Overflow::kInfOrNan;  // beyond fp32: max finite under round-to-odd; Inf stays Inf
  const float f = float_of(static_cast<std::uint32_t>(encode_f64(x, kF32, o)));
  rounded += static_cast<double>(f) != x;
  return f;
}

// out[c] = to_odd_f32(x[c]): the row kernel, and the scalar form for the values outside
// fp32's normal range.
void to_odd_row(const RowKernels& k, const double* x, std::size_t n, float* out, std::uint64_t& rounded) {
  if (k.to_odd(x, n, out, rounded) == 0) return;
  for (std::size_t c = 0; c < n; ++c) {
    const double a = std::fabs(x[c]);
    if (a != 0 && !(a >= 0x1p-126 && a < 0x1p128)) out[c] = to_odd_f32(x[c], rounded);
  }
}

// fp32 nearest-even rounding of x (overflow to Inf), by the bits of x in fp32's normal range,
// elsewhere by the scalar conversion: no FP environment involved.
std::uint32_t nearest_f32(double x) {
  std::uint64_t b;
  std::memcpy(&b, &x, 8);
  const std::uint64_t mag = b & ~(std::uint64_t{1} << 63);
  const int e = static_cast<int>(mag >> 52) - 1023;
  if (e >= -126 && e <= 127) {
    std::uint32_t f = static_cast<std::uint32_t>(e + 127) << 23 | static_cast<std::uint32_t>((mag >> 29) & 0x7FFFFF);
    const std::uint64_t rest = mag & ((std::uint64_t{1} << 29) - 1), half = std::uint64_t{1} << 28;
    f += rest > half || (rest == half && (f & 1) != 0);  // a carry reaches the exponent (2^128: Inf)
    return f | static_cast<std::uint32_t>(b >> 32 & 0x80000000u);
  }
  ConvertOptions o;
  o.overflow = Overflow::kInfOrNan;
  return static_cast<std::uint32_t>(encode_f64(x, kF32, o));
}

// Rows are independent work; a thread takes whole chunks of `unit` rows (a scale block's height).
template <class Body>
void over_rows(std::size_t rows, std::size_t unit, int threads, const Body& body) {
  const std::size_t units = (rows + unit - 1) / unit;
  parallel_chunks(units, threads, [&](std::size_t b, std::size_t e) { body(b * unit, std::min(rows, e * unit)); },
                  ChunkGrain{.align = 1, .min_per_thread = 1});
}

// c.changed / c.max_change: a's exact values against b's (same shape; NaN equals NaN). The sum
// and the maximum do not depend on how the rows are split. With `limit`, the count may stop once
// it is known to exceed it (one thread's share alone does); returns whether it did.
bool count_changes(const DequantView& a, const DequantView& b, Conversion& c, int threads, const RowKernels& k,
                   std::optional<std::uint64_t> limit = std::nullopt) {
  const Decoder da(a, k), db(b, k);
  std::mutex m;
  std::atomic<bool> exceeded{false};
  c.changed = 0;
  c.max_change = 0;
  over_rows(a.rows, 1, threads, [&](std::size_t r0, std::size_t r1) {
    std::vector<double> x(a.cols), y(a.cols), s(a.cols);
    std::uint64_t changed = 0;
    double largest = 0;
    for (std::size_t r = r0; r < r1 && !exceeded; ++r) {
      da.row(r, s.data(), x.data());
      db.row(r, s.data(), y.data());
      k.differences(x.data(), y.data(), a.cols, changed, largest);
      if (limit && changed > *limit) exceeded = true;
    }
    const std::lock_guard<std::mutex> lock(m);
    c.changed += changed;
    c.max_change = std::max(c.max_change, largest);
  });
  return exceeded;
}

// The smallest j with amax <= max_finite * 2^j * base.
int smallest_exponent(double amax, double base, double max_finite) {
  int j = std::ilogb(amax / base) - std::ilogb(max_finite) - 1;
  while (amax > std::ldexp(max_finite * base, j)) ++j;
  return j;
}

const RowKernels& kernels(const std::optional<Isa>& isa) { return row_kernels(resolve_isa(isa, "LayoutOptions::isa")); }

}  // namespace

std::vector<double> exact_values(const DequantView& v) {
  std::vector<double> out(v.rows * v.cols), s(v.cols);
  const Decoder d(v, row_kernels(Isa::kGeneric));
  for (std::size_t r = 0; r < v.rows; ++r) d.row(r, s.data(), out.data() + r * v.cols);
  return out;
}

std::vector<float> round_to_odd_f32(const std::vector<double>& values, std::uint64_t& rounded) {
  std::vector<float> out(values.size());
  rounded = 0;
  for (std::size_t i = 0; i < values.size(); ++i) out[i] = to_odd_f32(values[i], rounded);
  return out;
}

std::optional<Encoding> source_scaled_encoding(const DequantView& source, const DequantView& structure, int threads,
                                               std::optional<Isa> isa) {
  const RowKernels& k = kernels(isa);
  const Format& f = format_of(structure.element);
  const double max_finite = f.max_finite();
  const std::size_t rows = structure.rows, cols = structure.cols;
  const Decoder values(source, k);
  const Runs runs(structure);
  // block (r, c) = row_base(r) + col_block[c]
  std::vector<std::uint32_t> col_block(cols);
  for (std::size_t c = 0; c < cols; ++c)
    col_block[c] = structure.mx ? structure.group_of_col[c] : static_cast<std::uint32_t>(c / structure.grid.block_cols);
  auto row_base = [&](std::size_t r) {
    return structure.mx ? r * structure.groups_per_row : (r / structure.grid.block_rows) * structure.grid.grid_cols();
  };
  // Pass 1: each block's largest |value| and the source scale of that value (its first column
  // in the row where the block's maximum is first reached).
  const std::size_t blocks = structure.mx ? rows * structure.groups_per_row : structure.scale_inv.size();
  std::vector<double> amax(blocks, 0.0), base(blocks, 0.0);
  std::atomic<bool> finite{true};
  const std::size_t unit = structure.mx ? 1 : structure.grid.block_rows;  // a thread owns its blocks
  over_rows(rows, unit, threads, [&](std::size_t r0, std::size_t r1) {
    std::vector<double> x(cols), s(cols), m((cols + runs.width - 1) / runs.width);
    for (std::size_t r = r0; r < r1 && finite; ++r) {
      values.row(r, s.data(), x.data());
      const std::size_t rb = row_base(r);
      if (!runs.contiguous) {
        for (std::size_t c = 0; c < cols; ++c) {
          if (!std::isfinite(x[c])) finite = false;
          const std::size_t b = rb + col_block[c];
          if (std::fabs(x[c]) > amax[b]) amax[b] = std::fabs(x[c]), base[b] = s[c];
        }
        continue;
      }
      if (!k.run_maxima(x.data(), cols, runs.width, m.data())) finite = false;
      for (std::size_t j = 0; j < m.size(); ++j) {
        if (!(m[j] > amax[rb + j])) continue;
        std::size_t c = j * runs.width;
        while (std::fabs(x[c]) != m[j]) ++c;
        amax[rb + j] = m[j];
        base[rb + j] = s[c];
      }
    }
  });
  if (!finite) return std::nullopt;
  // The scales: the smallest of each block's family that holds its largest value; an all-zero
  // block keeps the structure's.
  DequantView out = structure;
  std::vector<double> scale(blocks);
  for (std::size_t b = 0; b < blocks; ++b) {
    if (structure.mx) {
      scale[b] = std::ldexp(1.0, static_cast<int>(structure.e8m0[b]) - 127);
      if (amax[b] == 0) continue;
      const int e = smallest_exponent(amax[b], 1.0, max_finite);
      if (e < -127 || e > 127) return std::nullopt;
      out.e8m0[b] = static_cast<std::uint8_t>(e + 127);
      scale[b] = std::ldexp(1.0, e);
    } else {
      scale[b] = structure.scale_inv[b];
      if (amax[b] == 0) continue;
      scale[b] = std::ldexp(base[b], smallest_exponent(amax[b], base[b], max_finite));
      if (!(scale[b] > 0) || static_cast<double>(static_cast<float>(scale[b])) != scale[b]) return std::nullopt;
      out.scale_inv[b] = static_cast<float>(scale[b]);
    }
  }
  // Pass 2: value / scale, exact in fp64 or the encoding is refused, as its fp32 round-to-odd
  // through the bulk nearest-even conversion (one rounding of the exact quotient); then each
  // code's value against the input's.
  std::atomic<bool> exact{true};
  std::array<double, 256> decoded{};
  for (std::size_t i = 0; i < 256; ++i) decoded[i] = (i >> f.bits()) != 0 ? kNaN : decode_f64(i, f);
  Encoding e{std::move(out), 0, 0.0};
  std::mutex m;
  over_rows(rows, 1, threads, [&](std::size_t r0, std::size_t r1) {
    std::vector<double> x(cols), s(cols), t(cols), v(cols);
    std::vector<float> q(cols);
    std::uint64_t unused = 0, changed = 0;
    double largest = 0;
    for (std::size_t r = r0; r < r1 && exact; ++r) {
      values.row(r, s.data(), x.data());
      const double* row_scale = scale.data() + row_base(r);
      for (std::size_t c = 0; c < cols; ++c) t[c] = row_scale[col_block[c]];
      if (!k.quotients(x.data(), t.data(), cols, v.data())) {
        exact = false;
        break;
      }
      to_odd_row(k, v.data(), cols, q.data(), unused);
      std::uint8_t* codes = e.view.codes.data() + r * cols;
      convert(q, std::span<std::uint8_t>(codes, cols), f);
      k.changes(codes, decoded.data(), t.data(), x.data(), cols, changed, largest);  // both finite here
    }
    const std::lock_guard<std::mutex> lock(m);
    e.changed += changed;
    e.max_change = std::max(e.max_change, largest);
  });
  if (!exact) return std::nullopt;
  return e;
}

std::vector<float> fp32_values(const DequantView& v, int threads, std::uint64_t& rounded, std::optional<Isa> isa) {
  const RowKernels& k = kernels(isa);
  const Decoder values(v, k);
  std::vector<float> out(v.rows * v.cols);
  std::mutex m;
  rounded = 0;
  over_rows(v.rows, 1, threads, [&](std::size_t r0, std::size_t r1) {
    std::vector<double> x(v.cols), s(v.cols);
    std::uint64_t n = 0;
    for (std::size_t row = r0; row < r1; ++row) {
      values.row(row, s.data(), x.data());
      to_odd_row(k, x.data(), v.cols, out.data() + row * v.cols, n);
    }
    const std::lock_guard<std::mutex> lock(m);
    rounded += n;
  });
  return out;
}

Dequantized dequantize(const DequantView& v, DType dtype, int threads, std::optional<Isa> isa) {
  if (dtype != DType::kF32 && dtype != DType::kBF16 && dtype != DType::kF16)
    throw std::invalid_argument("dequantize: " + std::string(dtype_name(dtype)) + " is not BF16, F16 or F32");
  const RowKernels& k = kernels(isa);
  const Format& f = dtype == DType::kF32 ? kF32 : dtype == DType::kBF16 ? kBF16 : kF16;
  const std::size_t width = f.storage_bytes(), cols = v.cols;
  const Decoder values(v, k);
  Dequantized d;
  d.report.path = "dequantized";
  d.bytes.resize(v.rows * cols * width);
  ConvertOptions o;  // fp32 round-to-odd -> bf16 / fp16 nearest-even: one rounding of the exact value
  o.overflow = Overflow::kInfOrNan;
  std::mutex m;
  over_rows(v.rows, 1, threads, [&](std::size_t r0, std::size_t r1) {
    std::vector<double> x(cols), s(cols), y(cols);
    std::vector<float> odd(cols);
    std::vector<std::uint32_t> u(cols);
    std::uint64_t changed = 0, rounded = 0;
    double largest = 0;
    std::optional<std::uint64_t> bad;
    for (std::size_t r = r0; r < r1; ++r) {
      values.row(r, s.data(), x.data());
      std::byte* out = d.bytes.data() + r * cols * width;
      if (dtype == DType::kF32) {
        if (k.nearest(x.data(), cols, u.data()) != 0)
          for (std::size_t c = 0; c < cols; ++c) u[c] = nearest_f32(x[c]);
        std::memcpy(out, u.data(), cols * 4);
      } else {
        to_odd_row(k, x.data(), cols, odd.data(), rounded);
        convert(std::as_bytes(std::span<const float>(odd)), kF32, std::span<std::byte>(out, cols * width), f, o);
      }
      for (std::size_t c = 0; c < cols; ++c) {
        std::uint32_t code = 0;
        std::memcpy(&code, out + c * width, width);
        y[c] = decode_f32(code, f);
        if (!bad && !std::isfinite(y[c])) bad = r * cols + c;
      }
      k.differences(x.data(), y.data(), cols, changed, largest);
    }
    const std::lock_guard<std::mutex> lock(m);
    d.report.changed += changed;
    d.report.max_change = std::max(d.report.max_change, largest);
    if (bad && (!d.first_nonfinite || *bad < *d.first_nonfinite)) d.first_nonfinite = bad;
  });
  return d;
}

std::vector<std::byte> transpose_experts(const std::vector<std::byte>& in, std::size_t experts, std::size_t rows,
                                         std::size_t cols, std::size_t width) {
  std::vector<std::byte> out(in.size());
  for (std::size_t e = 0; e < experts; ++e) {
    const std::byte* a = in.data() + e * rows * cols * width;
    std::byte* b = out.data() + e * rows * cols * width;
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t c = 0; c < cols; ++c) std::memcpy(b + (c * rows + r) * width, a + (r * cols + c) * width, width);
  }
  return out;
}

Reencoded reencode(const DequantView& source, const Layout& target, WeightRef w, const LayoutOptions& options) {
  Reencoded r;
  const int threads = options.threads;
  const RowKernels& k = kernels(options.isa);
  r.values = fp32_values(source, threads, r.report.fp32_rounded, options.isa);
  w.dtype = DType::kF32;
  w.data = std::as_bytes(std::span<const float>(r.values));
  r.q = target.quantize(w, options);
  // The input's scales carried over, where they keep every value, else the encoding that changes
  // fewer values (the layout's own on a tie).
  auto e = source_scaled_encoding(source, r.q.view, threads, options.isa);
  if (!e || e->changed > 0) {
    r.report.path = "requantized";
    // the requantized weight's changes only while they could be no more than the re-encoding's
    const bool more = count_changes(source, r.q.view, r.report, threads, k,
                                    e ? std::optional<std::uint64_t>(e->changed) : std::nullopt);
    if (!more && (!e || e->changed >= r.report.changed)) return r;
  }
  try {
    r.q.tensors = target.store(w, e->view, options);
  } catch (const std::invalid_argument&) {  // a scale the layout cannot store: requantized
    r.report.path = "requantized";
    count_changes(source, r.q.view, r.report, threads, k);
    return r;
  }
  r.q.view = std::move(e->view);
  r.report.path = "re-encoded";
  r.report.changed = e->changed;
  r.report.max_change = e->max_change;
  return r;
}

}  // namespace fp8q::checkpoint::reencode
