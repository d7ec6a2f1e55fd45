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

Scaling = Literal["current", "delayed"]
ROLES = ("x", "w", "dy", "w_t", "dy_t", "x_t")
GRANULARITIES = ("tensor", "row", "block1x128", "block128x128", "mx")
GEMMS = (("x", "w"), ("dy", "w_t"), ("dy_t", "x_t"))  # (A, B^T) of forward, input and weight gradient


@dataclass(frozen=True)
class Cast:
    """One operand's cast: element format, granularity along the GEMM's contraction axis
    (tensor, row, block1x128, block128x128, mx), current or delayed scaling (per tensor only),
    and the options of ``fp8q.quantize``."""

    format: str
    granularity: str = "tensor"
    scaling: Scaling = "current"
    scale_op: Literal["multiply", "divide"] = "multiply"
    power_of_two: bool = False
    mx_rule: Literal["floor", "ceil", "even", "rceil", "trainium3"] = "floor"
    rounding: Literal["rne", "sr"] = "rne"

    def __post_init__(self) -> None:
        if self.granularity not in GRANULARITIES:
            raise ValueError(f"granularity {self.granularity!r} is not one of {', '.join(GRANULARITIES)}")
        if self.scaling not in ("current", "delayed"):
            raise ValueError(f"scaling {self.scaling!r} is not current or delayed")
        if self.scaling == "delayed" and self.granularity != "tensor":
            raise ValueError(f"delayed scaling is per tensor; granularity {self.granularity!r} is current only")
        if self.rounding not in ("rne", "sr"):
            raise ValueError(f"rounding {self.rounding!r} is not rne or sr")
        if self.scale_op not in ("multiply", "divide"):
            raise ValueError(f"scale_op {self.scale_op!r} is not multiply or divide")


@dataclass(frozen=True)
class Recipe:
    """The six casts of a linear layer's GEMMs, the device profile, and delayed-scaling state settings.

    ``history_length``, ``amax_compute`` (``max`` or ``most_recent``) and ``margin`` are
    Transformer Engine's DelayedScaling settings, used by the casts whose scaling is delayed.
    ``seed`` keys stochastic rounding (with the layer, the step and the operand).
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
        if self.amax_compute not in ("max", "most_recent"):
            raise ValueError(f"amax_compute {self.amax_compute!r} is not max or most_recent")
        if not 1 <= self.history_length <= 1 << 24:
            raise ValueError(f"history_length {self.history_length} is outside [1, 2^24]")
        for role in ROLES:
            if not isinstance(getattr(self, role), Cast):
                raise TypeError(f"{role} must be a Cast, not {type(getattr(self, role)).__name__}")
        for a, b in (("x", "x_t"), ("w", "w_t"), ("dy", "dy_t")):
            ca, cb = getattr(self, a), getattr(self, b)
            if (ca.scaling == "delayed" or cb.scaling == "delayed") and ca != cb:
                raise ValueError(f"{a} and {b} share one delayed-scaling state: their casts must be equal")
        for a, b in GEMMS:
            ga, gb = getattr(self, a).granularity, getattr(self, b).granularity
            if (ga == "block1x128") != (gb == "block128x128") or (ga == "mx") != (gb == "mx"):
                raise ValueError(f"{a} is {ga} and {b} is {gb}: a GEMM takes 1x128 blocks with 128x128 "
                                 "blocks, MX with MX, and otherwise tensor or row scaling on either side")

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
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"recipe: unknown field(s) {', '.join(sorted(unknown))}")
        args = dict(d)
        for role in ROLES:
            if role not in args:
                raise ValueError(f"recipe: field {role!r} is missing")
            if isinstance(args[role], dict):
                args[role] = Cast(**args[role])
        return cls(**args)

    @classmethod
    def from_json(cls, text: str) -> "Recipe":
        return cls.from_dict(json.loads(text))


def _roles(forward: Cast, gradient: Cast, *, w: Optional[Cast] = None, x_t: Optional[Cast] = None,
           w_t: Optional[Cast] = None) -> dict[str, Cast]:
    return dict(x=forward, w=w or forward, dy=gradient, w_t=w_t or w or forward, dy_t=gradient,
                x_t=x_t or forward)


def _named(name: str) -> Recipe:
    if name == "tensorwise":  # current scaling per tensor, HYBRID formats
        return Recipe(name, **_roles(Cast("e4m3fn"), Cast("e5m2")))
    if name == "delayed":  # Transformer Engine's DelayedScaling(fp8_format=HYBRID)
        return Recipe(name, **_roles(Cast("e4m3fn", scaling="delayed"), Cast("e5m2", scaling="delayed")))
    if name == "rowwise":  # torchao's rowwise: per row along the contraction axis, power-of-two scales
        c = Cast("e4m3fn", "row", power_of_two=True)
        return Recipe(name, **_roles(c, c))
    if name == "blockwise":  # DeepSeek-V3: 1x128 activations and gradients, 128x128 weights, divide
        a = Cast("e4m3fn", "block1x128", scale_op="divide")
        b = Cast("e4m3fn", "block128x128", scale_op="divide")
        return Recipe(name, **_roles(a, a, w=b, w_t=b, x_t=b))
    if name == "mxfp8_trn3":  # Trainium3's MXFP8: NKI quantize_mx's rule, nc_matmul_mx over 1x32 tiles
        return Recipe(name, **_roles(Cast("e4m3fn", "mx", mx_rule="trainium3"), Cast("e5m2", "mx", mx_rule="trainium3")),
                      model="trainium3_mx:1x32")
    if name == "mxfp8_rceil":  # torchao's / Transformer Engine's MXFP8 on Blackwell
        c = Cast("e4m3fn", "mx", mx_rule="rceil")
        return Recipe(name, **_roles(c, c), profile="ocp")
    if name == "trn2_fp8":  # Trainium2: IEEE-style e4m3 (range 240) forward, e5m2 gradients
        return Recipe(name, **_roles(Cast("e4m3"), Cast("e5m2")), profile="trn2")
    raise ValueError(f"no recipe named {name!r} (one of: {', '.join(RECIPES)})")


RECIPES = ("tensorwise", "delayed", "rowwise", "blockwise", "mxfp8_trn3", "mxfp8_rceil", "trn2_fp8")


def recipe(name: str, *, stochastic_gradients: bool = False, **overrides: Any) -> Recipe:
    """A named recipe (``RECIPES``), with fields replaced by ``overrides`` (profile, model, seed,
    history_length, ...). ``stochastic_gradients`` rounds the two gradient casts (dy, dy_t)
    stochastically, keyed by ``seed``: the same bits for any thread count and on every rank."""
    r = _named(name)
    if stochastic_gradients:
        overrides = dict(overrides, dy=dataclasses.replace(r.dy, rounding="sr"),
                         dy_t=dataclasses.replace(r.dy_t, rounding="sr"))
    return dataclasses.replace(r, **overrides)


__all__ = ["Cast", "RECIPES", "Recipe", "recipe"]
