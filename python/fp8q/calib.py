"""Calibration: a mergeable histogram of |x| and the four calibrators (calib/).

The observer's whole state is one int64 tensor (``Histogram.state``), so it can be saved,
sent between ranks and merged exactly; every operation returns a new state.

Example:
    >>> import torch, fp8q
    >>> h = fp8q.calib.Histogram()
    >>> h = h.observe(torch.linspace(-3.0, 3.0, 1001))
    >>> h.calibrate("max", "e4m3fn").item()
    3.0
    >>> h.count
    1001
"""

from __future__ import annotations

from typing import Literal

import torch

from . import _args
from .formats import FormatLike, get

Method = Literal["max", "percentile", "mse", "entropy"]

_COUNT_WORD = 5  # calib/src/histogram_state.cpp: the finite-sample count


class Histogram:
    """A log-linear histogram of |x| (``bins`` a power of two, the ``tail`` largest values kept exactly)."""

    def __init__(self, bins: int = 2048, tail: int = 256, *, state: torch.Tensor | None = None) -> None:
        if state is None:
            self.state = torch.ops.fp8q.histogram_new(_args.integer(bins, "bins"), _args.integer(tail, "tail"))
        else:
            self.state = _args.tensor(state, "state")

    def observe(self, x: torch.Tensor) -> "Histogram":
        """The histogram with x's elements (float32, bfloat16, float16) added."""
        return Histogram(state=torch.ops.fp8q.histogram_observe(self.state, _args.tensor(x, "x")))

    def merge(self, other: "Histogram") -> "Histogram":
        """The histogram of both samples, exactly as if one had observed them all."""
        if not isinstance(other, Histogram):
            raise TypeError(f"other must be a Histogram, not {type(other).__name__}")
        return Histogram(state=torch.ops.fp8q.histogram_merge(self.state, other.state))

    def calibrate(
        self,
        method: Method,
        format: FormatLike,
        *,
        percentile: float = 99.99,
        margin: int = 0,
        amax_epsilon: float = 0.0,
        power_of_two: bool = False,
    ) -> torch.Tensor:
        """The calibrated amax (0-d float32) for ``format`` by ``method``; see docs/numerics.md section 7."""
        return torch.ops.fp8q.calibrate(
            self.state,
            _args.text(method, "method"),
            get(format).name,
            _args.real(percentile, "percentile"),
            *_args.amax_options(margin, amax_epsilon, power_of_two),
        )

    @property
    def count(self) -> int:
        """The number of finite samples observed."""
        return int(self.state[_COUNT_WORD])

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Histogram) and torch.equal(self.state, other.state)

    __hash__ = None  # type: ignore[assignment]
