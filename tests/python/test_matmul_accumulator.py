"""C as the accumulator input of fp8q.matmul / fp8q.linear (``c_role="accumulator"``) and the
``c_role`` argument of torch.ops.fp8q.matmul: the definition on exact cases, the fused model's
alignment, the CLI's bits, old calls without the argument, the fake kernel, and the errors."""

from __future__ import annotations

import struct
import subprocess
from pathlib import Path

import pytest
import torch

import fp8q


def _e4m3(rows: list[list[float]]) -> torch.Tensor:
    return torch.tensor(rows).to(torch.float8_e4m3fn)


def test_accumulator_is_before_the_dequantization_multiply():
    # acc = 1 + 1 = 2; A per tensor with scale_inv 0.5
    x = _e4m3([[1.0, 1.0]])
    ones = _e4m3([[1.0], [1.0]])
    c = torch.tensor([[3.0]])
    a = fp8q.QuantizedTensor(codes=x, scales=torch.tensor([[0.5]]), format="e4m3fn", granularity="tensor")
    assert fp8q.matmul(a, ones, profile="ocp", c=c).item() == 2 * 0.5 + 3
    assert fp8q.matmul(a, ones, profile="ocp", c=c, c_role="accumulator").item() == (3 + 2) * 0.5


def test_fused_model_aligns_c_with_the_products():
    x, one, c = _e4m3([[1.5, 0.75]]), _e4m3([[1.0], [1.0]]), torch.tensor([[8192.0]])
    # fused:32:13:rtz: E = 13 from C, quantum 1: 1.5 -> 1, 0.75 -> 0
    assert fp8q.matmul(x, one, profile="hopper", c=c, c_role="accumulator").item() == 8193.0
    assert fp8q.matmul(x, one, profile="hopper", c=c, c_role="epilogue").item() == 8194.25
    # a sequential sum from C keeps every product
    assert fp8q.matmul(x, one, profile="ocp", c=c, c_role="accumulator").item() == 8194.25


def test_random_against_an_exact_sum():
    # small integers: fp32 sums are exact in every model, so D = (C + A B) * s exactly
    g = torch.Generator().manual_seed(5)
    a = torch.randint(-8, 9, (6, 70), generator=g).float()
    w = torch.randint(-8, 9, (5, 70), generator=g).float()
    c = torch.randint(-100, 101, (6, 5), generator=g).float()
    qa = fp8q.QuantizedTensor(codes=a.to(torch.float8_e4m3fn), scales=torch.tensor([[0.25]]), format="e4m3fn",
                              granularity="tensor")
    qw = fp8q.QuantizedTensor(codes=w.to(torch.float8_e4m3fn), scales=torch.tensor([[2.0]]), format="e4m3fn",
                              granularity="tensor")
    want = (c + a @ w.t()) * 0.5
    for profile in ("trn3", "ocp", "hopper", "fp32"):
        got = fp8q.linear(qa, qw, profile=profile, c=c, c_role="accumulator")
        assert torch.equal(got, want), profile
    got = fp8q.linear(qa, qw, profile="trn3", c=c, c_role="accumulator", trainium=True)
    assert torch.equal(got, want)


def test_negative_zero_c_with_zero_products():
    zero, neg = _e4m3([[0.0, 0.0]]), _e4m3([[-1.0], [-1.0]])  # products -0, -0
    c = torch.tensor([[-0.0]])
    seq = fp8q.matmul(zero, neg, profile="fp32", c=c, c_role="accumulator")
    assert seq.item() == 0.0 and torch.signbit(seq).item()
    systolic = fp8q.matmul(zero, neg, profile="trn3", c=c, c_role="accumulator")  # tile sums start at +0
    assert systolic.item() == 0.0 and not torch.signbit(systolic).item()


def test_old_positional_calls_keep_the_epilogue_role():
    x, one, c = _e4m3([[1.5, 0.75]]), _e4m3([[1.0], [1.0]]), torch.tensor([[8192.0]])
    old = torch.ops.fp8q.matmul(x, one, "hopper", "", "", "tensor", None, "tensor", None, c, None, "", torch.float32, False)
    assert old.item() == 8194.25
    new = torch.ops.fp8q.matmul(x, one, "hopper", "", "", "tensor", None, "tensor", None, c, None, "", torch.float32,
                                False, "accumulator")
    assert new.item() == 8193.0
    assert torch.ops.fp8q.matmul(x, one, "hopper", c=c, c_role="accumulator").item() == 8193.0


def test_fake_kernel_and_schema():
    codes = _e4m3([[1.0, 2.0], [3.0, 4.0]]).view(torch.uint8)  # raw codes with their format named
    c = torch.ones(2, 2)
    torch.library.opcheck(torch.ops.fp8q.matmul.default, (codes, codes.t().contiguous(), "hopper", "e4m3fn", "e4m3fn"),
                          dict(c=c, c_role="accumulator"),
                          test_utils=("test_schema", "test_faketensor", "test_aot_dispatch_static"))


@pytest.mark.parametrize("kwargs, pattern", [
    (dict(c_role="beta", c=torch.zeros(1, 1)), r"c_role: unknown 'beta'"),
    (dict(c_role="accumulator"), r"c_role: 'accumulator' needs c"),
])
def test_errors_name_the_argument(kwargs, pattern):
    with pytest.raises(ValueError, match=pattern):
        fp8q.matmul(_e4m3([[1.0]]), _e4m3([[1.0]]), profile="ocp", **kwargs)


def _safetensors(path: Path, tensors: dict[str, tuple[str, list[int], bytes]]) -> None:
    import json

    header, data = {}, b""
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    h = json.dumps(header).encode()
    h += b" " * (-(8 + len(h)) % 8)
    path.write_bytes(struct.pack("<Q", len(h)) + h + data)


def test_the_cli_gives_the_same_bits(cli: Path, tmp_path: Path):
    g = torch.Generator().manual_seed(9)
    a = (torch.randn(5, 96, generator=g) * 4).to(torch.float8_e4m3fn)
    b = (torch.randn(96, 7, generator=g) * 4).to(torch.float8_e4m3fn)
    c = torch.randn(5, 7, generator=g) * 1000
    inp = tmp_path / "in.safetensors"
    _safetensors(inp, {"a": ("F8_E4M3", [5, 96], a.view(torch.uint8).numpy().tobytes()),
                       "b": ("F8_E4M3", [96, 7], b.view(torch.uint8).numpy().tobytes()),
                       "c": ("F32", [5, 7], c.numpy().tobytes())})
    for profile in ("hopper", "ocp", "trn3"):
        out = tmp_path / f"{profile}.safetensors"
        subprocess.run([str(cli), "matmul", str(inp), str(out), "--profile", profile, "--c-role", "accumulator"],
                       check=True)
        raw = out.read_bytes()
        n = struct.unpack("<Q", raw[:8])[0]
        d = torch.frombuffer(bytearray(raw[8 + n:]), dtype=torch.float32).reshape(5, 7)
        py = fp8q.matmul(a, b, profile=profile, c=c, c_role="accumulator")
        assert torch.equal(d.view(torch.int32), py.view(torch.int32)), profile
