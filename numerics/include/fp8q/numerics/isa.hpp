// fp8q/numerics/isa.hpp: which instruction-set path the bulk conversions take.
//
// Each ISA's kernels live in their own translation units compiled with that ISA's flags
// (<module>/src/isa/); the choice is made once, at run time, from the CPU. The default build
// therefore runs on any x86-64 (or aarch64) CPU. FP8Q_ISA=generic|avx2|avx512|neon in the
// environment caps the choice (for tests and benchmarks; never needed for correctness).
#pragma once

#include <array>
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

}  // namespace fp8q
