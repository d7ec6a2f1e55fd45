// Internal: which micro-kernel the fp32_sequential / systolic fast path runs (fast_gemm.cpp).
// gemm() takes seq_micro() of its ISA; tests and benchmarks name one to compare kernels in one process.
// Not installed.
#pragma once

#include <span>
#include <string_view>

#include "fp8q/kernels/gemm.hpp"
#include "isa/seq.hpp"
#include "isa/seq_bf16.hpp"

namespace fp8q::detail {

// Exactly one of fp32, wide and pairs is set; the driver packs the operands that kernel reads.
struct SeqMicro {
  SeqKernel fp32 = nullptr;    // fp32 panels, kMr x kNr tiles (seq.hpp)
  SeqKernel wide = nullptr;    // fp32 panels, kMr x kWideNr tiles (seq.hpp)
  PairKernel pairs = nullptr;  // bf16 pair panels, kPairMr x kPairNr tiles (seq_bf16.hpp)
  std::string_view name;       // gemm_path()'s name: "avx512bf16", "avx512", "avx2" or "generic"
  explicit operator bool() const { return fp32 != nullptr || wide != nullptr || pairs != nullptr; }
};

// The kernel for a supported `isa` (fp8q/numerics/isa.hpp's dispatch) on this CPU: at
// AVX-512, the bf16 pair kernel on AMD CPUs that have AVX-512 BF16 (vdpbf16ps makes two K
// steps at the FMA's rate there) and the FMA kernel elsewhere (Intel runs vdpbf16ps at half the
// rate of its two 512-bit FMA ports: docs/performance.md, "Kernels per CPU"); else AVX2 + FMA,
// else the portable one.
SeqMicro seq_micro(Isa isa);
// The kernel gemm_path() names `name`, where this CPU runs it; throws std::invalid_argument
// naming GemmOptions::micro_kernel otherwise.
SeqMicro seq_micro_named(std::string_view name);

// gemm() on the fp32_sequential / systolic fast path with the given kernel (its name is not
// checked: a test may pass its own emulation). Throws std::invalid_argument when these
// arguments do not take that path, and for what gemm() rejects.
void gemm_with(const GemmArgs& args, const GemmOptions& options, const SeqMicro& micro, std::span<float> out);

}  // namespace fp8q::detail
