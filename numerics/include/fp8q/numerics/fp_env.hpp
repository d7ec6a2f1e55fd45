// fp8q/numerics/fp_env.hpp: pins the floating-point environment for a stretch of code, so that
// host fp32 arithmetic there computes the IEEE default whatever the caller has set.
#pragma once

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#else
#include <cfenv>
#endif

namespace fp8q {

// Saves the FP environment and sets the IEEE default: round to nearest-even, no
// flush-to-zero, no denormals-are-zero, exceptions masked (MXCSR 0x1F80 on x86). The fast
// paths' float operations (x * scale, the F16C widening, and the fp32 addition that rounds
// in the nearest-even kernel) then compute exactly what the integer-only scalar reference
// does, whatever the caller had set. Restores on destruction.
class ScopedDefaultFpEnv {
 public:
#if defined(__x86_64__) || defined(__i386__)
  ScopedDefaultFpEnv() : saved_(_mm_getcsr()) { _mm_setcsr(0x1F80); }
  ~ScopedDefaultFpEnv() { _mm_setcsr(saved_); }
#else
  ScopedDefaultFpEnv() { std::fegetenv(&saved_); std::fesetenv(FE_DFL_ENV); }
  ~ScopedDefaultFpEnv() { std::fesetenv(&saved_); }
#endif
  ScopedDefaultFpEnv(const ScopedDefaultFpEnv&) = delete;
  ScopedDefaultFpEnv& operator=(const ScopedDefaultFpEnv&) = delete;

 private:
#if defined(__x86_64__) || defined(__i386__)
  unsigned saved_;
#else
  std::fenv_t saved_;
#endif
};

}  // namespace fp8q
