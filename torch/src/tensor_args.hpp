// torch/src/tensor_args.hpp: how fp8q's formats and options cross into torch tensors
// (docs/python.md): the dtype of each format, argument checks that name the argument, and the
// library's errors re-thrown as torch's ValueError. Included by every op file, never installed.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fp8q/numerics/format.hpp"
#include "fp8q/numerics/policy.hpp"
#include "fp8q/quant/granularity.hpp"
#include "fp8q/quant/scale_rules.hpp"

namespace fp8q::torch::detail {

// ---- formats and dtypes ------------------------------------------------------------------------
// The dtype a format travels as: torch's own where it has the format (e2m1 packed two a byte as
// float4_e2m1fn_x2), uint8 codes (one per byte, low bits) for e4m3, e3m4, e2m3 and e3m2.
at::ScalarType dtype_of(FormatId f);
// The format of a dtype that names one (float8_*, float4_e2m1fn_x2, f32, f64, bf16, f16).
std::optional<FormatId> format_of_dtype(at::ScalarType t);
// A format name, or the dtype's own format when `name` is empty/unset. uint8 needs a name; a
// name must agree with a dtype that carries a format. TypeError / ValueError name `arg`.
FormatId resolve_format(const at::Tensor& t, std::optional<std::string_view> name, const char* arg);
FormatId parse_format_arg(std::string_view name, const char* arg);
bool is_narrow(FormatId f);
// Whether t holds e2m1 packed two a byte (float4_e2m1fn_x2), as opposed to one code a byte.
bool packed_fp4(const at::Tensor& t, FormatId f);

// ---- option parsing (ValueError naming the argument and listing the accepted names) ----------
Rounding parse_rounding_arg(std::string_view name);
Overflow parse_overflow_arg(std::string_view name);
NanPolicy parse_nan_arg(std::string_view name);
ScaleOp parse_scale_op_arg(std::string_view name);
ConvertOptions convert_options(std::string_view rounding, std::string_view overflow, std::string_view nan,
                               std::int64_t seed, std::int64_t offset);

// ---- checks -------------------------------------------------------------------------------------
// An input as the kernels read it: defined, dense, on the CPU (or meta, for tracing), then
// contiguous: t itself where it is, else one contiguous copy, so that ops take any strides as
// torch's own ops do. ValueError names `arg`.
at::Tensor dense(const at::Tensor& t, const char* arg);
std::optional<at::Tensor> dense(const std::optional<at::Tensor>& t, const char* arg);
// A tensor the op writes in place (an `out=`): as dense() checks, and contiguous already (a
// copy would not be the caller's tensor).
void check_tensor(const at::Tensor& t, const char* arg);
void check_dtype(const at::Tensor& t, at::ScalarType want, const char* arg);
void check_dims(const at::Tensor& t, std::int64_t dims, const char* arg);
void check_same_device(const at::Tensor& t, const at::Tensor& ref, const char* arg, const char* ref_arg);
// A 1-element fp32 tensor holding a finite value > 0 (an optional scale), read on the CPU.
std::optional<float> scalar_scale(const std::optional<at::Tensor>& t, const char* arg);
std::string shape_text(at::IntArrayRef shape);

// Whether the kernels should run: false while tracing with meta / fake tensors, where an op only
// computes its outputs' shapes and dtypes.
inline bool compute(const at::Tensor& t) { return !t.is_meta(); }
// Threads for the library: torch's intra-op setting (the bits never depend on it).
int threads();
// at::empty for an op's output; a large CPU output is advised onto transparent huge pages before
// its first write, so the kernel's first pass does not pay a page fault per 4 KiB
// (docs/performance.md, "The Python path").
at::Tensor new_output(at::IntArrayRef shape, const at::TensorOptions& options);

// ---- shapes -------------------------------------------------------------------------------------
std::int64_t numel_of(at::IntArrayRef shape);
std::vector<std::uint64_t> unsigned_shape(at::IntArrayRef shape);
// The stored shape of `shape`'s elements in format f: e2m1 packs two codes a byte along the last
// dimension, which must be even (ValueError naming `arg`).
std::vector<std::int64_t> code_shape(at::IntArrayRef shape, FormatId f, const char* arg);
// A zero-filled [rows, cols] tensor of dtype on like's device (meta while tracing).
at::Tensor grid_tensor(std::size_t rows, std::size_t cols, const at::Tensor& like, at::ScalarType dtype);

// ---- the quant vocabulary -------------------------------------------------------------------------
// The format of a float32 / bfloat16 / float16 source tensor (TypeError naming `arg` otherwise).
const Format& source_format(const at::Tensor& t, const char* arg);
Granularity parse_granularity_arg(std::string_view name, const char* arg = "granularity");
AmaxScaleOptions amax_scale_options(std::int64_t margin, double amax_epsilon, bool power_of_two);
// An E8M0 scale tensor's dtype: float8_e8m0fnu or uint8 codes.
void check_e8m0(const at::Tensor& t, const char* arg);

// ---- raw views ----------------------------------------------------------------------------------
inline std::span<const std::byte> bytes(const at::Tensor& t) {
  return {static_cast<const std::byte*>(t.const_data_ptr()), t.nbytes()};
}
inline std::span<std::byte> mutable_bytes(at::Tensor& t) {
  return {static_cast<std::byte*>(t.mutable_data_ptr()), t.nbytes()};
}
inline std::span<const std::uint8_t> u8(const at::Tensor& t) {
  return {static_cast<const std::uint8_t*>(t.const_data_ptr()), t.nbytes()};
}
inline std::span<std::uint8_t> mutable_u8(at::Tensor& t) {
  return {static_cast<std::uint8_t*>(t.mutable_data_ptr()), t.nbytes()};
}
inline std::span<const float> f32(const at::Tensor& t) {
  return {static_cast<const float*>(t.const_data_ptr()), static_cast<std::size_t>(t.numel())};
}
inline std::span<float> mutable_f32(at::Tensor& t) {
  return {static_cast<float*>(t.mutable_data_ptr()), static_cast<std::size_t>(t.numel())};
}

// One code a byte from t, checking that every byte is a code of f (fp6 / fp4 high bits clear),
// naming `arg` and the index: a view of t's bytes, or of `storage` when e2m1 packed two a byte
// is unpacked into it.
std::span<const std::uint8_t> codes_of(const at::Tensor& t, FormatId f, const char* arg,
                                       std::vector<std::uint8_t>& storage);

// Runs a kernel body and re-throws the library's std::invalid_argument, std::domain_error
// (NanError) and std::out_of_range as torch's ValueError, prefixed with the op's name, so that
// Python sees ValueError and C++ sees c10::ValueError.
[[noreturn]] void value_error(const char* op, const char* what);
template <class F>
decltype(auto) guarded(const char* op, F&& body) {
  try {
    return body();
  } catch (const c10::Error&) {
    throw;
  } catch (const std::invalid_argument& e) {
    value_error(op, e.what());
  } catch (const std::domain_error& e) {
    value_error(op, e.what());
  } catch (const std::out_of_range& e) {
    value_error(op, e.what());
  } catch (const std::overflow_error& e) {
    value_error(op, e.what());
  }
}

}  // namespace fp8q::torch::detail
