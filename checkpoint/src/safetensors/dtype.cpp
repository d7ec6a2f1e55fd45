// The safetensors dtype strings and element sizes.
#include <array>
#include <stdexcept>

#include "fp8q/checkpoint/safetensors.hpp"
#include "safetensors/text.hpp"

namespace fp8q::checkpoint {
namespace {

struct DTypeRow {
  DType dtype;
  std::string_view name;
  std::size_t bytes;
};
// In enum order: kDTypes[i].dtype == DType(i) (checked below).
constexpr std::array<DTypeRow, kDTypeCount> kDTypes = {{
    {DType::kBool, "BOOL", 1},       {DType::kU8, "U8", 1},
    {DType::kI8, "I8", 1},           {DType::kF8_E4M3, "F8_E4M3", 1},
    {DType::kF8_E5M2, "F8_E5M2", 1}, {DType::kF8_E8M0, "F8_E8M0", 1},
    {DType::kI16, "I16", 2},         {DType::kU16, "U16", 2},
    {DType::kF16, "F16", 2},         {DType::kBF16, "BF16", 2},
    {DType::kI32, "I32", 4},         {DType::kU32, "U32", 4},
    {DType::kF32, "F32", 4},         {DType::kF64, "F64", 8},
    {DType::kI64, "I64", 8},         {DType::kU64, "U64", 8},
}};

constexpr bool rows_in_enum_order() {
  for (std::size_t i = 0; i < kDTypes.size(); ++i) {
    if (static_cast<std::size_t>(kDTypes[i].dtype) != i) return false;
  }
  return true;
}
static_assert(rows_in_enum_order());

const DTypeRow& row(DType dtype) {
  const auto i = static_cast<std::size_t>(dtype);
  if (i >= kDTypes.size()) throw std::invalid_argument("invalid DType value " + std::to_string(i));
  return kDTypes[i];
}

}  // namespace

std::optional<DType> parse_dtype(std::string_view name) {
  for (const DTypeRow& r : kDTypes) {
    if (r.name == name) return r.dtype;
  }
  return std::nullopt;
}

std::string_view dtype_name(DType dtype) { return row(dtype).name; }
std::size_t dtype_bytes(DType dtype) { return row(dtype).bytes; }

std::uint64_t TensorInfo::numel() const {
  const auto n = detail::checked_numel(shape);
  if (!n) throw std::overflow_error("tensor " + detail::quote(name) + ": shape product overflows 64 bits");
  return *n;
}

const Format* floating_format(DType dtype) {
  switch (dtype) {
    case DType::kF32: return &kF32;
    case DType::kBF16: return &kBF16;
    case DType::kF16: return &kF16;
    default: return nullptr;
  }
}

const Format* element_format(DType dtype) {
  switch (dtype) {
    case DType::kF64: return &kF64;
    case DType::kF8_E4M3: return &kE4M3FN;
    case DType::kF8_E5M2: return &kE5M2;
    case DType::kF8_E8M0: return &kE8M0;
    default: return floating_format(dtype);
  }
}

}  // namespace fp8q::checkpoint
