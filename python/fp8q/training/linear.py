"""Float8Linear: nn.Linear whose three GEMMs run through a device profile's bit-exact model.

Forward ``y = x W^T (+ b)``, input gradient ``dx = dy W``, weight gradient ``dW = dy^T x``: each
GEMM is ``fp8q.linear`` on operands cast as the recipe says (recipes.py), so a step on a CPU
gives the bits the device would. The forward saves the FP8 casts the backward needs (W along N,
x along M, laid out as the GEMMs read them where the cast allows), not high-precision copies. Delayed-scaling state (amax histories, scales) and
the step counter are buffers, in ``state_dict()``.

Example:
    >>> import torch, fp8q
    >>> from fp8q.training import Float8Linear, recipe
    >>> torch.manual_seed(0)  # doctest: +ELLIPSIS
    <torch._C.Generator object at ...>
    >>> layer = Float8Linear(64, 32, recipe=recipe("tensorwise"))
    >>> x = torch.randn(8, 64, requires_grad=True)
    >>> y = layer(x)
    >>> y.sum().backward()
    >>> y.shape, x.grad.shape, layer.weight.grad.shape
    (torch.Size([8, 32]), torch.Size([8, 64]), torch.Size([32, 64]))
"""

from __future__ import annotations

import json
from typing import Callable, Optional, Union

import torch
import torch.distributed as dist

from ..conversion import amax, scale_from_amax
from ..matmul import _granularity, linear, matmul
from ..quantized import QuantizedTensor, quantize
from .recipes import RECIPES, ROLES, Cast, Recipe, recipe as named_recipe

_ROLE_ID = {"x": 1, "w": 2, "dy": 3, "w_t": 4, "dy_t": 5, "x_t": 6}
_HADAMARD_ID = 7  # keys the sign mask that dy_t and x_t share
_MASK = (1 << 64) - 1


def _mix(*words: int) -> int:
    """splitmix64 over the words: a 64-bit key per (recipe seed, layer, step, operand)."""
    h = 0
    for w in words:
        h = (h ^ (w & _MASK)) + 0x9E3779B97F4A7C15 & _MASK
        h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9 & _MASK
        h = (h ^ (h >> 27)) * 0x94D049BB133111EB & _MASK
        h ^= h >> 31
    return h


class _State:
    """What a cast reads besides its tensor: the layer (its delayed-state buffers and process
    group) and the step, which keys stochastic rounding."""

    def __init__(self, layer: "Float8Linear", step: int):
        self.layer, self.step = layer, step

    def seed(self, role: str) -> int:
        return _mix(self.layer.recipe.seed, self.layer.fp8_layer_id, self.step, _ROLE_ID[role])

    def sign_mask(self) -> int:
        """The Hadamard transform's 16 signs, one key per layer and step for both operands."""
        return _mix(self.layer.recipe.seed, self.layer.fp8_layer_id, self.step, _HADAMARD_ID) & 0xFFFF

    def all_reduce_max(self, a: torch.Tensor) -> torch.Tensor:
        group = self.layer.process_group
        if dist.is_available() and dist.is_initialized() and dist.get_world_size(group) > 1:
            a = a.clone()
            dist.all_reduce(a, op=dist.ReduceOp.MAX, group=group)
        return a


def _cast(t: torch.Tensor, c: Cast, role: str, state: _State, delayed: Optional[str]) -> QuantizedTensor:
    """t [R, C] quantized along C as ``c`` says. Per tensor, the amax is all-reduced (MAX) over
    the layer's process group; ``delayed`` names the state buffers ("x", "w", "dy") of a delayed cast."""
    seed = state.seed(role) if c.rounding == "sr" else 0
    if c.hadamard:
        t = torch.ops.fp8q.hadamard16(t, state.sign_mask())
    if c.granularity != "tensor":
        return quantize(t, c.format, granularity=c.granularity, scale_op=c.scale_op, power_of_two=c.power_of_two,
                        mx_rule=c.mx_rule, rounding=c.rounding, seed=seed)
    layer = state.layer
    if delayed is None:  # current: this tensor's amax, over every rank
        a = state.all_reduce_max(amax(t).reshape(1))
        scale = scale_from_amax(a, c.format, power_of_two=c.power_of_two)
        codes, scale_inv, _ = torch.ops.fp8q.quantize_scaled(t, c.format, scale, c.rounding, _i64(seed), 0)
        return QuantizedTensor(codes, scale_inv, c.format, "tensor")
    history, scale = layer.get_buffer(f"fp8_history_{delayed}"), layer.get_buffer(f"fp8_scale_{delayed}")
    codes, scale_inv, a = torch.ops.fp8q.quantize_scaled(t, c.format, scale, c.rounding, _i64(seed), 0)
    r = layer.recipe
    new_history, new_scale = torch.ops.fp8q.delayed_update(
        history, scale, state.all_reduce_max(a.reshape(1)), c.format, r.amax_compute, r.margin, c.power_of_two)
    with torch.no_grad():
        history.copy_(new_history)
        scale.copy_(new_scale)
    return QuantizedTensor(codes, scale_inv, c.format, "tensor")


def _i64(seed: int) -> int:
    return seed - (1 << 64) if seed >= 1 << 63 else seed


def _transposed(q: QuantizedTensor) -> QuantizedTensor:
    """t^T's cast from t's (data movement): the codes and the scale grid transposed (the plan
    never asks it of packed e2m1 codes: their casts are of t^T itself)."""
    return QuantizedTensor(q.codes.t().contiguous(), q.scales.t().contiguous(), q.format,
                           _granularity(q.granularity, True), q.global_scale, q.global_scale_op)


class _Operand:
    """A backward GEMM's B: ``b`` [K, N] quantized along K, which ``fp8q.matmul`` takes as it is,
    or ``bt`` [N, K], which ``fp8q.linear`` lays out as B."""

    def __init__(self, b: Optional[QuantizedTensor] = None, bt: Optional[QuantizedTensor] = None):
        self.b, self.bt = b, bt

    def tensors(self) -> tuple[torch.Tensor, torch.Tensor, Optional[torch.Tensor]]:
        q = self.b if self.b is not None else self.bt
        return q.codes, q.scales, q.global_scale

    def meta(self) -> tuple[bool, str, str]:
        q = self.b if self.b is not None else self.bt
        return self.b is not None, q.format, q.granularity

    @staticmethod
    def of(codes: torch.Tensor, scales: torch.Tensor, global_scale: Optional[torch.Tensor],
           meta: tuple[bool, str, str]) -> "_Operand":
        is_b, fmt, granularity = meta
        q = QuantizedTensor(codes, scales, fmt, granularity, global_scale)
        return _Operand(b=q) if is_b else _Operand(bt=q)

    def gemm(self, a: QuantizedTensor, r: Recipe, out_dtype: torch.dtype) -> torch.Tensor:
        if self.b is not None:
            return matmul(a, self.b, profile=r.profile, model=r.model, out_dtype=out_dtype)
        return linear(a, self.bt, profile=r.profile, model=r.model, out_dtype=out_dtype)


def _b_operand(t: torch.Tensor, qa: QuantizedTensor, plan: dict[str, str], role: str, state: _State) -> _Operand:
    """A backward operand from t (W, x or dy) as the library's plan says (quant/recipes/recipe.hpp):
    t's forward-side cast ``qa`` itself, the role's cast computed on t (laid out like t), or the
    cast of t^T."""
    c = getattr(state.layer.recipe, role)
    if plan["source"] == "same_cast":
        return _Operand(b=qa)
    if plan["source"] == "cast_of_t":
        if plan["granularity"] == "tensor":
            return _Operand(b=_cast(t, c, role, state, None))
        return _Operand(b=quantize(t, c.format, granularity=plan["granularity"], scale_op=c.scale_op,
                                   power_of_two=c.power_of_two, mx_rule=c.mx_rule))
    return _Operand(bt=_cast(t.t().contiguous(), c, role, state, None))


def _a_operand(t: torch.Tensor, qa: QuantizedTensor, plan: dict[str, str], role: str, state: _State) -> QuantizedTensor:
    """The weight gradient's A, t^T [N, M] cast along its columns, from t [M, N], as _b_operand."""
    o = _b_operand(t, qa, plan, role, state)
    return _transposed(o.b) if o.b is not None else o.bt


@torch.library.custom_op("fp8q::bias_grad", mutates_args=())
def _bias_grad(dy: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """db = dy summed over its rows by torch's eager sum, rounded to ``dtype``: an opaque op, so
    that torch.compile does not reorder the sum (an FP8 recipe casts no operand of it)."""
    return dy.sum(0).to(dtype)


@_bias_grad.register_fake
def _(dy: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    return dy.new_empty(dy.shape[1:], dtype=dtype)


def _out_dtype(dtype: torch.dtype) -> torch.dtype:
    if dtype not in (torch.float32, torch.bfloat16):
        raise TypeError(f"Float8Linear computes in float32 or bfloat16, not {dtype}")
    return dtype


def _delayed(c: Cast, name: str) -> Optional[str]:
    return name if c.scaling == "delayed" else None


class _Float8LinearFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor], layer: "Float8Linear",
                step: int) -> torch.Tensor:
        r = layer.recipe
        state = _State(layer, step)
        x2 = x.reshape(-1, x.shape[-1]).contiguous()
        w = weight.contiguous()
        xq = _cast(x2, r.x, "x", state, _delayed(r.x, "x"))
        wq = _cast(w, r.w, "w", state, _delayed(r.w, "w"))
        y = linear(xq, wq, None if bias is None else bias.float(), profile=r.profile, model=r.model,
                   out_dtype=_out_dtype(x.dtype))
        # the backward's B operands: W (along N) for dx, x (along M) for dW
        wb = _b_operand(w, wq, layer._plan["w_t"], "w_t", state)
        xb = _b_operand(x2, xq, layer._plan["x_t"], "x_t", state)
        del xq, wq
        ctx.save_for_backward(*wb.tensors(), *xb.tensors())
        ctx.meta = (layer, step, wb.meta(), xb.meta(), x.shape, x.dtype, weight.dtype, bias is not None)
        return y.reshape(*x.shape[:-1], y.shape[-1])

    @staticmethod
    def backward(ctx, dy: torch.Tensor):
        layer, step, wb_meta, xb_meta, x_shape, x_dtype, w_dtype, has_bias = ctx.meta
        w_codes, w_scales, w_global, x_codes, x_scales, x_global = ctx.saved_tensors
        r = layer.recipe
        state = _State(layer, step)
        dy2 = dy.reshape(-1, dy.shape[-1]).contiguous()
        dyq = _cast(dy2, r.dy, "dy", state, _delayed(r.dy, "dy"))
        dx = _Operand.of(w_codes, w_scales, w_global, wb_meta).gemm(dyq, r, _out_dtype(x_dtype))
        dytq = _a_operand(dy2, dyq, layer._plan["dy_t"], "dy_t", state)
        del dyq
        dw = _Operand.of(x_codes, x_scales, x_global, xb_meta).gemm(dytq, r, _out_dtype(w_dtype))
        db = _bias_grad(dy2, w_dtype) if has_bias else None
        return dx.reshape(x_shape), dw, db, None, None


def _recipe_arg(recipe: Union[Recipe, str, None], name: str = "recipe") -> Recipe:
    """A Recipe, a recipe's name (RECIPES) or None (tensorwise); TypeError naming ``name`` else."""
    if recipe is None:
        return named_recipe("tensorwise")
    if isinstance(recipe, str):
        return named_recipe(recipe)  # ValueError listing the names for an unknown one
    if not isinstance(recipe, Recipe):
        raise TypeError(f"{name} must be a fp8q.training.Recipe or one of the names {', '.join(RECIPES)}, "
                        f"not {type(recipe).__name__}")
    return recipe


def _process_group_arg(group: object, name: str = "process_group") -> Optional["dist.ProcessGroup"]:
    if group is not None and dist.is_available() and not isinstance(group, dist.ProcessGroup):
        raise TypeError(f"{name} must be a torch.distributed.ProcessGroup or None, not {type(group).__name__}")
    return group  # type: ignore[return-value]


def _layer_id_arg(layer_id: object) -> int:
    if isinstance(layer_id, bool) or not isinstance(layer_id, int):
        raise TypeError(f"layer_id must be an int, not {type(layer_id).__name__}")
    if layer_id < 0:
        raise ValueError(f"layer_id = {layer_id} must be >= 0")
    return layer_id


class Float8Linear(torch.nn.Linear):
    """A drop-in ``nn.Linear`` whose GEMMs are the recipe's (recipes.py).

    ``recipe``: a Recipe or a recipe's name (``RECIPES``; default tensorwise). ``process_group``:
    where per-tensor amaxes are all-reduced (MAX); default the world when torch.distributed is
    initialised. ``layer_id`` keys stochastic rounding (convert_to_float8_training numbers the
    layers in module order). An argument of the wrong type raises TypeError naming it.
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, *,
                 recipe: Union[Recipe, str, None] = None, process_group: Optional["dist.ProcessGroup"] = None,
                 layer_id: int = 0, device: Optional[torch.device] = None, dtype: Optional[torch.dtype] = None):
        r = _recipe_arg(recipe)
        group = _process_group_arg(process_group)
        layer = _layer_id_arg(layer_id)
        super().__init__(in_features, out_features, bias, device=device, dtype=dtype)
        self.recipe = r
        self.process_group = group
        self.fp8_layer_id = layer
        self._init_state(device)

    def _init_state(self, device: Optional[torch.device]) -> None:
        self._step = 0
        # the step keys stochastic rounding and the Hadamard signs
        self._stochastic = any(getattr(self.recipe, r).rounding == "sr" or getattr(self.recipe, r).hadamard
                               for r in ROLES)
        self._plan = json.loads(torch.ops.fp8q.recipe_plan(self.recipe.to_json()))
        self.register_buffer("fp8_step", torch.zeros((), dtype=torch.int64, device=device))
        if self.recipe.delayed:
            n = self.recipe.history_length
            for name in ("x", "w", "dy"):
                self.register_buffer(f"fp8_history_{name}", torch.zeros(n, dtype=torch.float32, device=device))
                self.register_buffer(f"fp8_scale_{name}", torch.ones(1, dtype=torch.float32, device=device))

    @classmethod
    def from_linear(cls, module: torch.nn.Linear, recipe: Union[Recipe, str, None] = None, *,
                    process_group: Optional["dist.ProcessGroup"] = None, layer_id: int = 0) -> "Float8Linear":
        """A Float8Linear holding ``module``'s own weight and bias Parameters (not copies)."""
        if not isinstance(module, torch.nn.Linear):
            raise TypeError(f"module must be a torch.nn.Linear, not {type(module).__name__}")
        with torch.device("meta"):
            new = cls(module.in_features, module.out_features, module.bias is not None, recipe=recipe,
                      process_group=process_group, layer_id=layer_id)
        new.weight = module.weight
        new.bias = module.bias
        device = module.weight.device
        for name, b in list(new.named_buffers()):
            new.register_buffer(name, torch.zeros_like(b, device=device) if "scale" not in name
                                else torch.ones_like(b, device=device))
        return new

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # the step keys stochastic rounding; a Python copy of the buffer spares a device read
        step = self._step if self._stochastic else 0
        self._step += 1
        with torch.no_grad():
            self.fp8_step.add_(1)
        return _Float8LinearFunction.apply(x, self.weight, self.bias, self, step)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        # a plain nn.Linear's state_dict has no fp8 state: the converted layer starts from its initial state
        for name, b in self.named_buffers():
            if name.startswith("fp8_") and prefix + name not in state_dict:
                state_dict[prefix + name] = b
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)
        self._step = int(self.fp8_step.item())

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, recipe={self.recipe.name}, profile={self.recipe.profile}"


def convert_to_float8_training(
    model: torch.nn.Module,
    *,
    recipe: Union[Recipe, str, None] = None,
    module_filter_fn: Optional[Callable[[torch.nn.Module, str], bool]] = None,
    process_group: Optional["dist.ProcessGroup"] = None,
) -> torch.nn.Module:
    """Swaps every ``nn.Linear`` of ``model`` that ``module_filter_fn(module, fqn)`` accepts
    (default: all) for a Float8Linear with the same Parameters, in place; returns ``model``.
    ``recipe`` is a Recipe or a recipe's name (``RECIPES``; default tensorwise). The call shape
    is torchao's ``convert_to_float8_training``. Every argument is checked before any layer is
    swapped: a wrong type raises TypeError naming it, an unknown recipe name ValueError."""
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, not {type(model).__name__}")
    r = _recipe_arg(recipe)
    if module_filter_fn is not None and not callable(module_filter_fn):
        raise TypeError(f"module_filter_fn must be callable (module, fqn) -> bool or None, "
                        f"not {type(module_filter_fn).__name__}")
    _process_group_arg(process_group)
    counter = [0]

    def swap(parent: torch.nn.Module, prefix: str) -> None:
        for name, child in list(parent.named_children()):
            fqn = f"{prefix}.{name}" if prefix else name
            if type(child) is torch.nn.Linear and (module_filter_fn is None or module_filter_fn(child, fqn)):
                setattr(parent, name, Float8Linear.from_linear(child, r, process_group=process_group,
                                                               layer_id=counter[0]))
                counter[0] += 1
            else:
                swap(child, fqn)

    swap(model, "")
    return model


def strip_fp8_state(state_dict: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The state_dict without fp8q's buffers: what a plain (unconverted) model loads strictly."""
    return {k: v for k, v in state_dict.items() if not k.rsplit(".", 1)[-1].startswith("fp8_")}
