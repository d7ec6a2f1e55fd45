"""fp8q::torch::Float8Linear (LibTorch, fp8q/torch/training.hpp) against fp8q.training: the same
named recipes (their JSON), the same forward and gradients bit for bit on the same data, and the
C++ example (examples/libtorch_training/train.cpp) trains a small model with four recipes."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import torch

from fp8q.training import RECIPES, Float8Linear, recipe


@pytest.fixture(scope="module")
def program(cli) -> Path:
    path = cli.parent / "fp8q-train-libtorch"
    if not path.is_file():
        pytest.fail(f"no {path}: build with scripts/build.sh (FP8Q_BUILD_TORCH)")
    return path


def test_the_named_recipes_are_the_same(program):
    lines = subprocess.run([str(program), "recipes"], check=True, capture_output=True, text=True).stdout.splitlines()
    cpp = {json.loads(line)["name"]: json.loads(line) for line in lines}
    assert sorted(cpp) == sorted(RECIPES)
    for name in RECIPES:
        assert cpp[name] == json.loads(recipe(name).to_json()), name


@pytest.mark.parametrize("name", RECIPES)
def test_one_step_gives_the_same_bits(tmp_path, program, name):
    m, k, n = 32, 256, 96  # m: the weight gradient's contraction, a multiple of NVFP4's 16
    g = torch.Generator().manual_seed(4)
    x, w = torch.randn(m, k, generator=g) * 2, torch.randn(n, k, generator=g) * 0.05
    b, dy = torch.randn(n, generator=g), torch.randn(m, n, generator=g) * 1e-2
    for t, f in ((x, "x"), (w, "w"), (b, "b"), (dy, "dy")):
        t.numpy().tofile(tmp_path / f"{f}.f32")
    (tmp_path / "shape").write_text(f"{m} {k} {n}")
    subprocess.run([str(program), "step", str(tmp_path), name], check=True, capture_output=True, text=True)
    layer = Float8Linear(k, n, recipe=recipe(name))
    with torch.no_grad():
        layer.weight.copy_(w)
        layer.bias.copy_(b)
    xr = x.clone().requires_grad_()
    y = layer(xr)
    y.backward(dy)
    for got, want, shape in (("y", y.detach(), (m, n)), ("dx", xr.grad, (m, k)), ("dw", layer.weight.grad, (n, k)),
                             ("db", layer.bias.grad, (n,))):
        cpp = torch.from_file(str(tmp_path / f"{got}.f32"), size=want.numel(), dtype=torch.float32).reshape(shape)
        assert torch.equal(cpp.view(torch.int32), want.contiguous().view(torch.int32)), got


def test_the_cpp_example_trains(program):
    done = subprocess.run([str(program), "200"], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("after 200 steps") == 4
