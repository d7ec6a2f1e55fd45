"""Quantized matmuls under a device profile's accumulation model (kernels/).

``matmul(a, b)`` computes A [M, K] x B [K, N]; ``linear(x, w)`` computes x W^T with W [N, K]
as ``nn.Linear`` holds it, so both operands are quantized along K and every granularity works
(per tensor, per row / output channel, 1x128 by 128x128 blocks, MX, NVFP4). Profiles: trn2, trn3,
ocp, hopper, fp32; ``model`` overrides the profile's (fp32_sequential, exact_block:32,
systolic:128, fused:32:13:rtz, trainium3_mx:wrapx, ...).

Example:
    >>> import torch, fp8q
    >>> x = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    >>> a = fp8q.quantize(x, "e4m3fn", power_of_two=True)  # scale 64: every code exact
    >>> w = fp8q.quantize(torch.eye(2), "e4m3fn", granularity="row", power_of_two=True)
    >>> fp8q.linear(a, w, profile="hopper").tolist()
    [[1.0, 2.0], [3.0, 4.0]]
    >>> fp8q.linear(fp8q.quantize(x, "e4m3fn"), w, profile="hopper").tolist()  # scale 112: 3 * 112 = 336 ties to 320
    [[1.0, 2.0], [2.857142925262451, 4.0]]
"""

from __future__ import annotations

from typing import Literal, Optional, Union

import torch

from . import _args
from .formats import FormatLike, get, name_of, unpack_fp4
from .quantized import QuantizedTensor

Operand = Union[QuantizedTensor, torch.Tensor]
CRole = Literal["epilogue", "accumulator"]

@torch.compiler.assume_constant_result
def _granularity(name: str, transposed: bool) -> str:
    """The canonical name of a granularity, or of its transpose (one parser: the library's)."""
    return torch.ops.fp8q.granularity(name, transposed)


def _split(x: Operand, name: str, fmt: Optional[FormatLike], transposed: bool = False):
    """Codes, format, granularity (of the operand, or of its transpose), scales and NVFP4 global
    scale of an operand; the GEMM says which granularities it takes (kernels/gemm.hpp)."""
    if isinstance(x, QuantizedTensor):
        if fmt is not None and get(fmt).name != x.format:
            raise ValueError(f"{name} is {x.format} codes but {name}_format says {get(fmt).name}")
        if x.global_scale_op != "divide":
            raise ValueError(f"{name}: the GEMM takes NVFP4's global scale as a divisor (global_scale_op 'divide'), "
                             f"not {x.global_scale_op!r}; requantize it with like='fp8q'")
        return x.codes, x.format, _granularity(x.granularity, transposed), x.scales, x.global_scale
    _args.tensor(x, name)
    return x, name_of(fmt), "tensor", None, None


def matmul(
    a: Operand,
    b: Operand,
    *,
    profile: str,
    model: Optional[str] = None,
    c: Optional[torch.Tensor] = None,
    bias: Optional[torch.Tensor] = None,
    out_dtype: torch.dtype = torch.float32,
    a_format: Optional[FormatLike] = None,
    b_format: Optional[FormatLike] = None,
    trainium: bool = False,
    c_role: CRole = "epilogue",
) -> torch.Tensor:
    """D = epilogue(A x B) for A [M, K] and B [K, N] codes (QuantizedTensors or raw codes).

    A may be quantized per tensor, per row, in 1x128 blocks or MX; B per tensor, per column
    or in 128x128 blocks (for MX B use ``linear``, which takes B^T quantized along K). ``bias`` (float32 [N]) is
    added after the scales; ``out_dtype`` float32 or bfloat16. ``c`` (float32 [M, N]) has the
    role ``c_role`` names: ``"epilogue"`` adds it after the scales (a GEMM's beta C);
    ``"accumulator"`` makes it the accumulator input of the model, D = A B + C as an MMA
    instruction (wgmma, a PSUM tile with accumulate) computes it, in the accumulator's units:
    before the dequantization multiply; under block scaling it starts the sum of the scaled
    partials (docs/numerics.md). ``trainium=True`` runs the emulation of the Trainium
    instructions (same bits).

    Example:
        >>> import torch, fp8q
        >>> a = torch.tensor([[1.0, 2.0]]).to(torch.float8_e4m3fn)
        >>> b = torch.tensor([[3.0], [4.0]]).to(torch.float8_e4m3fn)
        >>> fp8q.matmul(a, b, profile="trn3").tolist()
        [[11.0]]
        >>> x = torch.tensor([[1.5, 0.75]]).to(torch.float8_e4m3fn)
        >>> one = torch.ones(2, 1).to(torch.float8_e4m3fn)
        >>> c = torch.tensor([[8192.0]])
        >>> fp8q.matmul(x, one, profile="hopper", c=c, c_role="accumulator").tolist()  # aligned with 2^13
        [[8193.0]]
        >>> fp8q.matmul(x, one, profile="hopper", c=c).tolist()  # 2.25 + 8192
        [[8194.25]]
    """
    ac, af, asc, ascale, aglobal = _split(a, "a", a_format)
    bc, bf, bsc, bscale, bglobal = _split(b, "b", b_format)
    return torch.ops.fp8q.matmul(ac, bc, *_gemm_args(profile, af, bf, asc, ascale, bsc, bscale, c, bias, model,
                                                     out_dtype, trainium, c_role, aglobal, bglobal))


def _gemm_args(profile, af, bf, asc, ascale, bsc, bscale, c, bias, model, out_dtype, trainium, c_role, aglobal,
               bglobal) -> tuple:
    """The operator's arguments after A and B, each checked for its type (TypeError naming it)."""
    return (_args.text(profile, "profile"), af, bf, asc, ascale, bsc, bscale, _args.optional_tensor(c, "c"),
            _args.optional_tensor(bias, "bias"), "" if model is None else _args.text(model, "model"),
            _args.dtype(out_dtype, "out_dtype"), _args.flag(trainium, "trainium"), _args.text(c_role, "c_role"),
            aglobal, bglobal)


def _transpose_codes(codes: torch.Tensor, fmt: str) -> tuple[torch.Tensor, str]:
    """W [N, K] codes -> B [K, N] codes, one a byte (e2m1 unpacked to uint8): data movement only."""
    if get(fmt).packed:
        return unpack_fp4(codes).t().contiguous(), fmt
    return codes.t().contiguous(), fmt


def linear(
    x: Operand,
    w: Operand,
    bias: Optional[torch.Tensor] = None,
    *,
    profile: str,
    model: Optional[str] = None,
    c: Optional[torch.Tensor] = None,
    out_dtype: torch.dtype = torch.float32,
    x_format: Optional[FormatLike] = None,
    w_format: Optional[FormatLike] = None,
    trainium: bool = False,
    c_role: CRole = "epilogue",
) -> torch.Tensor:
    """y = x W^T (+ bias) for x [M, K] and W [N, K], both quantized along K (any granularity).

    ``c`` and ``c_role`` are as in ``matmul``. NVFP4 operands (``nvfp4`` x, ``nvfp4`` or
    ``nvfp4_16x16`` W, e2m1 on profile ocp) multiply their E4M3FN block scales into each product
    and the result by fp32(1 / fp32(S_x * S_w)) (docs/numerics.md section 8).

    Example:
        >>> import torch, fp8q
        >>> x = fp8q.quantize(torch.ones(1, 64), "e4m3fn", granularity="mx")
        >>> w = fp8q.quantize(torch.full((2, 64), 0.5), "e4m3fn", granularity="mx")
        >>> fp8q.linear(x, w, profile="ocp").tolist()
        [[32.0, 32.0]]
        >>> x4 = fp8q.quantize(torch.ones(1, 32), "e2m1", granularity="nvfp4")
        >>> w4 = fp8q.quantize(torch.full((2, 32), -1.5), "e2m1", granularity="nvfp4_16x16")
        >>> fp8q.linear(x4, w4, profile="ocp").tolist()
        [[-48.0, -48.0]]
    """
    ac, af, asc, ascale, aglobal = _split(x, "x", x_format)
    wc, wf, wsc, wscale, wglobal = _split(w, "w", w_format, transposed=True)
    bc, bf = _transpose_codes(wc, wf or get(wc.dtype).name)
    return torch.ops.fp8q.matmul(ac, bc, *_gemm_args(profile, af, bf, asc, ascale, wsc, _bt_scale(wscale), c, bias,
                                                     model, out_dtype, trainium, c_role, aglobal, wglobal))


def _bt_scale(scale: Optional[torch.Tensor]) -> Optional[torch.Tensor]:
    """W's scales ([N, K] grid) as the GEMM takes B = W^T's: the grid transposed (data movement only)."""
    return scale.t().contiguous() if scale is not None and scale.dim() == 2 else scale
