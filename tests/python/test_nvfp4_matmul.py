"""The NVFP4 GEMM (profile ocp, exact_block:16) against an independent restatement.

What is restated (docs/numerics.md section 8, "NVFP4"): each product is code x block scale of
x times code x block scale of W, exactly; each block of 16 along K is summed exactly and
rounded once to float32; the blocks are added in K order in float32; the result is multiplied
by alpha = fp32(1 / fp32(S_x * S_w)), the alpha vLLM gives its NVFP4 GEMM. The codes are
decoded by ml_dtypes' float4_e2m1fn and the scales by torch's float8_e4m3fn, not by fp8q.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
import torch

import fp8q
from fp8q.formats import unpack_fp4


def _values(q: fp8q.QuantizedTensor) -> torch.Tensor:
    """Element values times their block scales, float64 (exact), [rows, K]."""
    codes = unpack_fp4(q.codes).numpy().astype(np.uint8)
    elems = torch.from_numpy(codes.view(ml_dtypes.float4_e2m1fn).astype(np.float64))
    scales = q.scales.to(torch.float64)
    rows, k = elems.shape
    br = 16 if q.granularity == "nvfp4_16x16" else 1
    per_elem = scales.repeat_interleave(br, 0)[:rows].repeat_interleave(16, 1)[:, :k]
    return elems * per_elem


def _independent_linear(x: fp8q.QuantizedTensor, w: fp8q.QuantizedTensor) -> torch.Tensor:
    xv, wv = _values(x), _values(w)
    m, k = xv.shape
    n = wv.shape[0]
    blocks = (xv.view(m, 1, k // 16, 16) * wv.view(1, n, k // 16, 16)).sum(-1)  # exact in float64
    t = blocks.to(torch.float32)
    acc = torch.zeros(m, n, dtype=torch.float32)
    for j in range(k // 16):
        acc = acc + t[:, :, j]
    alpha = torch.tensor(1.0, dtype=torch.float32) / (x.global_scale * w.global_scale)
    return acc * alpha


@pytest.mark.parametrize("w_granularity", ["nvfp4", "nvfp4_16x16"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_linear_equals_the_restatement(w_granularity: str, seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    m, n, k = 7, 19, 16 * (3 + seed)
    x = torch.randn(m, k, generator=g) * torch.logspace(-3, 3, k).to(torch.float32)
    w = torch.randn(n, k, generator=g).to(torch.bfloat16)
    xq = fp8q.quantize(x, "e2m1", granularity="nvfp4")
    wq = fp8q.quantize(w, "e2m1", granularity=w_granularity)
    got = fp8q.linear(xq, wq, profile="ocp")
    want = _independent_linear(xq, wq)
    assert torch.equal(got.view(torch.int32), want.view(torch.int32))
    # the same bits through the Trainium-free paths the library offers for this product
    assert torch.equal(fp8q.linear(xq, wq, profile="ocp", model="exact_block:16").view(torch.int32),
                       got.view(torch.int32))
    # and close to the float product of the dequantized tensors
    ref = fp8q.dequantize(xq) @ fp8q.dequantize(wq).t()
    assert torch.allclose(got, ref, rtol=1e-4, atol=1e-4 * float(ref.abs().max()))


def test_matmul_takes_b_along_k_and_bf16_out() -> None:
    g = torch.Generator().manual_seed(7)
    x = torch.randn(5, 64, generator=g)
    w = torch.randn(9, 64, generator=g)
    xq = fp8q.quantize(x, "e2m1", granularity="nvfp4")
    wq = fp8q.quantize(w, "e2m1", granularity="nvfp4")
    want = fp8q.linear(xq, wq, profile="ocp")
    b = torch.ops.fp8q.matmul(xq.codes, fp8q.formats.unpack_fp4(wq.codes).t().contiguous(), "ocp", "e2m1", "e2m1",
                              "nvfp4", xq.scales, "nvfp4_16x1", wq.scales.t().contiguous(),
                              a_global_scale=xq.global_scale, b_global_scale=wq.global_scale)
    assert torch.equal(b.view(torch.int32), want.view(torch.int32))
    bf = fp8q.linear(xq, wq, profile="ocp", out_dtype=torch.bfloat16)
    assert torch.equal(bf, want.to(torch.bfloat16))


def test_errors_name_the_argument() -> None:
    x = fp8q.quantize(torch.randn(3, 32), "e2m1", granularity="nvfp4")
    w = fp8q.quantize(torch.randn(4, 32), "e2m1", granularity="nvfp4")
    b = fp8q.formats.unpack_fp4(w.codes).t().contiguous()
    args = (x.codes, b, "ocp", "e2m1", "e2m1", "nvfp4", x.scales, "nvfp4_16x1", w.scales.t().contiguous())
    with pytest.raises(ValueError, match="b_global_scale: granularity nvfp4_16x1 needs the operand's NVFP4 global"):
        torch.ops.fp8q.matmul(*args, a_global_scale=x.global_scale)
    with pytest.raises(ValueError, match="a_global_scale is 0; a scale must be finite and > 0"):
        torch.ops.fp8q.matmul(*args, a_global_scale=torch.zeros(1), b_global_scale=w.global_scale)
    with pytest.raises(ValueError, match="a_global_scale is inf"):
        torch.ops.fp8q.matmul(*args, a_global_scale=torch.full((1,), float("inf")), b_global_scale=w.global_scale)
    with pytest.raises(ValueError, match="profile trn3: NVFP4 operands .* trn3 has no NVFP4 matmul"):
        fp8q.linear(x, w, profile="trn3")
    with pytest.raises(ValueError, match="an NVFP4 operand pairs with NVFP4 only"):
        fp8q.linear(x, fp8q.quantize(torch.randn(4, 32), "e2m1"), profile="fp32")
    xs = fp8q.quantize(torch.randn(3, 40), "e2m1", granularity="nvfp4")
    ws = fp8q.quantize(torch.randn(4, 40), "e2m1", granularity="nvfp4")
    with pytest.raises(ValueError, match="K = 40 is not a multiple of 16"):
        fp8q.linear(xs, ws, profile="ocp")
