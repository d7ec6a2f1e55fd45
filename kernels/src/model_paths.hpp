// Internal: the fast paths of the models whose sums are not plain fp32 additions
// (exact_block, fused, trainium3_mx), for the dispatch in fast_gemm.cpp. Not installed.
#pragma once

#include <cstddef>
#include <string_view>

#include "fp8q/kernels/gemm.hpp"
#include "fp8q/numerics/isa.hpp"
#include "isa/exact_block.hpp"
#include "isa/fused.hpp"
#include "isa/trn3mx.hpp"

namespace fp8q::detail {

// Rows [m0, m1) of the fp32 result (canonical NaN, before any bf16 conversion) into
// out[(m - m0) * N + n], equal to reference_rows bit for bit. Arguments have passed check_gemm.
using RowsFn = void (*)(const GemmArgs& g, const GemmOptions& o, std::size_t m0, std::size_t m1, float* out);

// A micro-kernel of one family and its ISA's name: AVX-512 where the CPU has it (and neither
// FP8Q_ISA nor GemmOptions::isa says less), else AVX2, else the portable one.
template <class Kernel>
struct PickedKernel {
  Kernel kernel = nullptr;
  std::string_view name;
  explicit operator bool() const { return kernel != nullptr; }
};
template <class Kernel>
PickedKernel<Kernel> pick_kernel(const GemmOptions& o, Kernel (*generic)(), Kernel (*avx2)(), Kernel (*avx512)()) {
  using P = PickedKernel<Kernel>;
  return dispatch(
      resolve_isa(o.isa, "GemmOptions::isa"), [&] { return P{generic(), "generic"}; },
      [&] { return P{avx2(), "avx2"}; }, [&] { return P{avx512(), "avx512"}; }, [] { return P{}; });
}

struct ModelPath {
  RowsFn rows = nullptr;   // nullptr: no fast path for these arguments
  std::string_view isa{};  // "avx512", "avx2" or "generic"
  explicit operator bool() const { return rows != nullptr; }
};

// exact_block:B on plain, block-128 or MX scaling (MX: B divides 32, not dequantized to bf16).
ModelPath exact_block_path(const GemmArgs& g, const GemmOptions& o);
// fused:n:f:rtz|rne[:promoteP] on plain or block-128 scaling (not MX), when a step's integer
// sum fits 31 bits: (n + 1) * 2^(f + 2) <= 2^31.
ModelPath fused_path(const GemmArgs& g, const GemmOptions& o);
// The rows of those two paths with a given micro-kernel (the paths pass the active ISA's; a
// test passes an emulated one). Only for arguments the path takes.
void exact_block_rows_with(XbKernel kernel, const GemmArgs& g, const GemmOptions& o, std::size_t m0, std::size_t m1,
                           float* out);
void fused_rows_with(FuKernel kernel, const GemmArgs& g, const GemmOptions& o, std::size_t m0, std::size_t m1,
                     float* out);
// trainium3_mx (wrapx or 1x32, A1 and A2) on MX or plain operands whose partitions' 4-product
// sums are exact in fp64: bounded by the formats' ranges, or by the codes present, and by the
// spread of the scales within a partition (wrapx).
ModelPath trainium3_mx_path(const GemmArgs& g, const GemmOptions& o);
// Its rows with a given micro-kernel, as exact_block_rows_with.
void trainium3_mx_rows_with(Trn3MxKernel kernel, const GemmArgs& g, const GemmOptions& o, std::size_t m0,
                            std::size_t m1, float* out);

}  // namespace fp8q::detail
