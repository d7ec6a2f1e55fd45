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


def optional_tensor(x: object, name: str) -> Optional[torch.Tensor]:
    return None if x is None else tensor(x, name)


def text(value: object, name: str) -> str:
    """A name the library parses (a mode, a policy, a granularity, a profile, a layout)."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, not {type(value).__name__}")
    return value


def integer(value: object, name: str) -> int:
    """An int (not a bool); the library checks its range."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    return value


def real(value: object, name: str) -> float:
    """A float or an int (not a bool); the library checks its range."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a float, not {type(value).__name__}")
    return float(value)


def flag(value: object, name: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, not {type(value).__name__}")
    return value


def amax_options(margin: object, amax_epsilon: object, power_of_two: object) -> tuple[int, float, bool]:
    """The three options of a scale from an amax, as every op that computes one takes them."""
    return integer(margin, "margin"), real(amax_epsilon, "amax_epsilon"), flag(power_of_two, "power_of_two")


def dtype(value: object, name: str) -> torch.dtype:
    if not isinstance(value, torch.dtype):
        raise TypeError(f"{name} must be a torch.dtype, not {type(value).__name__}")
    return value


def scale_tensor(scale: Scale, name: str = "scale") -> Optional[torch.Tensor]:
    """A float (rounded to float32 nearest-even, as torch.tensor does) or a 1-element float32 tensor."""
    if scale is None or isinstance(scale, torch.Tensor):
        return scale
    if isinstance(scale, bool) or not isinstance(scale, (int, float)):
        raise TypeError(f"{name} must be a float or a float32 tensor, not {type(scale).__name__}")
    return torch.tensor(float(scale), dtype=torch.float32)
