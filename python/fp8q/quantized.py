"""Quantized tensors: codes plus the scales of their blocks (quant/quantized_tensor.hpp).

Example:
    >>> import torch, fp8q
    >>> w = torch.tensor([[0.5, -1.0, 2.0, 4.0], [8.0, 0.25, -16.0, 1.0]])
    >>> q = fp8q.quantize(w, "e4m3fn", granularity="row")
    >>> q.scales.flatten().tolist()  # scale_inv = amax / 448 per row
    [0.008928571827709675, 0.0357142873108387]
    >>> torch.equal(q.dequantize(), w)
    True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Optional

import torch

from . import _args
from .conversion import NanPolicy, Overflow, Rounding, ScaleOp
from .formats import FormatLike, get

MxRule = Literal["floor", "ceil", "even", "rceil", "trainium3", "compressed-tensors"]
Producer = Literal["fp8q", "compressed-tensors", "modelopt", "modelopt-cuda"]


@dataclass(frozen=True)
class QuantizedTensor:
    """A tensor as element codes and block scales.

    ``codes`` has the original shape (e2m1: ``float4_e2m1fn_x2``, the last dimension halved);
    ``scales`` is ``[grid_rows, grid_cols]`` over the matrix view ``[prod(shape[:-1]), shape[-1]]``:
    float32 ``scale_inv`` (x ~= decode(q) * scale_inv) for tensor / row / col / block<R>x<C>,
    ``float8_e8m0fnu`` for mx (blocks of 32 along the last dimension), ``float8_e4m3fn`` for
    nvfp4 / nvfp4_16x16 (blocks of 16, or 16 x 16), whose ``global_scale`` is the float32 [1]
    tensor scale S: x ~= decode(q) * fp32(scale / S) (docs/numerics.md section 5, "NVFP4"), or,
    with ``global_scale_op="multiply"`` (ModelOpt's ``weight_scale_2``), x ~= decode(q) *
    fp32(scale * S).
    """

    codes: torch.Tensor
    scales: torch.Tensor
    format: str
    granularity: str
    global_scale: Optional[torch.Tensor] = None
    global_scale_op: ScaleOp = "divide"

    @property
    def shape(self) -> torch.Size:
        """The shape of the original tensor (e2m1 codes unpacked)."""
        s = list(self.codes.shape)
        if get(self.format).packed:
            s[-1] *= 2
        return torch.Size(s)

    def dequantize(self, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """fp32(decode(q) * scale) per element, then rounded to ``dtype`` (float32, bfloat16, float16)."""
        return dequantize(self, dtype)


def quantize(
    x: torch.Tensor,
    format: FormatLike = "e4m3fn",
    *,
    granularity: str = "tensor",
    scale_op: ScaleOp = "multiply",
    margin: int = 0,
    amax_epsilon: float = 0.0,
    power_of_two: bool = False,
    mx_rule: MxRule = "floor",
    rounding: Rounding = "rne",
    overflow: Overflow = "saturate",
    nan: NanPolicy = "error",
    seed: int = 0,
    offset: int = 0,
    like: Producer = "fp8q",
    global_scale: float | None = None,
) -> QuantizedTensor:
    """Quantizes a float32 / bfloat16 / float16 tensor, each block scaled by its own amax.

    ``granularity``: tensor, row, col, block<R>x<C> (block1x128, block128x128), mx. For the
    non-MX ones, ``scale_op="multiply"`` computes scale = fp32(max / amax) and q = convert(fp32(x *
    scale)) (Transformer Engine), ``"divide"`` scale_inv = fp32(amax / max) and q =
    convert(fp32(x / scale_inv)) (DeepSeek-V3, compressed-tensors). For mx, ``mx_rule`` picks the
    E8M0 scale (floor: OCP; ceil; even: torchao; rceil: Transformer Engine; trainium3: NKI
    quantize_mx; compressed-tensors: llm-compressor's MXFP8 / MXFP4, bit for bit).

    ``granularity="nvfp4"`` (1 x 16) or ``"nvfp4_16x16"`` quantizes to e2m1 under NVFP4's two
    scales (Transformer Engine's reference quantizer): ``format`` must be e2m1, and the amax
    options and ``scale_op`` keep their defaults.

    ``like="compressed-tensors"`` reproduces compressed-tensors' FP8 weight quantizer (what
    llm-compressor writes) bit for bit: e4m3fn, ``scale_op="divide"``, tensor / row / block
    granularity, the scale and each quotient rounded to x's dtype as torch computes them
    (docs/checkpoints.md, "Producer presets"); fp8q's own (``"fp8q"``) rounds each value once.
    ``like="modelopt"`` reproduces NVIDIA ModelOpt's FP8 exports: e4m3fn, ``scale_op="divide"``,
    the scale amax / 448 in float32; per tensor (quant_algo FP8) each quotient is rounded to x's
    dtype first, per row (FP8_PER_CHANNEL_PER_TOKEN) and per 128x128 block (fp8_pb_wo) it is not.
    With ``"e2m1"`` and ``granularity="nvfp4"`` it reproduces ModelOpt's NVFP4 export: the
    ``global_scale`` is its ``weight_scale_2`` = amax / 2688, a multiplier
    (``global_scale_op="multiply"``), and ``scales`` its ``weight_scale``; and
    ``like="compressed-tensors"`` llm-compressor's NVFP4 (``weight_global_scale``, a divisor, and
    ``weight_scale``). ``"modelopt"`` is ModelOpt's arithmetic on a CPU; ``"modelopt-cuda"`` on a
    CUDA device, where torch divides the amax by 448 or 2688 as amax * fp32(1 / n): what exports
    made on a GPU hold (docs/checkpoints.md, "Producer presets").

    ``global_scale`` (NVFP4 only, a float32 value, finite and positive) replaces the tensor's own
    global scale: layers a server fuses into one GEMM (q, k, v; gate, up) need one, the smallest
    of their own (the largest under ModelOpt's multiplier), as llm-compressor and
    ``fp8q quantize --layout ct-nvfp4`` give them (docs/checkpoints.md, "Fused layers").

    Example:
        >>> import torch, fp8q
        >>> x = torch.arange(64, dtype=torch.float32).reshape(1, 64)
        >>> q = fp8q.quantize(x, "e4m3fn", granularity="mx", mx_rule="trainium3")
        >>> q.scales.view(torch.uint8).tolist()  # 2^(floor(log2 31) - 7), 2^(floor(log2 63) - 7)
        [[124, 125]]
        >>> n = fp8q.quantize(torch.tensor([[6.0] * 8 + [-3.0] * 8]), "e2m1", granularity="nvfp4")
        >>> n.global_scale.tolist(), n.scales.float().tolist()  # S = 2688 / 6; 6 * S / 6 = 448
        ([448.0], [[448.0]])
        >>> n.dequantize()[0, ::8].tolist()
        [6.0, -3.0]
        >>> w = torch.tensor([[0.0, 0.0], [1.0, -3.0]], dtype=torch.bfloat16)
        >>> fp8q.quantize(w, granularity="row", scale_op="divide", like="compressed-tensors").scales.flatten().tolist()
        [0.0078125, 0.006683349609375]
        >>> fp8q.quantize(w, scale_op="divide", like="modelopt").scales.flatten().tolist()  # fp32(3 / 448)
        [0.0066964286379516125]
        >>> m = fp8q.quantize(torch.tensor([[2688.0] * 8 + [-3.0] * 8]), "e2m1", granularity="nvfp4", like="modelopt")
        >>> m.global_scale.tolist(), m.scales.float().tolist(), m.global_scale_op  # amax / 2688; 2688 / 6
        ([1.0], [[448.0]], 'multiply')
        >>> m.dequantize()[0, ::8].tolist()  # -3 / 448 rounds to 0 in e2m1
        [2688.0, -0.0]
        >>> k, v = torch.full((1, 16), 1.0), torch.full((1, 16), 4.0)  # own global scales 2688, 672
        >>> g = min(fp8q.quantize(t, "e2m1", granularity="nvfp4").global_scale.item() for t in (k, v))
        >>> fp8q.quantize(k, "e2m1", granularity="nvfp4", global_scale=g).scales.float().tolist()  # 1 * 672 / 6
        [[112.0]]
    """
    args = (
        _args.tensor(x, "x"),
        get(format).name,
        _args.text(granularity, "granularity"),
        _args.text(scale_op, "scale_op"),
        *_args.amax_options(margin, amax_epsilon, power_of_two),
        _args.text(mx_rule, "mx_rule"),
        _args.text(rounding, "rounding"),
        _args.text(overflow, "overflow"),
        _args.text(nan, "nan"),
        _args.u64(seed, "seed"),
        _args.u64(offset, "offset"),
    )
    if granularity.startswith("nvfp4"):  # two scales: the op returns the global one too
        given = None if global_scale is None else _args.real(global_scale, "global_scale")
        codes, scales, g = torch.ops.fp8q.quantize_nvfp4(*args, _args.text(like, "like"), given)
        op: ScaleOp = "multiply" if like in ("modelopt", "modelopt-cuda") else "divide"
        return QuantizedTensor(codes, scales, get(format).name, granularity, g, op)
    if global_scale is not None:
        raise ValueError(f"global_scale applies to NVFP4 (granularity nvfp4 or nvfp4_16x16), not {granularity}")
    codes, scales = torch.ops.fp8q.quantize(*args, _args.text(like, "like"))
    return QuantizedTensor(codes, scales, get(format).name, granularity)


def dequantize(q: QuantizedTensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """The tensor a QuantizedTensor stands for, in ``dtype`` (see QuantizedTensor.dequantize).

    Example:
        >>> import torch, fp8q
        >>> q = fp8q.quantize(torch.tensor([3.0, -7.0]), "e5m2")
        >>> fp8q.dequantize(q, torch.bfloat16).tolist()
        [3.0, -7.0]
    """
    if not isinstance(q, QuantizedTensor):
        raise TypeError(f"q must be a QuantizedTensor, not {type(q).__name__}")
    return torch.ops.fp8q.dequantize(q.codes, q.scales, q.granularity, q.format, _args.dtype(dtype, "dtype"),
                                     q.global_scale, _args.text(q.global_scale_op, "global_scale_op"))


def from_codes(
    codes: torch.Tensor,
    scales: torch.Tensor,
    granularity: str,
    format: Optional[FormatLike] = None,
    global_scale: Optional[torch.Tensor] = None,
    global_scale_op: ScaleOp = "divide",
) -> QuantizedTensor:
    """A QuantizedTensor from stored codes and scales (a checkpoint's), checked by dequantizing meta tensors.

    ``global_scale``: NVFP4's tensor scale S (float32, one element), for the nvfp4 granularities
    only; its value is checked when the tensor is dequantized. ``global_scale_op``: "divide"
    (compressed-tensors' ``weight_global_scale``) or "multiply" (ModelOpt's ``weight_scale_2``).
    """
    _args.tensor(codes, "codes"), _args.tensor(scales, "scales"), _args.text(granularity, "granularity")
    _args.optional_tensor(global_scale, "global_scale"), _args.text(global_scale_op, "global_scale_op")
    fmt = get(format).name if format is not None else get(codes.dtype).name
    meta_global = None if global_scale is None else global_scale.to("meta")
    torch.ops.fp8q.dequantize(codes.to("meta"), scales.to("meta"), granularity, fmt, torch.float32, meta_global,
                              global_scale_op)
    return QuantizedTensor(codes, scales, fmt, granularity, global_scale, global_scale_op)
