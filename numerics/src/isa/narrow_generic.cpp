// The portable path: the scalar reference, element by element. Every other path is tested
// against it; on a CPU without AVX2 it is the one that runs.
#include <cstring>

#include "fp8q/numerics/convert.hpp"
#include "isa/narrow.hpp"

namespace fp8q::detail {
namespace {

template <Source S>
bool run(const void* in, std::uint8_t* out, std::size_t n, std::uint64_t index0, const NarrowParams& p) {
  constexpr std::size_t kBytes = S == Source::kF32 ? 4 : 2;
  const auto* src = static_cast<const unsigned char*>(in);
  bool nan_unrepresentable = false;
  for (std::size_t i = 0; i < n; ++i) {
    std::uint64_t code = 0;
    std::memcpy(&code, src + i * kBytes, kBytes);  // little-endian host (x86-64)
    const Converted r = convert_one(code, *p.from, *p.to, *p.options, index0 + i);
    out[i] = static_cast<std::uint8_t>(r.code);
    nan_unrepresentable = nan_unrepresentable || r.nan_unrepresentable;
  }
  return nan_unrepresentable;
}

}  // namespace

NarrowFn narrow_kernel_generic(Source s, Rounding) {
  switch (s) {
    case Source::kF32: return &run<Source::kF32>;
    case Source::kBF16: return &run<Source::kBF16>;
    case Source::kF16: return &run<Source::kF16>;
  }
  return nullptr;
}

}  // namespace fp8q::detail
