"""Trainium's matmul instructions and Trainium3's SBUF layouts, emulated bit for bit (kernels/trainium.hpp).

``nc_matmul`` takes a stationary [K, M] and a moving [K, N] tile with K on the partitions
(<= 128) and returns PSUM = stationary.T @ moving in float32; ``nc_matmul_mx`` takes x4 tiles
([P, F, 4] bytes for fp8 x4, [P, F, 2] for fp4 x4) with their E8M0 scale tiles. The packing
functions build those tiles from [K, N] codes and compact scales. What AWS documents and what
fp8q assumes is in docs/numerics.md and docs/trainium3_layouts.md.

Example:
    >>> import torch, fp8q
    >>> s = torch.ones(128, 2).to(torch.float8_e4m3fn)
    >>> m = torch.full((128, 3), 0.5).to(torch.float8_e4m3fn)
    >>> fp8q.trn.nc_matmul(s, m).tolist()
    [[64.0, 64.0, 64.0], [64.0, 64.0, 64.0]]
"""

from __future__ import annotations

from typing import Literal, Optional

import torch

from . import _args
from .formats import FormatLike, name_of

Layout = Literal["wrapX", "1x32"]
X4Type = Literal["float8_e4m3fn_x4", "float8_e5m2_x4", "float4_e2m1fn_x4"]


def nc_matmul(
    stationary: torch.Tensor,
    moving: torch.Tensor,
    *,
    stationary_format: Optional[FormatLike] = None,
    moving_format: Optional[FormatLike] = None,
    perf_mode: Literal["none", "double_row"] = "none",
    psum: Optional[torch.Tensor] = None,
) -> torch.Tensor:
    """PSUM (+)= stationary.T @ moving; ``psum`` given: accumulate into (a copy of) it.

    Tiles hold codes one a byte (a float8 dtype, or uint8 with its format named) or bfloat16;
    ``perf_mode="double_row"`` takes [K, F, 2] FP8 pairs (K <= 128 pairs).
    """
    return torch.ops.fp8q.nc_matmul(
        _args.tensor(stationary, "stationary"),
        _args.tensor(moving, "moving"),
        name_of(stationary_format),
        name_of(moving_format),
        _args.text(perf_mode, "perf_mode"),
        _args.optional_tensor(psum, "psum"),
    )


def nc_matmul_mx(
    stationary: torch.Tensor,
    stationary_scale: torch.Tensor,
    moving: torch.Tensor,
    moving_scale: torch.Tensor,
    *,
    stationary_type: X4Type = "float8_e4m3fn_x4",
    moving_type: X4Type = "float8_e4m3fn_x4",
    psum: Optional[torch.Tensor] = None,
    exact_partition_sum: bool = True,
    single_rounding_add: bool = True,
) -> torch.Tensor:
    """PSUM (+)= the MX product of two x4 tiles; the two flags are the documented assumptions A1, A2."""
    return torch.ops.fp8q.nc_matmul_mx(
        _args.tensor(stationary, "stationary"),
        _args.tensor(stationary_scale, "stationary_scale"),
        _args.tensor(moving, "moving"),
        _args.tensor(moving_scale, "moving_scale"),
        _args.text(stationary_type, "stationary_type"),
        _args.text(moving_type, "moving_type"),
        _args.optional_tensor(psum, "psum"),
        _args.flag(exact_partition_sum, "exact_partition_sum"),
        _args.flag(single_rounding_add, "single_rounding_add"),
    )


def pack_codes(codes: torch.Tensor, layout: Layout) -> torch.Tensor:
    """[K, N] codes (one a byte) -> the on-chip image [128, ceil(K/512), N, 4] (padding 0x00)."""
    return torch.ops.fp8q.trn3_pack_codes(_args.tensor(codes, "codes"), _args.text(layout, "layout"))


def unpack_codes(onchip: torch.Tensor, layout: Layout, k: int) -> torch.Tensor:
    """The inverse of pack_codes for an operand of K = k."""
    return torch.ops.fp8q.trn3_unpack_codes(_args.tensor(onchip, "onchip"), _args.text(layout, "layout"),
                                            _args.integer(k, "k"))


def pack_scales(scales: torch.Tensor, layout: Layout, k: int) -> torch.Tensor:
    """Compact E8M0 scales [groups, N] -> the quadrant-placed scale tile [128, ceil(K/512), N]."""
    return torch.ops.fp8q.trn3_pack_scales(_args.tensor(scales, "scales"), _args.text(layout, "layout"),
                                           _args.integer(k, "k"))


def unpack_scales(onchip: torch.Tensor, layout: Layout, k: int) -> torch.Tensor:
    """The inverse of pack_scales."""
    return torch.ops.fp8q.trn3_unpack_scales(_args.tensor(onchip, "onchip"), _args.text(layout, "layout"),
                                             _args.integer(k, "k"))


def pack_x4(codes: torch.Tensor, type: X4Type) -> torch.Tensor:
    """Codes [..., 4F] one a byte -> x4 containers' bytes [..., F, 4] (fp4: [..., F, 2])."""
    return torch.ops.fp8q.pack_x4(_args.tensor(codes, "codes"), _args.text(type, "type"))


def unpack_x4(image: torch.Tensor, type: X4Type) -> torch.Tensor:
    """The inverse of pack_x4 (fp4 codes come back as uint8, one a byte)."""
    return torch.ops.fp8q.unpack_x4(_args.tensor(image, "image"), _args.text(type, "type"))
