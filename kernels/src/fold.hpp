// Internal: the last steps of gemm.hpp's definition, on rows of a fast path's fp32 results, in
// host fp32 arithmetic (the caller holds ScopedDefaultFpEnv, so each operation is the correctly
// rounded one the reference computes in integers). Not installed.
#pragma once

#include <algorithm>
#include <cstddef>
#include <limits>
#include <vector>

#include "operands.hpp"

namespace fp8q::detail {

// A finished segment's partial sums p (the model over K, or over 128-K block j under block
// scaling) folded into out, for rows [m0, m0 + rows) and columns [n0, n1):
//   block scaling: out = fp32(out + fp32(p * fp32(scale_inv_a[m, j] * scale_inv_b[j, n / 128])))
//   otherwise:     out = p  (the one segment is the whole model, its accumulator input included)
// partial and out are row-major with N = g.n columns, row 0 = m0.
inline void fold_segment(const GemmArgs& g, std::size_t m0, std::size_t rows, std::size_t n0, std::size_t n1,
                         std::size_t j, const float* partial, float* out) {
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t n = n0; n < n1; ++n) {
      const float p = partial[r * g.n + n];
      float& d = out[r * g.n + n];
      if (block_scaled(g)) {
        const float s = block_scale_a(g, m0 + r, j) * block_scale_b(g, j, n);
        d = d + p * s;
      } else {
        d = p;
      }
    }
}

// out = the accumulator input C0 (gemm.hpp: c[m, n] when C is the accumulator input, else +0),
// for rows [m0, m0 + rows): where the model's (or, under block scaling, the partials') sum starts.
inline void start_rows(const GemmArgs& g, std::size_t m0, std::size_t rows, float* out) {
  if (!c_accumulates(g)) {
    std::fill(out, out + rows * g.n, 0.0f);
    return;
  }
  std::copy_n(g.c.data() + m0 * g.n, rows * g.n, out);
}

// Plain scales (or NVFP4's alpha), C (epilogue role), bias and the canonical NaN, for rows
// [m0, m0 + rows): d = fp32(fp32(fp32(d * fp32(s_a[m] * s_b[n])) + c) + bias), one step over a
// row at a time.
inline void epilogue_rows(const GemmArgs& g, std::size_t m0, std::size_t rows, float* out) {
  // without plain scales the factor is 1 * 1 and d * 1 = d: skipped
  const bool scaled = plain_scaled(g.a) || plain_scaled(g.b);
  const std::size_t N = g.n;
  std::vector<float> sb(scaled ? N : 0);
  for (std::size_t n = 0; n < sb.size(); ++n) sb[n] = plain_scale_b(g, n);
  const float nan = canonical(std::numeric_limits<float>::quiet_NaN());
  const float alpha = nvfp4_scaled(g) ? nvfp4_alpha(g) : 1.0f;
  for (std::size_t r = 0; r < rows; ++r) {
    const std::size_t m = m0 + r;
    float* d = out + r * N;
    if (nvfp4_scaled(g))
      for (std::size_t n = 0; n < N; ++n) d[n] = d[n] * alpha;
    if (scaled) {
      const float sa = plain_scale_a(g, m);
      for (std::size_t n = 0; n < N; ++n) d[n] = d[n] * (sa * sb[n]);
    }
    if (c_in_epilogue(g)) {
      const float* c = g.c.data() + m * N;
      for (std::size_t n = 0; n < N; ++n) d[n] = d[n] + c[n];
    }
    if (!g.bias.empty())
      for (std::size_t n = 0; n < N; ++n) d[n] = d[n] + g.bias[n];
    for (std::size_t n = 0; n < N; ++n) d[n] = d[n] != d[n] ? nan : d[n];
  }
}

}  // namespace fp8q::detail
