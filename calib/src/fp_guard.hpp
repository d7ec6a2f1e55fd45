// Internal: the IEEE default FP environment for the duration of a calibration, so that the
// double arithmetic of the calibrators (and the fp32 products x * scale) give the same bits
// whatever rounding mode, flush-to-zero or denormals-are-zero the caller has set.
#pragma once

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#else
#include <cfenv>
#endif

namespace fp8q::calib::detail {

class DefaultFpEnv {
 public:
#if defined(__x86_64__) || defined(__i386__)
  // MXCSR 0x1F80: round to nearest-even, no FTZ, no DAZ, every exception masked.
  DefaultFpEnv() : saved_(_mm_getcsr()) { _mm_setcsr(0x1F80); }
  ~DefaultFpEnv() { _mm_setcsr(saved_); }
#else
  DefaultFpEnv() { std::fegetenv(&saved_); std::fesetenv(FE_DFL_ENV); }
  ~DefaultFpEnv() { std::fesetenv(&saved_); }
#endif
  DefaultFpEnv(const DefaultFpEnv&) = delete;
  DefaultFpEnv& operator=(const DefaultFpEnv&) = delete;

 private:
#if defined(__x86_64__) || defined(__i386__)
  unsigned saved_;
#else
  std::fenv_t saved_;
#endif
};

}  // namespace fp8q::calib::detail
