// The bound each benchmark case is held against on the CPU it runs on: the largest ratio to
// its first baseline that the kernel's instruction mix allows on that CPU family, where
// docs/performance.md derives one.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace fp8q::bench {

enum class CpuFamily {
  kAmdZen4,          // AMD family 25 with AVX-512
  kAmdZen5,          // AMD family 26
  kIntelAvx512Bf16,  // Intel Sapphire / Emerald / Granite Rapids (AVX-512 BF16)
  kAvx2,             // x86-64 running the AVX2 kernels: no AVX-512, or FP8Q_ISA=avx2
  kOther,
};
// From CPUID (vendor, family, AVX-512 BF16) and the ISA fp8q's kernels run (active_isa()).
CpuFamily cpu_family();
std::string_view cpu_family_name(CpuFamily f);

struct Bound {
  double ratio = 0;          // case / baseline at most (0: none derived)
  std::string_view held_by;  // what sets it, and where docs/performance.md derives it
};
// nullopt where no bound is derived for this case on this family.
std::optional<Bound> bound_of(std::string_view case_name, CpuFamily f);

}  // namespace fp8q::bench
