// Internal: pins the SSE floating-point environment for the duration of a bulk call.
#pragma once

#include <xmmintrin.h>

namespace fp8q::detail {

// Saves MXCSR and sets the IEEE default: round to nearest-even, no flush-to-zero, no
// denormals-are-zero, all exceptions masked (0x1F80). The fast paths' only float operation
// (x * scale, and the F16C widening) then computes exactly what the scalar reference does,
// whatever the caller had set. Restores on destruction.
class ScopedDefaultFpEnv {
 public:
  ScopedDefaultFpEnv() : saved_(_mm_getcsr()) { _mm_setcsr(0x1F80); }
  ~ScopedDefaultFpEnv() { _mm_setcsr(saved_); }
  ScopedDefaultFpEnv(const ScopedDefaultFpEnv&) = delete;
  ScopedDefaultFpEnv& operator=(const ScopedDefaultFpEnv&) = delete;

 private:
  unsigned saved_;
};

}  // namespace fp8q::detail
