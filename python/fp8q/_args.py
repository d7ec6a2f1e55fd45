"""Argument conversions shared by the wrappers (no numerics: names, ranges, types)."""

from __future__ import annotations

from typing import Optional, Union

import torch

Scale = Union[float, torch.Tensor, None]


def u64(value: int, name: str) -> int:
    """A 64-bit key or counter as the int64 the operators take (its two's-complement bits)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if not 0 <= value < 1 << 64:
        raise ValueError(f"{name} = {value} is outside [0, 2^64)")
    return value - (1 << 64) if value >= 1 << 63 else value


def tensor(x: object, name: str) -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, not {type(x).__name__}")
    return x


def scale_tensor(scale: Scale, name: str = "scale") -> Optional[torch.Tensor]:
    """A float (rounded to float32 nearest-even, as torch.tensor does) or a 1-element float32 tensor."""
    if scale is None or isinstance(scale, torch.Tensor):
        return scale
    if isinstance(scale, bool) or not isinstance(scale, (int, float)):
        raise TypeError(f"{name} must be a float or a float32 tensor, not {type(scale).__name__}")
    return torch.tensor(float(scale), dtype=torch.float32)
