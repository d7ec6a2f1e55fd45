// numerics/bulk.hpp vs numerics/convert.hpp on ALL 2^32 fp32 inputs: the SIMD narrowing
// kernel of every ISA this CPU runs, nearest-even, each narrow format and overflow policy,
// equals the scalar reference for every bit pattern (NaNs, Infs, subnormals included).
// Long (about a minute per case): CTest label `exhaustive`. FP8Q_EXHAUSTIVE_STRIDE=s tests every
// s-th block of 2^20 consecutive inputs only (an emulated target's subset; s = 1: all).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fp8q/numerics/bulk.hpp"
#include "fp8q/numerics/convert.hpp"

namespace fp8q {
namespace {

struct Case {
  FormatId format;
  Overflow overflow;
};

class AllFp32Inputs : public ::testing::TestWithParam<Case> {};

TEST_P(AllFp32Inputs, FastPathEqualsScalarNearestEven) {
  const Format& to = format_of(GetParam().format);
  ConvertOptions o;
  o.overflow = GetParam().overflow;
  o.nan = NanPolicy::kZero;
  std::vector<Isa> isas;
  for (Isa isa : kAllIsas)
    if (isa != Isa::kGeneric && isa_supported(isa)) isas.push_back(isa);
  if (isas.empty()) GTEST_SKIP() << "no SIMD path on this CPU: the generic path is the reference itself";

  constexpr std::uint64_t kBlock = 1u << 20;
  const char* stride_env = std::getenv("FP8Q_EXHAUSTIVE_STRIDE");
  const std::uint64_t stride = stride_env != nullptr ? std::strtoull(stride_env, nullptr, 10) : 1;
  ASSERT_GE(stride, 1u) << "FP8Q_EXHAUSTIVE_STRIDE='" << stride_env << "' is not a positive integer";
  std::vector<std::uint32_t> in(kBlock);
  std::vector<std::uint8_t> want(kBlock), fast(kBlock);
  for (std::uint64_t start = 0; start < (std::uint64_t{1} << 32); start += stride * kBlock) {
    for (std::uint64_t i = 0; i < kBlock; ++i) {
      in[i] = static_cast<std::uint32_t>(start + i);
      want[i] = static_cast<std::uint8_t>(convert_one(in[i], kF32, to, o, i).code);
    }
    for (Isa isa : isas) {
      convert(std::as_bytes(std::span(in)), kF32, std::as_writable_bytes(std::span(fast)), to, o, {1, isa});
      for (std::uint64_t i = 0; i < kBlock; ++i)
        if (fast[i] != want[i])
          FAIL() << isa_name(isa) << ": fp32 0x" << std::hex << in[i] << " -> " << to.name << " gave 0x"
                 << int(fast[i]) << ", reference 0x" << int(want[i]);
    }
  }
}

std::vector<Case> cases() {
  std::vector<Case> v;
  for (FormatId id : kNarrowFormats)
    if (id != FormatId::kE8M0)  // e8m0 has no SIMD path
      for (Overflow o : {Overflow::kSaturate, Overflow::kInfOrNan}) v.push_back({id, o});
  return v;
}

INSTANTIATE_TEST_SUITE_P(Rne, AllFp32Inputs, ::testing::ValuesIn(cases()), [](const auto& info) {
  return std::string(format_of(info.param.format).name) + "_" +
         (info.param.overflow == Overflow::kSaturate ? "saturate" : "inf_nan");
});

}  // namespace
}  // namespace fp8q
