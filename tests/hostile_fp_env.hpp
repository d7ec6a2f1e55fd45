// The tests' hostile floating-point environment, set for a scope and restored: a rounding mode
// other than nearest-even and flush-to-zero (x86: MXCSR's FTZ and DAZ; aarch64: FPCR.FZ, which
// flushes subnormal inputs and results alike). fp8q's results must not change under it
// (docs/numerics.md, "The bulk paths and how they are checked").
#pragma once

#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

namespace fp8q::test {

enum class HostileRounding { kKeep, kTowardZero, kUp };

// The FP control register (MXCSR or FPCR), read and written.
inline std::uint64_t fp_control() {
#if defined(__x86_64__) || defined(__i386__)
  return _mm_getcsr();
#elif defined(__aarch64__)
  std::uint64_t v;
  asm volatile("mrs %0, fpcr" : "=r"(v));
  return v;
#else
  return 0;
#endif
}

inline void set_fp_control(std::uint64_t v) {
#if defined(__x86_64__) || defined(__i386__)
  _mm_setcsr(static_cast<unsigned>(v));
#elif defined(__aarch64__)
  asm volatile("msr fpcr, %0" : : "r"(v));
#else
  (void)v;
#endif
}

// `base` with the rounding mode r and flush-to-zero set.
inline std::uint64_t hostile_control(std::uint64_t base, HostileRounding r) {
#if defined(__x86_64__) || defined(__i386__)
  std::uint64_t v = base | 0x8040u;  // FTZ (bit 15), DAZ (bit 6)
  if (r == HostileRounding::kTowardZero) v = (v & ~0x6000u) | 0x6000u;  // RC = 11
  if (r == HostileRounding::kUp) v = (v & ~0x6000u) | 0x4000u;          // RC = 10
  return v;
#elif defined(__aarch64__)
  std::uint64_t v = base | (std::uint64_t{1} << 24);                       // FZ
  if (r == HostileRounding::kTowardZero) v = (v & ~(std::uint64_t{3} << 22)) | (std::uint64_t{3} << 22);  // RZ
  if (r == HostileRounding::kUp) v = (v & ~(std::uint64_t{3} << 22)) | (std::uint64_t{1} << 22);          // RP
  return v;
#else
  (void)r;
  return base;
#endif
}

// Whether this architecture's hostile environment is real (the tests say so where it is not).
inline constexpr bool kHaveHostileFpEnv =
#if defined(__x86_64__) || defined(__i386__) || defined(__aarch64__)
    true;
#else
    false;
#endif

class ScopedHostileFpEnv {
 public:
  explicit ScopedHostileFpEnv(HostileRounding r = HostileRounding::kTowardZero)
      : saved_(fp_control()), hostile_(hostile_control(saved_, r)) {
    set_fp_control(hostile_);
  }
  ~ScopedHostileFpEnv() { set_fp_control(saved_); }
  ScopedHostileFpEnv(const ScopedHostileFpEnv&) = delete;
  ScopedHostileFpEnv& operator=(const ScopedHostileFpEnv&) = delete;
  std::uint64_t hostile() const { return hostile_; }

 private:
  std::uint64_t saved_, hostile_;
};

}  // namespace fp8q::test
