"""fp8q.training: every GEMM of Float8Linear equals fp8q.linear on the recipe's casts, bit for
bit; mxfp8_trn3's forward equals nc_matmul_mx issued over Trainium3 tiles; recipes round-trip
through JSON; delayed-scaling state survives a checkpoint exactly; plain state_dicts load both
ways; torch.compile gives eager's bits."""

from __future__ import annotations

import copy
import dataclasses

import pytest
import torch

import fp8q
from fp8q.training import RECIPES, Cast, Float8Linear, Recipe, convert_to_float8_training, recipe, strip_fp8_state
from fp8q.training.linear import _HADAMARD_ID, _ROLE_ID, _mix

M, K, N = 32, 256, 160  # M: the weight gradient's contraction, a multiple of NVFP4's 16


def bits(t: torch.Tensor) -> torch.Tensor:
    return t.contiguous().view(torch.int32 if t.dtype == torch.float32 else torch.int16)


def q(t: torch.Tensor, c: Cast, role: str = "x", seed: int = 0) -> fp8q.QuantizedTensor:
    """The cast written with fp8q.quantize alone (current scaling); a stochastic one keyed as the
    layer keys its first step's cast of ``role`` (docs/training.md: splitmix64 of the recipe's
    seed, layer 0, step 0 and the operand)."""
    key = _mix(seed, 0, 0, _ROLE_ID[role]) if c.rounding == "sr" else 0
    if c.hadamard:  # the layer's first step's signs, shared by dy_t and x_t
        t = fp8q.hadamard16(t.contiguous(), _mix(seed, 0, 0, _HADAMARD_ID) & 0xFFFF)
    return fp8q.quantize(t.contiguous(), c.format, granularity=c.granularity, scale_op=c.scale_op,
                         power_of_two=c.power_of_two, mx_rule=c.mx_rule, rounding=c.rounding, seed=key)


def layer_and_grads(r: Recipe, dtype: torch.dtype):
    g = torch.Generator().manual_seed(3)
    layer = Float8Linear(K, N, recipe=r, dtype=dtype)
    with torch.no_grad():
        layer.weight.copy_(torch.randn(N, K, generator=g) * 0.05)
        layer.bias.copy_(torch.randn(N, generator=g))
    x = (torch.randn(M, K, generator=g) * 3).to(dtype).requires_grad_()
    dy = (torch.randn(M, N, generator=g) * 1e-3).to(dtype)
    y = layer(x)
    y.backward(dy)
    return layer, x, dy, y


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("name", [n for n in RECIPES if n != "delayed"])
def test_three_gemms_are_fp8q_linear_on_the_casts(name, dtype):
    r = recipe(name)
    layer, x, dy, y = layer_and_grads(r, dtype)
    w = layer.weight.detach()
    kw = dict(profile=r.profile, model=r.model)
    want_y = fp8q.linear(q(x.detach(), r.x), q(w, r.w), layer.bias.detach().float(), out_dtype=dtype, **kw)
    want_dx = fp8q.linear(q(dy, r.dy, "dy"), q(w.t(), r.w_t, "w_t"), out_dtype=dtype, **kw)
    want_dw = fp8q.linear(q(dy.t(), r.dy_t, "dy_t"), q(x.detach().t(), r.x_t, "x_t"), out_dtype=dtype, **kw)
    assert torch.equal(bits(y.detach()), bits(want_y))
    assert torch.equal(bits(x.grad), bits(want_dx))
    assert torch.equal(bits(layer.weight.grad), bits(want_dw))
    assert torch.equal(layer.bias.grad, dy.sum(0))


def test_non_contiguous_and_batched_inputs():
    layer = Float8Linear(K, N, recipe=recipe("rowwise"))
    x = torch.randn(3, K, 8).transpose(1, 2)  # [3, 8, K], not contiguous
    y = layer(x)
    assert y.shape == (3, 8, N)
    assert torch.equal(y, layer(x.contiguous().reshape(24, K)).reshape(3, 8, N))


def test_forward_saves_fp8_operands_only():
    layer = Float8Linear(K, N, recipe=recipe("rowwise"))
    x = torch.randn(M, K, requires_grad=True)
    saved = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t) or t, lambda t: t):
        layer(x)
    assert saved and all(t.dtype in (torch.float8_e4m3fn, torch.float8_e5m2, torch.float32) and
                         (t.dtype != torch.float32 or t.numel() < M * K / 16) for t in saved), \
        [(t.dtype, tuple(t.shape)) for t in saved]


def test_mxfp8_trn3_forward_is_nc_matmul_mx_over_trainium3_tiles():
    r = recipe("mxfp8_trn3")
    k = 1024  # two K tiles of 512, accumulated in PSUM
    g = torch.Generator().manual_seed(8)
    layer = Float8Linear(k, 40, bias=False, recipe=r)
    x = torch.randn(16, k, generator=g) * 4
    y = layer(x)
    qa, qb = q(x, r.x), q(layer.weight.detach(), r.w)

    def tiles(qt):  # [rows, K] along K -> per K tile: the x4 image [128, rows, 4], scales [128, rows]
        image = fp8q.trn.pack_codes(qt.codes.t().contiguous(), "1x32").view(torch.uint8)
        scales = fp8q.trn.pack_scales(qt.scales.t().contiguous(), "1x32", k)
        return [(image[:, t].contiguous(), scales[:, t].contiguous()) for t in range(image.shape[1])]

    psum = None
    for (sa, ss), (sb, sbs) in zip(tiles(qa), tiles(qb)):
        psum = fp8q.trn.nc_matmul_mx(sa, ss, sb, sbs, psum=psum)
    assert torch.equal(bits(y.detach()), bits(psum))


@pytest.mark.parametrize("name", RECIPES)
def test_recipes_print_and_round_trip_through_json(name):
    for r in (recipe(name), recipe(name, stochastic_gradients=True, seed=9, profile="fp32")):
        assert Recipe.from_json(r.to_json()) == r
        assert name in repr(r)
    with pytest.raises(ValueError, match="unknown field"):
        Recipe.from_dict({**recipe(name).to_dict(), "typo": 1})


def test_from_dict_takes_casts_or_their_dicts():
    r = recipe("blockwise")
    assert Recipe.from_dict({**r.to_dict(), "w": r.w}) == r
    assert Recipe.from_dict(r.to_dict()) == r


def test_bad_recipes_are_refused_with_the_field_named():
    with pytest.raises(ValueError, match="delayed scaling is per tensor"):
        Cast("e4m3fn", "row", scaling="delayed")
    with pytest.raises(ValueError, match="x is block1x128 and w is tensor"):
        dataclasses.replace(recipe("tensorwise"), x=Cast("e4m3fn", "block1x128"))
    with pytest.raises(ValueError, match="no recipe named"):
        recipe("fp4")
    with pytest.raises(TypeError, match="float32 or bfloat16"):
        Float8Linear(K, N)(torch.randn(2, K, dtype=torch.float16))


def model_of(r: Recipe) -> torch.nn.Module:
    # ReLU: exact in eager and compiled code alike (inductor's GELU backward rounds differently)
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 64))
    return convert_to_float8_training(m, recipe=r)


def train(model: torch.nn.Module, steps: range) -> None:
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for s in steps:
        g = torch.Generator().manual_seed(100 + s)
        x = torch.randn(32, 64, generator=g)
        loss = (model(x) - x.flip(-1)).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()


@pytest.mark.parametrize("name", ["delayed", "tensorwise"])
def test_state_survives_a_checkpoint_bit_for_bit(name):
    r = recipe(name, history_length=4, stochastic_gradients=True, seed=5)
    straight = model_of(r)
    train(straight, range(0, 7))
    broken = model_of(r)
    train(broken, range(0, 3))
    saved = copy.deepcopy(broken.state_dict())
    resumed = model_of(r)
    resumed.load_state_dict(saved)
    train(resumed, range(3, 7))
    for (k, a), b in zip(straight.state_dict().items(), resumed.state_dict().values()):
        assert torch.equal(a, b), k
    if name == "delayed":
        assert straight[0].fp8_history_dy.count_nonzero() == 4  # the history filled: the state is in use


def test_plain_state_dicts_load_both_ways():
    plain = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 64))
    converted = model_of(recipe("delayed", history_length=8))
    converted.load_state_dict(plain.state_dict())  # the fp8 state initialised
    assert torch.equal(converted[0].weight, plain[0].weight)
    assert converted[0].fp8_scale_x.item() == 1.0 and converted[0].fp8_history_x.count_nonzero() == 0
    train(converted, range(2))
    plain.load_state_dict(strip_fp8_state(converted.state_dict()))
    assert torch.equal(converted[2].weight, plain[2].weight)


def test_module_filter_and_the_parameters_kept():
    m = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.Linear(64, 8))
    w = m[0].weight
    convert_to_float8_training(m, recipe=recipe("rowwise"), module_filter_fn=lambda mod, fqn: fqn != "1")
    assert type(m[0]) is Float8Linear and type(m[1]) is torch.nn.Linear
    assert m[0].weight is w  # the same Parameter: an optimizer built before still updates it


def test_a_recipe_name_is_the_named_recipe():
    torch.manual_seed(0)
    by_name = torch.nn.Sequential(torch.nn.Linear(64, 32))
    by_recipe = copy.deepcopy(by_name)
    convert_to_float8_training(by_name, recipe="rowwise")
    convert_to_float8_training(by_recipe, recipe=recipe("rowwise"))
    assert by_name[0].recipe == recipe("rowwise")
    x = torch.randn(16, 64)
    assert torch.equal(by_name(x), by_recipe(x))
    assert Float8Linear(64, 32, recipe="blockwise").recipe == recipe("blockwise")


def _untouched(m: torch.nn.Module) -> bool:
    return all(type(c) is not Float8Linear for c in m.modules())


@pytest.mark.parametrize("argument, value, error, words", [
    ("recipe", 3, TypeError, "recipe must be a fp8q.training.Recipe or one of the names tensorwise"),
    ("recipe", {"x": None}, TypeError, "recipe must be"),
    ("recipe", "nope", ValueError, "no recipe named 'nope'"),
    ("module_filter_fn", "all", TypeError, "module_filter_fn must be callable"),
    ("process_group", "world", TypeError, "process_group must be a torch.distributed.ProcessGroup"),
])
def test_convert_refuses_bad_arguments_before_swapping_a_layer(argument, value, error, words):
    m = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 4))
    with pytest.raises(error, match=words):
        convert_to_float8_training(m, **{argument: value})
    assert _untouched(m)


def test_convert_refuses_a_model_that_is_not_a_module():
    with pytest.raises(TypeError, match="model must be a torch.nn.Module, not list"):
        convert_to_float8_training([torch.nn.Linear(8, 8)])


@pytest.mark.parametrize("argument, value, error, words", [
    ("recipe", 1.5, TypeError, "recipe must be"),
    ("recipe", "nope", ValueError, "no recipe named"),
    ("process_group", 0, TypeError, "process_group must be"),
    ("layer_id", "0", TypeError, "layer_id must be an int, not str"),
    ("layer_id", True, TypeError, "layer_id must be an int, not bool"),
    ("layer_id", -1, ValueError, "layer_id = -1 must be >= 0"),
])
def test_float8_linear_refuses_bad_arguments(argument, value, error, words):
    with pytest.raises(error, match=words):
        Float8Linear(8, 4, **{argument: value})
    with pytest.raises(error, match=words):
        Float8Linear.from_linear(torch.nn.Linear(8, 4), **{argument: value})


def test_from_linear_refuses_a_module_that_is_not_linear():
    with pytest.raises(TypeError, match="module must be a torch.nn.Linear, not Conv1d"):
        Float8Linear.from_linear(torch.nn.Conv1d(4, 4, 1))


# nvfp4: stochastic gradients and the Hadamard signs keyed per step (each step compiles anew)
@pytest.mark.parametrize("name", ["tensorwise", "delayed", "mxfp8_rceil", "nvfp4"])
def test_compiled_model_gives_eagers_bits(name):
    r = recipe(name, history_length=4)
    eager, compiled = model_of(r), model_of(r)
    fn = torch.compile(compiled, fullgraph=True)
    for step in range(2):
        x = torch.randn(16, 64, generator=torch.Generator().manual_seed(step), requires_grad=True)
        xc = x.detach().clone().requires_grad_()
        ye, yc = eager(x), fn(xc)
        ye.square().sum().backward()
        yc.square().sum().backward()
        assert torch.equal(bits(ye.detach()), bits(yc.detach()))
        assert torch.equal(bits(x.grad), bits(xc.grad))
        for (k, a), b in zip(eager.named_parameters(), compiled.parameters()):
            assert torch.equal(bits(a.grad), bits(b.grad)), k
    for (k, a), b in zip(eager.state_dict().items(), compiled.state_dict().values()):
        assert torch.equal(a, b), k


def test_the_training_example_runs(tmp_path):
    """examples/training/train_charlm.py, three steps of three runs: the table and the plot."""
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[2] / "examples" / "training" / "train_charlm.py"
    done = subprocess.run([sys.executable, str(script), "--steps", "3", "--batch", "4", "--out", str(tmp_path),
                           "--runs", "bf16,tensorwise,mxfp8_trn3 (floor rule)"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    table = (tmp_path / "results.md").read_text().splitlines()
    assert len(table) == 5 and "mxfp8_trn3 (floor rule)" in table[-1]
    assert (tmp_path / "loss.png").stat().st_size > 10000
