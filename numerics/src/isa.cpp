// Run-time choice of the instruction-set path.
#include "fp8q/numerics/isa.hpp"

#include <cstdlib>
#include <stdexcept>
#if defined(FP8Q_HAVE_AVX2)
#include <cpuid.h>
#endif
#include <string>
#include <string_view>

namespace fp8q {

namespace {
#if defined(FP8Q_HAVE_AVX2)
// F16C is CPUID leaf 1, ECX bit 29, read directly (Clang's __builtin_cpu_supports does not
// know the name "f16c") and once: under a hypervisor each CPUID instruction traps.
bool cpu_has_f16c() {
  static const bool has = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & (1u << 29)) != 0;
  }();
  return has;
}
#endif
}  // namespace

CpuVendor cpu_vendor() {
#if defined(FP8Q_HAVE_AVX2)
  static const CpuVendor v = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (!__get_cpuid(0, &eax, &ebx, &ecx, &edx)) return CpuVendor::kOther;
    char name[13] = {};
    for (int i = 0; i < 4; ++i) {  // EBX, EDX, ECX: "GenuineIntel", "AuthenticAMD"
      name[i] = static_cast<char>(ebx >> (8 * i));
      name[4 + i] = static_cast<char>(edx >> (8 * i));
      name[8 + i] = static_cast<char>(ecx >> (8 * i));
    }
    const std::string_view n(name, 12);
    return n == "GenuineIntel" ? CpuVendor::kIntel : n == "AuthenticAMD" ? CpuVendor::kAmd : CpuVendor::kOther;
  }();
  return v;
#else
  return CpuVendor::kOther;
#endif
}

std::string_view cpu_vendor_name(CpuVendor v) {
  switch (v) {
    case CpuVendor::kIntel: return "intel";
    case CpuVendor::kAmd: return "amd";
    case CpuVendor::kOther: return "other";
  }
  return "?";
}

std::string_view isa_name(Isa isa) {
  switch (isa) {
    case Isa::kGeneric: return "generic";
    case Isa::kAvx2: return "avx2";
    case Isa::kAvx512: return "avx512";
    case Isa::kNeon: return "neon";
  }
  return "?";
}

bool isa_supported(Isa isa) {
  switch (isa) {
    case Isa::kGeneric: return true;
#if defined(FP8Q_HAVE_AVX2)
    // __builtin_cpu_supports consults CPUID and, for AVX and AVX-512, whether the OS saves
    // the wider registers (XCR0).
    case Isa::kAvx2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_has_f16c();
#endif
#if defined(FP8Q_HAVE_AVX512)
    case Isa::kAvx512: return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
#endif
#if defined(FP8Q_HAVE_NEON)
    case Isa::kNeon: return true;  // Advanced SIMD is part of every aarch64 CPU
#endif
    default: return false;
  }
}

Isa resolve_isa(const std::optional<Isa>& forced, std::string_view option) {
  if (!forced) return active_isa();
  if (!isa_supported(*forced))
    throw std::invalid_argument(std::string(option) + ": instruction set " + std::string(isa_name(*forced)) +
                                " is not available here");
  return *forced;
}

Isa active_isa() {
  static const Isa chosen = [] {
    Isa cap = kAllIsas.back();
    if (const char* env = std::getenv("FP8Q_ISA")) {
      bool known = false;
      for (Isa i : kAllIsas)
        if (isa_name(i) == env) cap = i, known = true;
      if (!known)
        throw std::invalid_argument("FP8Q_ISA='" + std::string(env) + "' is not one of: generic avx2 avx512 neon");
    }
    Isa best = Isa::kGeneric;
    for (Isa i : kAllIsas)
      if (i <= cap && isa_supported(i)) best = i;
    return best;
  }();
  return chosen;
}

}  // namespace fp8q
