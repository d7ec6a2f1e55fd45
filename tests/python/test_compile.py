"""The operators under torch.compile and torch.library.opcheck.

Each op has a meta kernel (torch/src/register.cpp), so fake tensors trace it and
``torch.compile(fullgraph=True)`` keeps it in one graph; the compiled function must give
eager's bits. opcheck checks the schema (no input mutated), the fake kernel against the real
one, and that dispatch is consistent.
"""

from __future__ import annotations

import pytest
import torch

import fp8q
import fp8q.training  # noqa: F401  (registers fp8q::bias_grad)
from op_samples import op_samples


def step(x: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """One FP8 linear as a training step runs it: current scaling, cast, GEMM, and the transpose."""
    a = torch.ops.fp8q.amax(x, "tensor")
    s = torch.ops.fp8q.scale_from_amax(a, "e4m3fn", "multiply")
    q, qt, amax = torch.ops.fp8q.cast_transpose(x, "e4m3fn", s.reshape(1))
    wq, ws = torch.ops.fp8q.quantize(w, "e4m3fn", "row")
    y = torch.ops.fp8q.matmul(q, wq.t().contiguous(), "trn3", "", "", "tensor", 1.0 / s.reshape(1), "col",
                              ws.reshape(1, -1), None, None, "", torch.float32, False)
    g = torch.ops.fp8q.convert(y, "e5m2", "", "sr", "saturate", "error", 7, 0, None, "multiply")
    return y * 2, qt, amax, g


def test_compile_fullgraph_gives_eager_bits():
    torch._dynamo.reset()
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(64, 128, generator=gen)
    w = torch.randn(32, 128, generator=gen)
    eager = step(x, w)
    compiled = torch.compile(step, fullgraph=True, backend="inductor")(x, w)
    for e, c in zip(eager, compiled):
        assert e.dtype == c.dtype and e.shape == c.shape
        assert torch.equal(e.reshape(-1).view(torch.uint8), c.reshape(-1).view(torch.uint8))


def test_compile_the_python_api():
    torch._dynamo.reset()

    def f(x: torch.Tensor) -> torch.Tensor:
        q = fp8q.quantize(x, "e4m3fn", granularity="mx", mx_rule="trainium3")
        return fp8q.dequantize(q) + fp8q.convert(x, torch.float8_e5m2, scale=2.0).float()

    x = torch.randn(8, 64, generator=torch.Generator().manual_seed(1))
    assert torch.equal(torch.compile(f, fullgraph=True, backend="aot_eager")(x), f(x))


def test_compile_with_out():
    torch._dynamo.reset()

    def f(x: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
        fp8q.convert(x * 2, "e5m2", out=out)
        return out.float() + 1

    x = torch.randn(8, 64, generator=torch.Generator().manual_seed(2))
    o1, o2 = torch.empty(8, 64, dtype=torch.float8_e5m2), torch.empty(8, 64, dtype=torch.float8_e5m2)
    assert torch.equal(torch.compile(f, fullgraph=True, backend="inductor")(x, o1), f(x, o2))
    assert torch.equal(o1.view(torch.uint8), o2.view(torch.uint8))


@pytest.mark.parametrize("op, args, kwargs", op_samples(), ids=lambda v: getattr(v, "__name__", None))
def test_opcheck(op, args, kwargs):
    torch.library.opcheck(op, args, kwargs, test_utils=("test_schema", "test_faketensor", "test_aot_dispatch_static"))


def test_compile_calibration_from_a_new_histogram():
    torch._dynamo.reset()

    def f(x: torch.Tensor) -> torch.Tensor:
        h = fp8q.calib.Histogram(bins=64, tail=8).observe(x)
        return h.calibrate("mse", "e4m3fn")

    x = torch.randn(1000, generator=torch.Generator().manual_seed(4))
    assert torch.compile(f, fullgraph=True)(x).item() == f(x).item()
