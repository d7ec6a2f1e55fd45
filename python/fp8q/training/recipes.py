"""Training recipes: how each operand of a linear layer's three GEMMs is cast, and on which device.

A linear layer ``y = x W^T`` (x [M, K], W [N, K]) runs three GEMMs, each operand quantized
along that GEMM's contraction axis:

- forward ``y = x W^T``: ``x`` and ``w`` along K;
- input gradient ``dx = dy W``: ``dy`` along N and ``w_t`` (W^T, [K, N]) along N;
- weight gradient ``dW = dy^T x``: ``dy_t`` (dy^T, [N, M]) and ``x_t`` (x^T, [K, M]) along M.

A ``Recipe`` gives the six casts, the device ``profile`` whose accumulation model runs the GEMMs
(``model`` overrides it), and the delayed-scaling settings. It prints, and round-trips through
JSON. docs/training.md describes every named recipe.

Example:
    >>> from fp8q.training import Recipe, recipe
    >>> r = recipe("tensorwise")
    >>> r.x.format, r.dy.format, r.profile
    ('e4m3fn', 'e5m2', 'trn3')
    >>> Recipe.from_json(r.to_json()) == r
    True
    >>> recipe("tensorwise", stochastic_gradients=True).dy.rounding
    'sr'
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any, Literal, Optional

import torch

Scaling = Literal["current", "delayed"]
ROLES = ("x", "w", "dy", "w_t", "dy_t", "x_t")


@dataclass(frozen=True)
class Cast:
    """One operand's cast: element format, granularity along the GEMM's contraction axis
    (tensor, row, block1x128, block128x128, mx, nvfp4, nvfp4_16x16), current or delayed scaling
    (per tensor only), the options of ``fp8q.quantize``, and ``hadamard``: the 16-point random
    Hadamard transform (``fp8q.hadamard16``) along the contraction before an NVFP4 1 x 16 cast,
    on both operands of a GEMM or neither. The library checks it (quant/recipes/recipe.hpp)."""

    format: str
    granularity: str = "tensor"
    scaling: Scaling = "current"
    scale_op: Literal["multiply", "divide"] = "multiply"
    power_of_two: bool = False
    mx_rule: Literal["floor", "ceil", "even", "rceil", "trainium3", "compressed-tensors"] = "floor"
    rounding: Literal["rne", "sr"] = "rne"
    hadamard: bool = False

    def __post_init__(self) -> None:
        torch.ops.fp8q.cast_check(json.dumps(dataclasses.asdict(self)), "cast")


@dataclass(frozen=True)
class Recipe:
    """The six casts of a linear layer's GEMMs, the device profile, and delayed-scaling state settings.

    ``history_length``, ``amax_compute`` (``max`` or ``most_recent``) and ``margin`` are
    Transformer Engine's DelayedScaling settings, used by the casts whose scaling is delayed.
    ``seed`` keys stochastic rounding (with the layer, the step and the operand). The library
    holds the named recipes and the checks (quant/recipes/recipe.hpp); this class carries them.
    """

    name: str
    x: Cast
    w: Cast
    dy: Cast
    w_t: Cast
    dy_t: Cast
    x_t: Cast
    profile: str = "trn3"
    model: Optional[str] = None
    history_length: int = 1024
    amax_compute: Literal["max", "most_recent"] = "max"
    margin: int = 0
    seed: int = 0

    def __post_init__(self) -> None:
        for role in ROLES:
            if not isinstance(getattr(self, role), Cast):
                raise TypeError(f"{role} must be a Cast, not {type(getattr(self, role)).__name__}")
        torch.ops.fp8q.recipe_check(self.to_json())

    @property
    def delayed(self) -> bool:
        """Whether any cast uses delayed scaling (the layer then keeps amax histories)."""
        return any(getattr(self, r).scaling == "delayed" for r in ROLES)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Recipe":
        plain = {k: dataclasses.asdict(v) if isinstance(v, Cast) else v for k, v in d.items()}
        checked = json.loads(torch.ops.fp8q.recipe_check(json.dumps(plain)))
        return cls(**{k: Cast(**v) if k in ROLES else v for k, v in checked.items()})

    @classmethod
    def from_json(cls, text: str) -> "Recipe":
        return cls.from_dict(json.loads(text))


RECIPES = tuple(torch.ops.fp8q.recipe_names())


def recipe(name: str, *, stochastic_gradients: bool = False, **overrides: Any) -> Recipe:
    """A named recipe (``RECIPES``), with fields replaced by ``overrides`` (profile, model, seed,
    history_length, ...). ``stochastic_gradients`` rounds the two gradient casts (dy, dy_t)
    stochastically, keyed by ``seed``: the same bits for any thread count and on every rank."""
    r = Recipe.from_json(torch.ops.fp8q.recipe(name, stochastic_gradients))
    return dataclasses.replace(r, **overrides)


__all__ = ["Cast", "RECIPES", "Recipe", "recipe"]
