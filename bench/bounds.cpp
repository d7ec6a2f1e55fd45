// Bounds of the benchmark cases per CPU family (bench/bounds.hpp), as docs/performance.md
// derives them from instruction counts: a GEMM kernel's arithmetic instructions per multiply-add
// against sgemm's one FMA, at the rates the CPU retires them; stochastic rounding's Philox
// instructions per element against the copy. The other casts are bound by memory, which their
// copy baseline measures rather than bounds (a narrowing cast can beat the narrowing copy).
#include "bounds.hpp"

#include <regex>
#include <vector>

#include "fp8q/numerics/isa.hpp"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace fp8q::bench {

CpuFamily cpu_family() {
#if defined(__x86_64__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return CpuFamily::kOther;
  const unsigned base = (a >> 8) & 0xF;
  const unsigned family = base == 0xF ? base + ((a >> 20) & 0xFF) : base;
  // FP8Q_ISA caps the kernels, so the bounds too
  if (active_isa() == Isa::kAvx2) return CpuFamily::kAvx2;
  if (active_isa() != Isa::kAvx512) return CpuFamily::kOther;
  const CpuVendor v = cpu_vendor();
  if (v == CpuVendor::kAmd && family == 26) return CpuFamily::kAmdZen5;
  if (v == CpuVendor::kAmd && family == 25) return CpuFamily::kAmdZen4;
  if (v == CpuVendor::kIntel && __builtin_cpu_supports("avx512bf16")) return CpuFamily::kIntelAvx512Bf16;
#endif
  return CpuFamily::kOther;
}

std::string_view cpu_family_name(CpuFamily f) {
  switch (f) {
    case CpuFamily::kAmdZen4: return "AMD Zen 4";
    case CpuFamily::kAmdZen5: return "AMD Zen 5";
    case CpuFamily::kIntelAvx512Bf16: return "Intel Sapphire/Emerald/Granite Rapids";
    case CpuFamily::kAvx2: return "x86-64 running the AVX2 kernels";
    case CpuFamily::kOther: return "other";
  }
  return "other";
}

namespace {

enum : unsigned { kZen4 = 1, kZen5 = 2, kIntel = 4, kAvx2 = 8, kAmd = kZen4 | kZen5, kX86 = kAmd | kIntel | kAvx2 };

struct Entry {
  const char* pattern;  // over the case name
  unsigned families;
  double ratio;
  const char* held_by;
};

// First match wins.
const std::vector<Entry>& entries() {
  static const std::vector<Entry> e = {
      {"^convert/f32_to_e5m2/sr_", kZen4, 0.17,
       "Philox4x32-10 per element: ~180 zmm instructions per 16 elements at 2 a cycle ('Stochastic rounding')"},
      {"^gemm/(fp32_sequential|systolic)[^/]*_avx512bf16/", kAmd, 2.0,
       "vdpbf16ps: two K steps an instruction at sgemm's FMA rate ('Kernels per CPU')"},
      {"^gemm/(fp32_sequential|systolic)[^/]*_avx512bf16/", kIntel, 0.5,
       "vdpbf16ps retires at half the FMA's rate here ('Kernels per CPU')"},
      {"^gemm/(fp32_sequential|systolic)[^/]*_avx(512|2)/", kX86, 1.0,
       "the FMA kernel: one vfmadd231ps per K step, as sgemm ('Kernels per CPU')"},
      {"^gemm/(fp32_sequential|systolic)[^_/]*/", kAmd, 2.0,
       "this CPU's kernel, vdpbf16ps: two K steps an instruction at sgemm's FMA rate ('Kernels per CPU')"},
      {"^gemm/(fp32_sequential|systolic)[^_/]*/", kIntel | kAvx2, 1.0,
       "this CPU's kernel, the FMA kernel: one vfmadd231ps per K step, as sgemm ('Kernels per CPU')"},
      {"^gemm/mxfp8_trainium3_[^/]*_gaussian/", kAmd, 0.29,
       "7 zmm operations per 32 multiply-adds (tiles whose sums are exact) against sgemm's 16 per FMA "
       "('Trainium3's MXFP8 path')"},
      {"^gemm/mxfp8_trainium3_", kAmd, 0.20,
       "10 zmm operations per 32 multiply-adds against sgemm's 16 per FMA ('Trainium3's MXFP8 path')"},
      {"^gemm/fused_hopper/", kAmd, 0.25,
       "4 zmm operations per 16 truncated products (scale, multiply, truncate, add) against one FMA "
       "('The fused_hopper kernel and its bound')"},
  };
  return e;
}

unsigned bit_of(CpuFamily f) {
  switch (f) {
    case CpuFamily::kAmdZen4: return kZen4;
    case CpuFamily::kAmdZen5: return kZen5;
    case CpuFamily::kIntelAvx512Bf16: return kIntel;
    case CpuFamily::kAvx2: return kAvx2;
    case CpuFamily::kOther: return 0;
  }
  return 0;
}

}  // namespace

std::optional<Bound> bound_of(std::string_view case_name, CpuFamily f) {
  const unsigned bit = bit_of(f);
  const std::string name(case_name);
  for (const Entry& e : entries()) {
    if ((e.families & bit) == 0 || !std::regex_search(name, std::regex(e.pattern))) continue;
    if (e.ratio == 0) return std::nullopt;
    return Bound{e.ratio, e.held_by};
  }
  return std::nullopt;
}

}  // namespace fp8q::bench
