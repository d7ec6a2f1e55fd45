// torch/src/tensor_args.cpp: formats <-> dtypes, argument parsing and checks for the ops.
#include "tensor_args.hpp"

#include <ATen/Parallel.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>

#include <algorithm>
#include <bit>
#include <cstring>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "fp8q/numerics/convert.hpp"

namespace fp8q::torch::detail {

namespace {
// The narrow formats torch lacks travel as uint8 codes.
constexpr FormatId kUint8Formats[] = {FormatId::kE4M3, FormatId::kE3M4, FormatId::kE2M3, FormatId::kE3M2};

std::string format_names() {
  std::string s;
  for (FormatId f : kAllFormats) s.append(s.empty() ? "" : " ").append(format_of(f).name);
  return s;
}
}  // namespace

at::ScalarType dtype_of(FormatId f) {
  switch (f) {
    case FormatId::kF32: return at::kFloat;
    case FormatId::kF64: return at::kDouble;
    case FormatId::kBF16: return at::kBFloat16;
    case FormatId::kF16: return at::kHalf;
    case FormatId::kE4M3FN: return at::ScalarType::Float8_e4m3fn;
    case FormatId::kE5M2: return at::ScalarType::Float8_e5m2;
    case FormatId::kE4M3FNUZ: return at::ScalarType::Float8_e4m3fnuz;
    case FormatId::kE5M2FNUZ: return at::ScalarType::Float8_e5m2fnuz;
    case FormatId::kE8M0: return at::ScalarType::Float8_e8m0fnu;
    case FormatId::kE2M1: return at::ScalarType::Float4_e2m1fn_x2;
    case FormatId::kE4M3:
    case FormatId::kE3M4:
    case FormatId::kE2M3:
    case FormatId::kE3M2: return at::kByte;
  }
  return at::kByte;
}

std::optional<FormatId> format_of_dtype(at::ScalarType t) {
  for (FormatId f : kAllFormats)
    if (dtype_of(f) == t && t != at::kByte) return f;
  return std::nullopt;
}

bool is_narrow(FormatId f) { return format_of(f).bits() <= 8; }

FormatId parse_format_arg(std::string_view name, const char* arg) {
  const auto f = parse_format(name);
  TORCH_CHECK_VALUE(f.has_value(), arg, ": unknown format '", std::string(name), "' (one of: ", format_names(), ")");
  return *f;
}

FormatId resolve_format(const at::Tensor& t, std::optional<std::string_view> name, const char* arg) {
  const auto own = format_of_dtype(t.scalar_type());
  if (!name || name->empty()) {
    TORCH_CHECK_TYPE(own.has_value(), arg, " has dtype ", t.scalar_type(),
                     ", which names no format: give its format (uint8 holds codes of e4m3, e3m4, e2m3, e3m2 or "
                     "any narrow format)");
    return *own;
  }
  const FormatId f = parse_format_arg(*name, arg);
  if (t.scalar_type() == at::kByte) {
    TORCH_CHECK_TYPE(is_narrow(f), arg, " is uint8 but its format ", std::string(*name),
                     " is not a format of at most 8 bits");
    return f;
  }
  TORCH_CHECK_TYPE(own == f, arg, " has dtype ", t.scalar_type(), " but its format is given as ", std::string(*name),
                   " (", std::string(*name), " travels as ", dtype_of(f), ")");
  return f;
}

bool packed_fp4(const at::Tensor& t, FormatId f) {
  return f == FormatId::kE2M1 && t.scalar_type() == at::ScalarType::Float4_e2m1fn_x2;
}

Rounding parse_rounding_arg(std::string_view name) {
  const auto r = parse_rounding(name);
  TORCH_CHECK_VALUE(r.has_value(), "rounding: unknown mode '", std::string(name),
                    "' (one of: rne rna rtz rup rdn rto sr)");
  return *r;
}

Overflow parse_overflow_arg(std::string_view name) {
  const auto o = parse_overflow(name);
  TORCH_CHECK_VALUE(o.has_value(), "overflow: unknown policy '", std::string(name), "' (one of: saturate inf-nan)");
  return *o;
}

NanPolicy parse_nan_arg(std::string_view name) {
  if (name == "error") return NanPolicy::kError;
  if (name == "zero") return NanPolicy::kZero;
  TORCH_CHECK_VALUE(false, "nan: unknown policy '", std::string(name), "' (one of: error zero)");
}

ScaleOp parse_scale_op_arg(std::string_view name) {
  if (name == "multiply") return ScaleOp::kMultiply;
  if (name == "divide") return ScaleOp::kDivide;
  TORCH_CHECK_VALUE(false, "scale_op: unknown '", std::string(name), "' (one of: multiply divide)");
}

ConvertOptions convert_options(std::string_view rounding, std::string_view overflow, std::string_view nan,
                               std::int64_t seed, std::int64_t offset) {
  ConvertOptions o;
  o.rounding = parse_rounding_arg(rounding);
  o.overflow = parse_overflow_arg(overflow);
  o.nan = parse_nan_arg(nan);
  // torch's int is int64: the 64-bit key and counter travel as their two's-complement bits
  o.seed = static_cast<std::uint64_t>(seed);
  o.offset = static_cast<std::uint64_t>(offset);
  return o;
}

namespace {
void check_placement(const at::Tensor& t, const char* arg) {
  TORCH_CHECK_VALUE(t.defined(), arg, " is an undefined tensor");
  TORCH_CHECK_VALUE(t.device().is_cpu() || t.is_meta(), arg, " is on ", t.device(),
                    "; fp8q's kernels run on the CPU (move it with .cpu())");
  TORCH_CHECK_VALUE(t.layout() == at::kStrided, arg, " has layout ", t.layout(), "; expected a dense (strided) tensor");
}
}  // namespace

at::Tensor dense(const at::Tensor& t, const char* arg) {
  check_placement(t, arg);
  return t.contiguous();
}

std::optional<at::Tensor> dense(const std::optional<at::Tensor>& t, const char* arg) {
  if (!t) return std::nullopt;
  return dense(*t, arg);
}

void check_tensor(const at::Tensor& t, const char* arg) {
  check_placement(t, arg);
  TORCH_CHECK_VALUE(t.is_contiguous(), arg, " is not contiguous (shape ", shape_text(t.sizes()), ", strides ",
                    shape_text(t.strides()), "); the op writes it in place, so it must be contiguous");
}

void check_dtype(const at::Tensor& t, at::ScalarType want, const char* arg) {
  TORCH_CHECK_TYPE(t.scalar_type() == want, arg, " has dtype ", t.scalar_type(), ", expected ", want);
}

void check_dims(const at::Tensor& t, std::int64_t dims, const char* arg) {
  TORCH_CHECK_VALUE(t.dim() == dims, arg, " has shape ", shape_text(t.sizes()), "; expected ", dims, " dimensions");
}

void check_same_device(const at::Tensor& t, const at::Tensor& ref, const char* arg, const char* ref_arg) {
  TORCH_CHECK_VALUE(t.device() == ref.device(), arg, " is on ", t.device(), " but ", ref_arg, " is on ", ref.device());
}

std::optional<float> scalar_scale(const std::optional<at::Tensor>& t, const char* arg) {
  if (!t) return std::nullopt;
  check_placement(*t, arg);
  check_dtype(*t, at::kFloat, arg);
  TORCH_CHECK_VALUE(t->numel() == 1, arg, " has shape ", shape_text(t->sizes()), "; expected one element");
  if (t->is_meta()) return 1.0f;
  float s = 0;
  std::memcpy(&s, t->const_data_ptr(), sizeof s);  // one element: its strides do not matter
  TORCH_CHECK_VALUE(is_finite_positive(s), arg, " is ", float_text(s), "; a scale must be finite and > 0");
  return s;
}

at::Tensor new_output(at::IntArrayRef shape, const at::TensorOptions& options) {
  at::Tensor t = at::empty(shape, options);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  constexpr std::uintptr_t kHugePage = std::uintptr_t{2} << 20;
  if (t.device().is_cpu() && t.nbytes() >= 2 * kHugePage) {
    const auto begin = reinterpret_cast<std::uintptr_t>(t.data_ptr());
    const std::uintptr_t first = (begin + kHugePage - 1) & ~(kHugePage - 1);
    const std::uintptr_t last = (begin + t.nbytes()) & ~(kHugePage - 1);
    if (last > first) (void)madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);  // advice only
  }
#endif
  return t;
}

std::string shape_text(at::IntArrayRef shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

int threads() { return std::max(1, at::get_num_threads()); }

std::span<const std::uint8_t> codes_of(const at::Tensor& t, FormatId f, const char* arg,
                                       std::vector<std::uint8_t>& storage) {
  const auto raw = u8(t);
  if (packed_fp4(t, f)) {
    storage.resize(2 * raw.size());
    for (std::size_t i = 0; i < raw.size(); ++i) storage[2 * i] = raw[i] & 0xF, storage[2 * i + 1] = raw[i] >> 4;
    return storage;
  }
  const int bits = format_of(f).bits();
  if (bits < 8)
    for (std::size_t i = 0; i < raw.size(); ++i)
      TORCH_CHECK_VALUE((raw[i] >> bits) == 0, arg, "[flat index ", i, "]: byte ", int{raw[i]}, " is not a ",
                        std::string(format_of(f).name), " code (the high ", 8 - bits, " bits must be 0)");
  return raw;
}

std::int64_t numel_of(at::IntArrayRef shape) {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

std::vector<std::uint64_t> unsigned_shape(at::IntArrayRef shape) {
  return std::vector<std::uint64_t>(shape.begin(), shape.end());
}

std::vector<std::int64_t> code_shape(at::IntArrayRef shape, FormatId f, const char* arg) {
  std::vector<std::int64_t> s = shape.vec();
  if (f != FormatId::kE2M1) return s;
  TORCH_CHECK_VALUE(!s.empty() && s.back() % 2 == 0, arg, " has shape ", shape_text(shape),
                    ": e2m1 codes are packed two a byte along the last dimension (float4_e2m1fn_x2), which must "
                    "be even");
  s.back() /= 2;
  return s;
}

at::Tensor grid_tensor(std::size_t rows, std::size_t cols, const at::Tensor& like, at::ScalarType dtype) {
  return at::zeros({static_cast<std::int64_t>(rows), static_cast<std::int64_t>(cols)}, like.options().dtype(dtype));
}

const Format& source_format(const at::Tensor& t, const char* arg) {
  switch (t.scalar_type()) {
    case at::kFloat: return kF32;
    case at::kBFloat16: return kBF16;
    case at::kHalf: return kF16;
    default:
      TORCH_CHECK_TYPE(false, arg, " has dtype ", t.scalar_type(), "; expected float32, bfloat16 or float16");
  }
}

Granularity parse_granularity_arg(std::string_view name, const char* arg) {
  const auto g = parse_granularity(name);
  TORCH_CHECK_VALUE(g.has_value(), arg, ": unknown '", std::string(name),
                    "' (one of: tensor row col mx mx32x1 nvfp4 nvfp4_16x1 nvfp4_16x16 block<R>x<C>, e.g. block128x128)");
  return *g;
}

AmaxScaleOptions amax_scale_options(std::int64_t margin, double amax_epsilon, bool power_of_two) {
  TORCH_CHECK_VALUE(margin >= -kMaxMargin && margin <= kMaxMargin, "margin: ", margin, " is outside [-", kMaxMargin,
                    ", ", kMaxMargin, "]");
  // rounded to float32 nearest-even by fp8q's integer rounding, whatever the caller's MXCSR
  const float eps = float_of(static_cast<std::uint32_t>(encode_f64(amax_epsilon, kF32)));
  return {.margin = static_cast<int>(margin), .amax_epsilon = eps, .power_of_two = power_of_two};
}

void check_e8m0(const at::Tensor& t, const char* arg) {
  TORCH_CHECK_TYPE(t.scalar_type() == at::ScalarType::Float8_e8m0fnu || t.scalar_type() == at::kByte, arg,
                   " has dtype ", t.scalar_type(), "; E8M0 scales are float8_e8m0fnu (or uint8 codes)");
}

void value_error(const char* op, const char* what) { TORCH_CHECK_VALUE(false, "fp8q.", op, ": ", what); }

}  // namespace fp8q::torch::detail
