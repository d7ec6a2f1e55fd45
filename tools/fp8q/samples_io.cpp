// Dot-product samples on disk (samples_io.hpp).
#include "samples_io.hpp"

#include <cmath>
#include <cstring>
#include <optional>
#include <tuple>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "args.hpp"
#include "files.hpp"
#include "fp8q/checkpoint/mma_text.hpp"
#include "fp8q/checkpoint/safetensors.hpp"
#include "fp8q/numerics/convert.hpp"
#include "npz.hpp"
#include "verbs.hpp"

namespace fp8q::cli {
namespace {

namespace ck = fp8q::checkpoint;

constexpr std::string_view kLayoutKey = "fp8q.layout", kSamplesLayout = "samples";

ck::DType codes_dtype(FormatId f) {
  switch (f) {
    case FormatId::kE4M3FN: return ck::DType::kF8_E4M3;
    case FormatId::kE5M2: return ck::DType::kF8_E5M2;
    case FormatId::kF16: return ck::DType::kF16;
    case FormatId::kBF16: return ck::DType::kBF16;
    default: return ck::DType::kU8;
  }
}

// Codes of values (row-major rows x cols): one byte each, two per byte for e2m1 unless
// `one_per_byte`, two bytes (little-endian) for f16 and bf16.
std::vector<std::byte> to_codes(const std::vector<float>& v, FormatId f, bool one_per_byte = false) {
  const Format& fmt = format_of(f);
  const ConvertOptions exact{.overflow = Overflow::kInfOrNan};
  std::vector<std::byte> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const auto code = static_cast<std::uint16_t>(encode_f32(v[i], fmt, exact));
    if (fmt.bits() > 8) out.push_back(std::byte{static_cast<std::uint8_t>(code)}), out.push_back(std::byte{static_cast<std::uint8_t>(code >> 8)});
    else if (f != FormatId::kE2M1 || one_per_byte) out.push_back(std::byte{static_cast<std::uint8_t>(code)});
    else if (i % 2 == 0) out.push_back(std::byte{static_cast<std::uint8_t>(code)});
    else out.back() |= std::byte{static_cast<std::uint8_t>(code << 4)};
  }
  return out;
}

std::string shape_text(const std::vector<std::uint64_t>& s) {
  std::string r = "[";
  for (std::size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

class File {
 public:
  explicit File(const std::string& path) : path_(path), in_(open(path)) {}

  [[noreturn]] void fail(const std::string& tensor, const std::string& what) const {
    throw UsageError(path_ + ": tensor '" + tensor + "' " + what);
  }
  const ck::TensorInfo& need(const std::string& name, const std::string& what) const {
    const ck::TensorInfo* t = in_.find(name);
    if (!t) throw UsageError(path_ + ": no tensor '" + name + "' (" + what + ")");
    return *t;
  }
  bool has(const std::string& name) const { return in_.find(name) != nullptr; }
  // Whether the file is in the samples form (__metadata__ fp8q.layout = "samples"; absent: the grid).
  bool samples_form() const {
    const auto it = in_.metadata().find(std::string(kLayoutKey));
    if (it == in_.metadata().end()) return false;
    if (it->second != kSamplesLayout)
      throw UsageError(path_ + ": __metadata__ '" + std::string(kLayoutKey) + "' = '" + it->second +
                       "' is not a layout (\"" + std::string(kSamplesLayout) + "\", or no key for the [M, K] x [K, N] grid)");
    return true;
  }

  // The format of operand `name`: its dtype (F8_E4M3, F8_E5M2, F16, BF16) or fp8q.elem.NAME.
  FormatId format(const ck::TensorInfo& t) const {
    const std::string key = "fp8q.elem." + t.name;
    const auto it = in_.metadata().find(key);
    std::optional<FormatId> named;
    if (it != in_.metadata().end()) {
      named = operand_format(it->second);
      if (!named)
        throw UsageError(path_ + ": __metadata__ '" + key + "' = '" + it->second + "' is not an operand format (" +
                         kElementFormatNames + " f16 bf16)");
    }
    const std::optional<FormatId> by_dtype = t.dtype == ck::DType::kF8_E4M3 ? std::optional(FormatId::kE4M3FN)
                                             : t.dtype == ck::DType::kF8_E5M2 ? std::optional(FormatId::kE5M2)
                                             : t.dtype == ck::DType::kF16     ? std::optional(FormatId::kF16)
                                             : t.dtype == ck::DType::kBF16    ? std::optional(FormatId::kBF16)
                                                                              : std::nullopt;
    if (by_dtype) {
      if (named && *named != *by_dtype)
        fail(t.name, "has dtype " + std::string(ck::dtype_name(t.dtype)) + " but __metadata__ '" + key + "' says " +
                         std::string(format_of(*named).name));
      return *by_dtype;
    }
    if (t.dtype != ck::DType::kU8 && t.dtype != ck::DType::kF32)
      fail(t.name, "has dtype " + std::string(ck::dtype_name(t.dtype)) +
                       "; operands are F8_E4M3, F8_E5M2, F16, BF16, U8 codes or F32 values");
    if (!named) fail(t.name, "has dtype " + std::string(ck::dtype_name(t.dtype)) + ": name its format in __metadata__ '" + key + "'");
    if (t.dtype == ck::DType::kU8 && format_of(*named).bits() > 8)
      fail(t.name, "has dtype U8 but __metadata__ '" + key + "' says " + std::string(format_of(*named).name) +
                       " (16-bit codes are F16 or BF16)");
    return *named;
  }

  // A 2-D operand as fp32 values (rows x cols), checked against its format.
  std::vector<float> operand(const ck::TensorInfo& t, FormatId f, std::size_t& rows, std::size_t& cols) const {
    if (t.shape.size() != 2) fail(t.name, "has shape " + shape_text(t.shape) + "; operands are 2-D");
    const Format& fmt = format_of(f);
    const auto bytes = in_.bytes(t);
    rows = t.shape[0], cols = t.shape[1];
    std::vector<float> v;
    if (t.dtype == ck::DType::kF32) {
      v.resize(t.numel());
      std::memcpy(v.data(), bytes.data(), v.size() * sizeof(float));
      for (std::size_t i = 0; i < v.size(); ++i)
        if (!is_value_of(v[i], fmt))
          fail(t.name, "[" + std::to_string(i / cols) + ", " + std::to_string(i % cols) + "] = " + float_text(v[i]) +
                           " is not a value of " + std::string(fmt.name));
      return v;
    }
    if (f == FormatId::kE2M1 && t.dtype == ck::DType::kU8) cols *= 2;
    v.resize(rows * cols);
    if (fmt.bits() > 8) {  // F16 / BF16: little-endian codes, every one a value
      for (std::size_t i = 0; i < v.size(); ++i)
        v[i] = decode_f32(std::to_integer<unsigned>(bytes[2 * i]) | std::to_integer<unsigned>(bytes[2 * i + 1]) << 8, fmt);
      return v;
    }
    for (std::size_t i = 0; i < v.size(); ++i) {
      auto code = std::to_integer<std::uint8_t>(bytes[f == FormatId::kE2M1 ? i / 2 : i]);
      if (f == FormatId::kE2M1) code = i % 2 == 0 ? code & 0xF : code >> 4;
      if ((code >> fmt.bits()) != 0)
        fail(t.name, "[" + std::to_string(i / cols) + ", " + std::to_string(i % cols) + "]: byte " +
                         std::to_string(code) + " is not a " + std::string(fmt.name) + " code");
      v[i] = decode_f32(code, fmt);
    }
    return v;
  }

  std::vector<float> f32(const ck::TensorInfo& t, const std::vector<std::uint64_t>& shape) const {
    if (t.dtype != ck::DType::kF32) fail(t.name, "has dtype " + std::string(ck::dtype_name(t.dtype)) + ", expected F32");
    if (t.shape != shape) fail(t.name, "has shape " + shape_text(t.shape) + ", expected " + shape_text(shape));
    std::vector<float> v(t.numel());
    std::memcpy(v.data(), in_.bytes(t).data(), v.size() * sizeof(float));
    return v;
  }

 private:
  static ck::Reader open(const std::string& path) {
    try {
      return ck::Reader(path);
    } catch (const std::exception& e) {
      throw UsageError(e.what());
    }
  }
  std::string path_;
  ck::Reader in_;
};

// B as K x N rows (the files' layout) from the samples' columns.
std::vector<float> b_rows(const DotSamples& s) {
  std::vector<float> b(s.k * s.n);
  for (std::size_t j = 0; j < s.n; ++j)
    for (std::size_t k = 0; k < s.k; ++k) b[k * s.n + j] = s.bt[j * s.k + k];
  return b;
}

std::string read_text(const std::string& path) {
  const std::vector<std::byte> bytes = read_all(path);
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

}  // namespace

void write_samples(const std::string& path, const DotSamples& s, bool with_d,
                   const std::map<std::string, std::string>& metadata) {
  const std::vector<float> b = s.diagonal ? s.bt : b_rows(s);
  const std::vector<std::byte> ca = to_codes(s.a, s.format_a), cb = to_codes(b, s.format_b);
  auto last = [](FormatId f, std::size_t cols) { return f == FormatId::kE2M1 ? (cols + 1) / 2 : cols; };
  const std::size_t b_rows_count = s.diagonal ? s.n : s.k, b_cols = s.diagonal ? s.k : s.n;
  if ((s.format_a == FormatId::kE2M1 && s.k % 2 != 0) || (s.format_b == FormatId::kE2M1 && b_cols % 2 != 0))
    throw UsageError(s.diagonal ? "e2m1 operands are stored two codes per byte: K must be even"
                                : "e2m1 operands are stored two codes per byte: K (for a) and N (for b) must be even");
  std::vector<ck::TensorData> tensors = {
      {{"a", codes_dtype(s.format_a), {s.m, last(s.format_a, s.k)}}, ca},
      {{"b", codes_dtype(s.format_b), {b_rows_count, last(s.format_b, b_cols)}}, cb}};
  const std::vector<std::uint64_t> results = s.diagonal ? std::vector<std::uint64_t>{s.m} : std::vector<std::uint64_t>{s.m, s.n};
  if (!s.c.empty()) tensors.push_back({{"c", ck::DType::kF32, results}, std::as_bytes(std::span(s.c))});
  if (with_d) tensors.push_back({{"d", ck::DType::kF32, results}, std::as_bytes(std::span(s.d))});
  std::map<std::string, std::string> meta = metadata;
  if (s.diagonal) meta[std::string(kLayoutKey)] = kSamplesLayout;
  meta["fp8q.elem.a"] = std::string(format_of(s.format_a).name);
  meta["fp8q.elem.b"] = std::string(format_of(s.format_b).name);
  ck::write_file(path, tensors, meta);
}

void write_samples_npz(const std::string& path, const DotSamples& s, bool with_d) {
  const std::vector<float> b = s.diagonal ? s.bt : b_rows(s);
  const std::vector<std::uint64_t> b_shape = s.diagonal ? std::vector<std::uint64_t>{s.n, s.k}
                                                        : std::vector<std::uint64_t>{s.k, s.n};
  const std::vector<std::uint64_t> results = s.diagonal ? std::vector<std::uint64_t>{s.m} : std::vector<std::uint64_t>{s.m, s.n};
  const std::vector<std::byte> ca = to_codes(s.a, s.format_a, true), cb = to_codes(b, s.format_b, true);
  std::vector<NpyArray> arrays = {{"a", "<f4", {s.m, s.k}, std::as_bytes(std::span(s.a))},
                                  {"b", "<f4", b_shape, std::as_bytes(std::span(b))},
                                  {"a_codes", format_of(s.format_a).bits() > 8 ? "<u2" : "|u1", {s.m, s.k}, ca},
                                  {"b_codes", format_of(s.format_b).bits() > 8 ? "<u2" : "|u1", b_shape, cb}};
  if (!s.c.empty()) arrays.push_back({"c", "<f4", results, std::as_bytes(std::span(s.c))});
  if (with_d) arrays.push_back({"d", "<f4", results, std::as_bytes(std::span(s.d))});
  write_npz(path, arrays);
}

DotSamples read_samples(const std::string& path, const std::string& d_path) {
  const File in(path);
  DotSamples s;
  s.diagonal = in.samples_form();
  const ck::TensorInfo& ta = in.need("a", s.diagonal ? "the S x K rows of A" : "the M x K operand A");
  const ck::TensorInfo& tb = in.need("b", s.diagonal ? "the S x K columns of B" : "the K x N operand B");
  s.format_a = in.format(ta), s.format_b = in.format(tb);
  std::size_t ka = 0, kb = 0;
  s.a = in.operand(ta, s.format_a, s.m, ka);
  if (s.diagonal) {
    s.bt = in.operand(tb, s.format_b, s.n, kb);
    if (s.n != s.m) in.fail("b", "has " + std::to_string(s.n) + " rows, but a has " + std::to_string(s.m) + " (one a sample)");
    if (ka != kb) in.fail("b", "has K = " + std::to_string(kb) + " columns, but a has " + std::to_string(ka));
  } else {
    const std::vector<float> b = in.operand(tb, s.format_b, kb, s.n);
    if (ka != kb) in.fail("b", "has " + std::to_string(kb) + " rows, but a has K = " + std::to_string(ka) + " columns");
    s.bt.resize(s.n * kb);
    for (std::size_t k = 0; k < kb; ++k)
      for (std::size_t j = 0; j < s.n; ++j) s.bt[j * kb + k] = b[k * s.n + j];
  }
  s.k = ka;
  if (s.k == 0 || s.m == 0 || s.n == 0) in.fail("a", "and b hold no dot product (M, N and K must be at least 1)");
  const std::vector<std::uint64_t> mn = s.diagonal ? std::vector<std::uint64_t>{s.m} : std::vector<std::uint64_t>{s.m, s.n};
  if (in.has("c")) s.c = in.f32(in.need("c", "C"), mn);
  std::optional<File> other;
  if (!d_path.empty()) other.emplace(d_path);
  const File& from = other ? *other : in;
  const std::vector<float> d = from.f32(from.need("d", s.diagonal ? "the measured D, [S] F32" : "the measured D, [M, N] F32"), mn);
  s.d.resize(d.size());
  for (std::size_t i = 0; i < d.size(); ++i) s.d[i] = bits_of(d[i]);
  return s;
}

DotSamples read_text_samples(const std::string& a_path, const std::string& b_path, const std::string& d_path,
                             const std::string& c_path, FormatId format_a, FormatId format_b) {
  ck::MmaText t;
  try {
    std::optional<std::string> c;
    if (!c_path.empty()) c = read_text(c_path);
    t = ck::parse_mma_text(read_text(a_path), read_text(b_path), read_text(d_path), a_path, b_path, d_path, c, c_path);
  } catch (const ck::FormatError& e) {
    throw UsageError(e.what());
  }
  for (const auto& [values, path, id] : {std::tuple{&t.a, &a_path, format_a}, std::tuple{&t.b, &b_path, format_b}}) {
    const Format& f = format_of(id);
    for (std::size_t i = 0; i < values->size(); ++i) {
      const float v = float_of((*values)[i]);
      if (!is_value_of(v, f))
        throw UsageError(*path + ": line " + std::to_string(i / t.k + 1) + ", value " + std::to_string(i % t.k + 1) +
                         ": " + float_text(v) + " is not a value of " + std::string(f.name));
    }
  }
  DotSamples s{.format_a = format_a, .format_b = format_b, .m = t.samples(), .n = t.samples(), .k = t.k,
               .d = t.d, .diagonal = true};
  s.a.reserve(t.a.size()), s.bt.reserve(t.b.size()), s.c.reserve(t.c.size());
  for (std::uint32_t u : t.a) s.a.push_back(float_of(u));
  for (std::uint32_t u : t.b) s.bt.push_back(float_of(u));
  for (std::uint32_t u : t.c) s.c.push_back(float_of(u));  // any fp32, NaN and Inf included: C is the device's input
  return s;
}

}  // namespace fp8q::cli
