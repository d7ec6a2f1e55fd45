"""The element formats and how each travels in torch.

A format torch has travels as that dtype (``float8_e4m3fn``, ``float8_e5m2``, the fnuz pair,
``float8_e8m0fnu`` for MX scales, ``float4_e2m1fn_x2`` with two codes a byte, element ``2i`` in
the low nibble). A format torch lacks (Trainium2's IEEE-style ``e4m3`` with range +/-240,
``e3m4``, the fp6 formats) travels as ``uint8`` codes, one a byte, with its format named.

Example:
    >>> import fp8q
    >>> fp8q.formats.FORMATS["e4m3"].max_finite
    240.0
    >>> fp8q.formats.dtype_of("e4m3fn")
    torch.float8_e4m3fn
    >>> fp8q.formats.format_of(torch.float8_e5m2)
    'e5m2'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Union

import torch

Specials = Literal["ieee", "fn", "fnuz", "finite", "e8m0"]


@dataclass(frozen=True)
class Format:
    """One row of the format table: the descriptor of docs/numerics.md section 1."""

    name: str
    exponent_bits: int
    mantissa_bits: int
    bias: int
    signed: bool
    specials: Specials
    dtype: torch.dtype

    @property
    def bits(self) -> int:
        return int(self.signed) + self.exponent_bits + self.mantissa_bits

    @property
    def max_finite(self) -> float:
        e, m = self.exponent_bits, self.mantissa_bits
        top = (1 << e) - 1  # biased exponent of the top codes
        if self.specials == "ieee":  # the top exponent holds Inf / NaN
            return (2.0 - 2.0**-m) * 2.0 ** (top - 1 - self.bias)
        if self.specials in ("fn", "e8m0"):  # only the all-ones code is NaN
            return (2.0 - 2.0 ** (1 - m)) * 2.0 ** (top - self.bias) if m else 2.0 ** (top - 1 - self.bias)
        return (2.0 - 2.0**-m) * 2.0 ** (top - self.bias)  # fnuz, finite: every top code is a number

    @property
    def min_normal(self) -> float:
        return 2.0 ** (-self.bias if self.specials == "e8m0" else 1 - self.bias)

    @property
    def denorm_min(self) -> float:
        return self.min_normal if self.specials == "e8m0" else 2.0 ** (1 - self.bias - self.mantissa_bits)

    @property
    def packed(self) -> bool:
        """Whether torch stores two codes a byte (float4_e2m1fn_x2)."""
        return self.dtype == torch.float4_e2m1fn_x2


_U8 = torch.uint8
# name, exponent bits, mantissa bits, bias, signed, specials, dtype
FORMATS: dict[str, Format] = {
    f.name: f
    for f in (
        Format("f32", 8, 23, 127, True, "ieee", torch.float32),
        Format("f64", 11, 52, 1023, True, "ieee", torch.float64),
        Format("bf16", 8, 7, 127, True, "ieee", torch.bfloat16),
        Format("f16", 5, 10, 15, True, "ieee", torch.float16),
        Format("e4m3fn", 4, 3, 7, True, "fn", torch.float8_e4m3fn),
        Format("e4m3", 4, 3, 7, True, "ieee", _U8),
        Format("e5m2", 5, 2, 15, True, "ieee", torch.float8_e5m2),
        Format("e4m3fnuz", 4, 3, 8, True, "fnuz", torch.float8_e4m3fnuz),
        Format("e5m2fnuz", 5, 2, 16, True, "fnuz", torch.float8_e5m2fnuz),
        Format("e3m4", 3, 4, 3, True, "ieee", _U8),
        Format("e8m0", 8, 0, 127, False, "e8m0", torch.float8_e8m0fnu),
        Format("e2m3", 2, 3, 1, True, "finite", _U8),
        Format("e3m2", 3, 2, 3, True, "finite", _U8),
        Format("e2m1", 2, 1, 1, True, "finite", torch.float4_e2m1fn_x2),
    )
}

FormatLike = Union[str, torch.dtype]


def dtype_of(name: str) -> torch.dtype:
    """The dtype a format's tensors have (``uint8`` for the formats torch lacks)."""
    return get(name).dtype


def format_of(dtype: torch.dtype) -> str:
    """The format a dtype carries; ``ValueError`` for ``uint8`` (its format must be named) and others."""
    for f in FORMATS.values():
        if f.dtype == dtype and dtype != _U8:
            return f.name
    raise ValueError(f"dtype {dtype} carries no fp8q format (uint8 codes need their format named)")


def get(name: FormatLike) -> Format:
    """The Format of a name (``"e4m3fn"``) or of a dtype that carries one."""
    if isinstance(name, torch.dtype):
        return FORMATS[format_of(name)]
    if not isinstance(name, str):
        raise TypeError(f"a format is a name or a torch.dtype, not {type(name).__name__}")
    try:
        return FORMATS[name]
    except KeyError:
        raise ValueError(f"unknown format {name!r} (one of: {' '.join(FORMATS)})") from None


def name_of(fmt: FormatLike | None) -> str:
    """A format argument as the operators take it: its name, or '' for "the tensor's own"."""
    return "" if fmt is None else get(fmt).name


def unpack_fp4(packed: torch.Tensor) -> torch.Tensor:
    """float4_e2m1fn_x2 (or uint8) bytes -> uint8 codes one a byte, last dimension doubled
    (element 2i from the low nibble). An operator, so that compiled graphs keep it."""
    return torch.ops.fp8q.unpack_fp4(packed)


def pack_fp4(codes: torch.Tensor) -> torch.Tensor:
    """uint8 e2m1 codes one a byte (last dimension even) -> float4_e2m1fn_x2, element 2i in the low nibble."""
    c = codes.view(torch.uint8)
    return (c[..., 0::2] | (c[..., 1::2] << 4)).contiguous().view(torch.float4_e2m1fn_x2)
