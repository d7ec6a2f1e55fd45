"""Every operator takes inputs of any strides, as torch's own ops do: a non-contiguous input
gives the bits its ``.contiguous()`` gives and is left as it was; an ``out=`` must be contiguous
(the op writes it in place)."""

from __future__ import annotations

import pytest
import torch

import fp8q
from op_samples import op_samples

_BITS = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def strided(t: torch.Tensor) -> torch.Tensor:
    """t's values in a tensor whose last dimension has stride 2 (every other element of one twice
    as wide, the others set to a pattern that would show if read)."""
    bits = t.view(_BITS[t.element_size()])
    wide = torch.stack([bits, torch.full_like(bits, 0x55)], dim=-1)
    return wide[..., 0].view(t.dtype)


def bits(value: object) -> object:
    """A result as comparable bits: tensors as integer views, tuples element by element."""
    if isinstance(value, torch.Tensor):
        return value.reshape(-1).contiguous().view(_BITS[value.element_size()]).tolist()
    if isinstance(value, (tuple, list)):
        return [bits(v) for v in value]
    return value


@pytest.mark.parametrize("op, args, kwargs", op_samples(), ids=lambda v: getattr(v, "__name__", None))
def test_strided_inputs_give_the_contiguous_bits(op, args, kwargs):
    tensors = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor) and a.numel() > 1 and a.dim() >= 1]
    assert tensors, "every sample reads a tensor of more than one element"
    want_out = {k: v.clone() for k, v in kwargs.items() if isinstance(v, torch.Tensor)}
    want = op(*args, **{**kwargs, **want_out})
    for i in tensors:  # one strided input at a time, then all of them
        for chosen in ({i}, set(tensors)):
            views = [strided(a) if j in chosen else a for j, a in enumerate(args)]
            assert not any(views[j].is_contiguous() for j in chosen)
            before = [v.clone() for v in views if isinstance(v, torch.Tensor)]
            out = {k: torch.empty_like(v) for k, v in want_out.items()}
            got = op(*views, **{**kwargs, **out})
            assert bits(got) == bits(want)
            assert [bits(out[k]) for k in out] == [bits(want_out[k]) for k in out]
            assert bits([v for v in views if isinstance(v, torch.Tensor)]) == bits(before)


def test_python_api_takes_strided_inputs():
    x = torch.randn(64, 96, generator=torch.Generator().manual_seed(1)) * 40
    xt = x.t()  # [96, 64], strides (1, 96)
    assert torch.equal(fp8q.convert(xt, torch.float8_e4m3fn).view(torch.uint8),
                       fp8q.convert(xt.contiguous(), torch.float8_e4m3fn).view(torch.uint8))
    q, qc = fp8q.quantize(xt, "e4m3fn", granularity="mx"), fp8q.quantize(xt.contiguous(), "e4m3fn", granularity="mx")
    assert torch.equal(q.codes.view(torch.uint8), qc.codes.view(torch.uint8))
    assert torch.equal(q.scales.view(torch.uint8), qc.scales.view(torch.uint8))
    sliced = x[::2, 1::3]  # a slice in both dimensions
    assert torch.equal(fp8q.amax(sliced, "row"), fp8q.amax(sliced.contiguous(), "row"))
    expanded = x[:1].expand(8, 96)  # a stride of 0
    assert torch.equal(fp8q.convert(expanded, "e5m2").view(torch.uint8),
                       fp8q.convert(expanded.contiguous(), "e5m2").view(torch.uint8))


def test_out_must_be_contiguous():
    x = torch.randn(8, 64)
    out = torch.zeros(64, 8, dtype=torch.float8_e4m3fn).t()
    with pytest.raises(ValueError, match=r"out is not contiguous \(shape \[8, 64\], strides \[1, 8\]\); the op writes "
                                         r"it in place"):
        fp8q.convert(x, "e4m3fn", out=out)
    assert not out.view(torch.uint8).any()  # nothing written
