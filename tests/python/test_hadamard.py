"""fp8q.hadamard16 against the definition in exact rational arithmetic (fractions), on blocks
whose sums the fast fp64 path holds and on blocks spread over many binades (the integer path);
its orthogonality; and its errors."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
import torch

import fp8q


def _fp32(q: Fraction) -> float:
    """q rounded to float32, nearest-even, written from the definition (overflow: inf)."""
    if q == 0:
        return 0.0
    sign, a = (-1 if q < 0 else 1), abs(q)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    quantum = Fraction(2) ** (max(e, -126) - 23)
    n = a / quantum
    r = n.numerator // n.denominator
    rest = n - r
    if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and r % 2 == 1):
        r += 1
    v = r * quantum
    return sign * (float(v) if v < Fraction(2) ** 128 else float("inf"))


def _definition(x: torch.Tensor, mask: int) -> torch.Tensor:
    rows = x.reshape(-1, 16).tolist()
    out = []
    for row in rows:
        for j in range(16):
            signs = [-1 if (bin(i & j).count("1") + (mask >> i & 1)) % 2 else 1 for i in range(16)]
            s = sum(sg * Fraction(v) for sg, v in zip(signs, row))
            # a zero sum is -0 only when every term is -0 (IEEE)
            all_negative_zero = all(v == 0 and math.copysign(1.0, sg * v) < 0 for sg, v in zip(signs, row))
            out.append(-0.0 if s == 0 and all_negative_zero else _fp32(s / 4))
    return torch.tensor(out, dtype=torch.float32).reshape(x.shape)


@pytest.mark.parametrize("mask", [0, 0xFFFF, 0x5A3C, 0b1110_1011_1000_1000])
def test_equals_the_definition(mask: int) -> None:
    g = torch.Generator().manual_seed(mask)
    narrow = torch.randn(6, 32, generator=g)
    # blocks over ~60 binades (the fp64 sum would round), subnormals, exact cancellations, -0
    wide = torch.randn(4, 32, generator=g) * torch.pow(2.0, torch.randint(-140, 120, (4, 32), generator=g).float())
    wide[0, :16] = torch.tensor([1e-45, -1e-45, 3e38, -3e38] + [0.0] * 11 + [-0.0])
    wide[1, 16:] = -0.0
    wide[2, :16] = torch.tensor([-0.0, 0.0] * 8)
    for x in (narrow, wide, narrow.to(torch.bfloat16)):
        got = fp8q.hadamard16(x, mask)
        want = _definition(x.float(), mask)
        assert torch.equal(got.view(torch.int32), want.view(torch.int32)), (x.dtype, mask)


def test_orthogonal_and_thread_independent() -> None:
    g = torch.Generator().manual_seed(5)
    x, w = torch.randn(64, 256, generator=g), torch.randn(48, 256, generator=g)
    mask = 0xB00F
    xh, wh = fp8q.hadamard16(x, mask), fp8q.hadamard16(w, mask)
    assert torch.allclose(xh @ wh.t(), x @ w.t(), atol=1e-4)
    assert torch.allclose(xh.norm(dim=1), x.norm(dim=1), rtol=1e-5)
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = fp8q.hadamard16(x, mask)
    finally:
        torch.set_num_threads(threads)
    assert torch.equal(one, xh)


def test_specials() -> None:
    x = torch.zeros(3, 16)
    x[0, 3] = float("nan")
    x[1, 0], x[1, 1] = float("inf"), float("-inf")
    x[2, 5] = float("inf")
    y = fp8q.hadamard16(x)
    assert (y[0].view(torch.int32) == 0x7FC00000).all()  # NaN in: the canonical NaN out
    # output j adds x_0 and (-1)^j x_1: +Inf - Inf (NaN) for even j, +Inf + Inf for odd
    assert (y[1, 0::2].view(torch.int32) == 0x7FC00000).all() and (y[1, 1::2] == float("inf")).all()
    assert torch.isinf(y[2]).all()
    assert np.array_equal(np.sign(y[2].numpy()), [(-1) ** bin(5 & j).count("1") for j in range(16)])


def test_errors_name_the_argument() -> None:
    with pytest.raises(ValueError, match=r"x has shape \[2, 24\]: its last dimension must be a multiple of 16"):
        fp8q.hadamard16(torch.zeros(2, 24))
    with pytest.raises(ValueError, match="sign_mask: 65536 is not a 16-bit mask"):
        fp8q.hadamard16(torch.zeros(16), 1 << 16)
    with pytest.raises(TypeError, match="x has dtype Long"):
        fp8q.hadamard16(torch.zeros(16, dtype=torch.int64))
    with pytest.raises(TypeError, match="sign_mask"):
        fp8q.hadamard16(torch.zeros(16), 1.5)
