"""Element-wise conversions, amaxes and scales: the bulk paths of the C++ library.

Every function calls one ``torch.ops.fp8q`` operator; the bits are the library's (docs/numerics.md),
the same for any ``torch.get_num_threads()`` and any floating-point environment of the caller.

Example:
    >>> import torch, fp8q
    >>> x = torch.tensor([1.0, 300.0, 500.0, -0.001])
    >>> fp8q.convert(x, torch.float8_e4m3fn).float().tolist()
    [1.0, 288.0, 448.0, -0.001953125]
    >>> fp8q.convert(x, "e4m3").dtype  # Trainium2's e4m3 (max 240) travels as uint8 codes
    torch.uint8
    >>> fp8q.convert(fp8q.convert(x, "e4m3"), torch.float32, from_format="e4m3").tolist()
    [1.0, 240.0, 240.0, -0.001953125]
"""

from __future__ import annotations

from typing import Literal, Optional

import torch

from . import _args
from .formats import FormatLike, get, name_of

Rounding = Literal["rne", "rna", "rtz", "rup", "rdn", "rto", "sr"]
Overflow = Literal["saturate", "inf-nan"]
NanPolicy = Literal["error", "zero"]
ScaleOp = Literal["multiply", "divide"]


def convert(
    x: torch.Tensor,
    to: FormatLike,
    *,
    from_format: Optional[FormatLike] = None,
    rounding: Rounding = "rne",
    overflow: Overflow = "saturate",
    nan: NanPolicy = "error",
    seed: int = 0,
    offset: int = 0,
    scale: _args.Scale = None,
    scale_op: ScaleOp = "multiply",
    out: Optional[torch.Tensor] = None,
) -> torch.Tensor:
    """Converts every element of ``x`` into format ``to`` (a name or a dtype).

    ``from_format`` names ``x``'s format when its dtype is ``uint8`` (codes); otherwise the dtype's
    own format is used. ``rounding``: rne (nearest-even) rna rtz rup rdn rto (round to odd) sr
    (stochastic, keyed by ``seed`` and element ``offset + i``). ``overflow``: saturate to
    +/-max finite, or inf-nan (IEEE); a widening conversion (the target holds every value of the
    source, e.g. decoding) is exact under both, Inf kept. ``nan``: what a NaN becomes in a format without one
    (``error`` raises ValueError naming the index, ``zero``). ``scale``: convert fp32(x * scale)
    (``scale_op="divide"``: fp32(x / scale)). e2m1 results are ``float4_e2m1fn_x2``, two codes a
    byte along the last dimension. ``out``: a tensor of the result's dtype and shape to write
    into (and return), so that repeated conversions reuse one buffer instead of fresh pages.

    Example:
        >>> import torch, fp8q
        >>> g = torch.full((4,), 1.1, dtype=torch.bfloat16)
        >>> fp8q.convert(g, "e5m2", rounding="sr", seed=7).float().tolist()
        [1.25, 1.0, 1.0, 1.0]
    """
    _args.tensor(x, "x")
    args = (x, get(to).name, name_of(from_format), _args.text(rounding, "rounding"), _args.text(overflow, "overflow"),
            _args.text(nan, "nan"), _args.u64(seed, "seed"), _args.u64(offset, "offset"), _args.scale_tensor(scale),
            _args.text(scale_op, "scale_op"))
    if out is None:
        return torch.ops.fp8q.convert(*args)
    torch.ops.fp8q.convert_into(*args, out=_args.tensor(out, "out"))
    return out


def amax(x: torch.Tensor, granularity: str = "tensor") -> torch.Tensor:
    """The largest |x| of each block (tensor, row, col, mx, block<R>x<C>) of x's matrix view.

    The result is float32 ``[grid_rows, grid_cols]`` (``[1, 1]`` per tensor); NaN where a block
    holds a NaN, as torch.amax.

    Example:
        >>> import torch, fp8q
        >>> fp8q.amax(torch.tensor([[1.0, -3.0], [2.0, 0.5]]), "row").flatten().tolist()
        [3.0, 2.0]
    """
    return torch.ops.fp8q.amax(_args.tensor(x, "x"), _args.text(granularity, "granularity"))


def hadamard16(x: torch.Tensor, sign_mask: int = 0) -> torch.Tensor:
    """The 16-point random Hadamard transform along x's last dimension (a multiple of 16).

    Per block of 16: y_j = fp32((1/4) sum_i H_ji s_i x_i), H Sylvester's H_16, s_i = -1 where bit
    i of ``sign_mask`` is set: the exact sum rounded once (docs/numerics.md section 5). The
    transform is orthogonal, so applied to both operands of a product along the contraction it
    leaves the product unchanged; NVFP4 training applies it to the weight gradient's operands.
    x float32, bfloat16 or float16; the result float32.

    Example:
        >>> import torch, fp8q
        >>> fp8q.hadamard16(torch.tensor([[4.0] + [0.0] * 15]))[0, :4].tolist()  # one spike spreads out
        [1.0, 1.0, 1.0, 1.0]
        >>> x = torch.randn(2, 32)
        >>> y = fp8q.hadamard16(x, sign_mask=0x1234)
        >>> torch.allclose(y @ y.t(), x @ x.t(), atol=1e-5)
        True
    """
    return torch.ops.fp8q.hadamard16(_args.tensor(x, "x"), _args.integer(sign_mask, "sign_mask"))


def scale_from_amax(
    amax: torch.Tensor,
    format: FormatLike,
    *,
    scale_op: ScaleOp = "multiply",
    margin: int = 0,
    amax_epsilon: float = 0.0,
    power_of_two: bool = False,
) -> torch.Tensor:
    """The scale of each amax: fp32(max / amax) for ``multiply``, scale_inv = fp32(amax / max) for ``divide``.

    amax of 0, Inf or NaN gives 1. ``margin`` divides the scale by 2^margin; ``amax_epsilon`` floors
    the amax (rounded to float32); ``power_of_two`` rounds the scale down (up for scale_inv) to a
    power of two.

    Example:
        >>> import torch, fp8q
        >>> fp8q.scale_from_amax(torch.tensor([448.0, 0.0, 3.5]), "e4m3fn").tolist()
        [1.0, 1.0, 128.0]
    """
    return torch.ops.fp8q.scale_from_amax(
        _args.tensor(amax, "amax"),
        get(format).name,
        _args.text(scale_op, "scale_op"),
        *_args.amax_options(margin, amax_epsilon, power_of_two),
    )


def cast_transpose(
    x: torch.Tensor,
    to: FormatLike,
    *,
    scale: _args.Scale = None,
    rounding: Rounding = "rne",
    overflow: Overflow = "saturate",
    nan: NanPolicy = "error",
    seed: int = 0,
    offset: int = 0,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One pass over a 2-D x: its codes, the codes transposed, and its amax (a 0-d float32 tensor).

    Equal, bit for bit, to ``convert(x)``, ``convert(x).t()`` and ``amax(x)``: what a backward
    pass needs for the input and its transpose.

    Example:
        >>> import torch, fp8q
        >>> q, qt, a = fp8q.cast_transpose(torch.tensor([[1.0, 2.0], [3.0, 4.0]]), "e4m3fn", scale=2.0)
        >>> qt.float().tolist(), a.item()
        ([[2.0, 6.0], [4.0, 8.0]], 4.0)
    """
    return torch.ops.fp8q.cast_transpose(
        _args.tensor(x, "x"),
        get(to).name,
        _args.scale_tensor(scale),
        _args.text(rounding, "rounding"),
        _args.text(overflow, "overflow"),
        _args.text(nan, "nan"),
        _args.u64(seed, "seed"),
        _args.u64(offset, "offset"),
    )
