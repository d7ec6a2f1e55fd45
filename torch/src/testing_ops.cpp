// torch/src/testing_ops.cpp: two tensors compared bitwise and in ULPs by the library's rule
// (numerics/compare.hpp), for fp8q.testing's assert helpers.
#include <ATen/ops/empty.h>
#include <ATen/ops/full.h>

#include "fp8q/numerics/compare.hpp"
#include "fp8q/numerics/convert.hpp"
#include "fp8q/torch/ops.hpp"
#include "tensor_args.hpp"

namespace fp8q::torch {

using namespace detail;

namespace {
// The element format compare reads: the named one, else the dtype's own; nullptr (bitwise) for
// integer and bool tensors without a name.
const Format* compared_format(const at::Tensor& t, std::string_view name, const char* arg) {
  if (name.empty() && !format_of_dtype(t.scalar_type()) &&
      (at::isIntegralType(t.scalar_type(), /*includeBool=*/true)))
    return nullptr;
  return &format_of(resolve_format(t, name, arg));
}

std::int64_t signed_ulps(std::uint64_t u) { return u == kInfiniteUlps ? -1 : static_cast<std::int64_t>(u); }
}  // namespace

std::tuple<at::Tensor, at::Tensor, at::Tensor> compare(const at::Tensor& actual_in, const at::Tensor& expected_in,
                                                       std::string_view format, std::int64_t ulps, std::int64_t worst) {
  return guarded("compare", [&] {
    const at::Tensor actual = dense(actual_in, "actual"), expected = dense(expected_in, "expected");
    check_same_device(expected, actual, "expected", "actual");
    TORCH_CHECK_TYPE(actual.scalar_type() == expected.scalar_type(), "expected has dtype ", expected.scalar_type(),
                     ", actual ", actual.scalar_type());
    TORCH_CHECK_VALUE(actual.sizes() == expected.sizes(), "expected has shape ", shape_text(expected.sizes()),
                      ", actual ", shape_text(actual.sizes()));
    TORCH_CHECK_VALUE(ulps >= 0 && worst >= 0, "ulps and worst must not be negative (", ulps, ", ", worst, ")");
    const Format* f = compared_format(actual, format, "actual");
    // counts: count, bit_equal, differ, signed_zero, nan_payload, beyond, max_ulps (-1: infinite)
    at::Tensor counts = at::empty({7}, actual.options().dtype(at::kLong));
    // one row per worst element: flat index, actual code, expected code, ulps (-1: infinite),
    // ElementMatch; rows past the differing elements hold index -1
    at::Tensor rows = at::full({worst, 5}, -1, actual.options().dtype(at::kLong));
    at::Tensor values = at::full({worst, 2}, 0.0, actual.options().dtype(at::kDouble));  // decoded actual, expected
    if (!compute(actual)) return std::tuple{counts, rows, values};
    std::vector<std::uint8_t> sa, se;  // e2m1 unpacked from two a byte
    std::span<const std::byte> a = bytes(actual), e = bytes(expected);
    int element_bytes = static_cast<int>(actual.element_size());
    if (f != nullptr && f->bits() <= 8) {
      const FormatId id = *parse_format(f->name);
      a = std::as_bytes(codes_of(actual, id, "actual", sa));
      e = std::as_bytes(codes_of(expected, id, "expected", se));
      element_bytes = 1;
    }
    const CodeComparison c = compare_codes(a, e, f, element_bytes,
                                           {.ulps = static_cast<std::uint64_t>(ulps), .worst = static_cast<std::size_t>(worst)});
    const std::uint64_t n[7] = {c.count, c.bit_equal, c.differ, c.signed_zero, c.nan_payload, c.beyond, 0};
    auto* pc = counts.mutable_data_ptr<std::int64_t>();
    for (int i = 0; i < 6; ++i) pc[i] = static_cast<std::int64_t>(n[i]);
    pc[6] = signed_ulps(c.max_ulps);
    auto* pr = rows.mutable_data_ptr<std::int64_t>();
    auto* pv = values.mutable_data_ptr<double>();
    for (std::size_t i = 0; i < c.worst.size(); ++i) {
      const ElementDiff& d = c.worst[i];
      // codes up to 64 bits travel as int64 bits (f64's codes: two's complement)
      const std::int64_t row[5] = {static_cast<std::int64_t>(d.index), static_cast<std::int64_t>(d.actual),
                                   static_cast<std::int64_t>(d.expected), signed_ulps(d.ulps),
                                   static_cast<std::int64_t>(d.match)};
      std::copy(row, row + 5, pr + 5 * i);
      if (f != nullptr) pv[2 * i] = decode_f64(d.actual, *f), pv[2 * i + 1] = decode_f64(d.expected, *f);
    }
    return std::tuple{counts, rows, values};
  });
}

}  // namespace fp8q::torch
