// fp8q/numerics/isa.hpp: which instruction-set path a kernel family takes, in every module.
//
// Each ISA's kernels live in their own translation units compiled with that ISA's flags
// (<module>/src/isa/); the choice is made at run time, from the CPU. The default build
// therefore runs on any x86-64 (or aarch64) CPU. FP8Q_ISA=generic|avx2|avx512|neon in the
// environment caps the choice, and an option of the call (BulkOptions::isa, GemmOptions::isa,
// HistogramOptions::isa, LayoutOptions::isa, measure_error's isa) forces one (for tests and
// benchmarks; never needed for correctness).
// Every module picks its kernel with dispatch() below: one table, one fallback rule.
#pragma once

#include <array>
#include <optional>
#include <string_view>

namespace fp8q {

enum class Isa : unsigned char {
  kGeneric,  // portable C++: the scalar reference, element by element
  kAvx2,     // AVX2 + FMA + F16C
  kAvx512,   // AVX-512 F + BW
  kNeon,     // aarch64 Advanced SIMD
};

inline constexpr std::array<Isa, 4> kAllIsas = {Isa::kGeneric, Isa::kAvx2, Isa::kAvx512, Isa::kNeon};

std::string_view isa_name(Isa isa);
// Whether this binary has the path and this CPU (and OS) can run it.
bool isa_supported(Isa isa);
// The best supported path, capped by FP8Q_ISA (in the order above); computed once. Throws
// std::invalid_argument when FP8Q_ISA holds anything but generic, avx2, avx512 or neon.
Isa active_isa();
// A forced ISA where it is supported (else std::invalid_argument naming `option`), or
// active_isa().
Isa resolve_isa(const std::optional<Isa>& forced, std::string_view option);

// Whose CPU this is (the CPUID vendor string on x86-64; kOther elsewhere), for the few kernel
// families whose faster text differs between the makers at one ISA (docs/performance.md,
// "Kernels per CPU"). Every text gives the same bits.
enum class CpuVendor : unsigned char { kIntel, kAmd, kOther };
CpuVendor cpu_vendor();
std::string_view cpu_vendor_name(CpuVendor v);  // "intel", "amd", "other"

// The kernel of one family for `isa` (a supported one, as resolve_isa gives): its own entry,
// else the next narrower one it implies, AVX-512 -> AVX2 -> generic and NEON -> generic, the
// one fallback rule of every family. Each entry is a callable that gives the kernel (empty: a
// null pointer, or a kernel that tests false, where the binary, the CPU or the family lacks
// it); only the entries tried are called, so no ISA's translation unit runs on a CPU without it.
template <class Generic, class Avx2, class Avx512, class Neon>
auto dispatch(Isa isa, Generic generic, Avx2 avx2, Avx512 avx512, Neon neon) -> decltype(generic()) {
  using K = decltype(generic());
  if (isa == Isa::kAvx512)
    if (K k = avx512()) return k;
  if (isa == Isa::kAvx512 || isa == Isa::kAvx2)
    if (K k = avx2()) return k;
  if (isa == Isa::kNeon)
    if (K k = neon()) return k;
  return generic();
}
// An entry a family does not have.
inline constexpr auto kNoKernel = [] { return nullptr; };

}  // namespace fp8q
