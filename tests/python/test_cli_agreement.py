"""The Python API gives the C++ library's bits: one shared vector set (vectors.py) through
``fp8q.convert`` / ``quantize`` / ``matmul`` and through the fp8q tool (the C++ library with no
torch in between), compared byte for byte."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file

import fp8q
from vectors import bits, fp32_vectors

X = fp32_vectors()
SOURCES = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}
NARROW = ["e4m3fn", "e4m3", "e5m2", "e4m3fnuz", "e5m2fnuz", "e3m4", "e8m0", "e2m3", "e3m2", "e2m1"]
# (rounding, overflow, scale, seed)
CASES = [("rne", "saturate", None, 0), ("rne", "inf-nan", None, 0), ("rtz", "inf-nan", 0.75, 0),
         ("rna", "saturate", None, 0), ("rup", "inf-nan", None, 0), ("rdn", "saturate", 3.5, 0),
         ("rto", "saturate", None, 0), ("sr", "saturate", None, (1 << 64) - 3), ("sr", "inf-nan", 2.0**-20, 11)]


def run(cli: Path, *args: object) -> None:
    done = subprocess.run([str(cli), *map(str, args)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def one_code_a_byte(t: torch.Tensor) -> np.ndarray:
    return fp8q.formats.unpack_fp4(t).numpy() if t.dtype == torch.float4_e2m1fn_x2 else bits(t)


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("rounding, overflow, scale, seed", CASES, ids=lambda v: str(v))
def test_convert_matches_the_tool(tmp_path, cli, source, rounding, overflow, scale, seed):
    x = X.to(SOURCES[source])
    x = x[: x.numel() // 2 * 2]  # e2m1 packs pairs
    src = tmp_path / "x.raw"
    src.write_bytes(x.view(torch.uint8).numpy().tobytes())
    for to in NARROW:
        out = tmp_path / f"{to}.raw"
        extra = ["--scale", repr(scale)] if scale is not None else []
        run(cli, "convert", "--from", source, "--to", to, "--round", rounding, "--overflow", overflow, "--seed", seed,
            "--offset", 5, "--nan", "zero", *extra, src, out)
        ours = fp8q.convert(x, to, rounding=rounding, overflow=overflow, seed=seed, offset=5, nan="zero",
                            scale=scale)
        want = np.frombuffer(out.read_bytes(), dtype=np.uint8)
        got = one_code_a_byte(ours).reshape(-1)
        bad = np.flatnonzero(got != want)
        assert bad.size == 0, f"{source}->{to}: {bad.size} differ, first at {bad[0]}: {got[bad[0]]} vs {want[bad[0]]}"


def test_decode_matches_the_tool(tmp_path, cli):
    codes = torch.arange(256, dtype=torch.uint8)
    src = tmp_path / "codes.raw"
    src.write_bytes(codes.numpy().tobytes())
    for fmt in NARROW:
        n = 16 if fmt == "e2m1" else 64 if fmt in ("e2m3", "e3m2") else 256
        src.write_bytes(codes[:n].numpy().tobytes())
        for to, dtype in SOURCES.items():
            out = tmp_path / "d.raw"
            run(cli, "convert", "--from", fmt, "--to", to, "--overflow", "inf-nan", src, out)
            ours = fp8q.convert(codes[:n], dtype, from_format=fmt, overflow="inf-nan")
            assert ours.view(torch.uint8).numpy().tobytes() == out.read_bytes(), (fmt, to)


SCHEMES = [("tensor", "e4m3fn", []), ("row", "e5m2", ["--apply", "divide"]), ("col", "e4m3", ["--pow2"]),
           ("block1x128", "e4m3fn", ["--margin", "2"]), ("block128x128", "e4m3fnuz", ["--apply", "divide"]),
           ("mx", "e4m3fn", ["--scale-rule", "trainium3"]), ("mx", "e2m1", ["--scale-rule", "rceil"]),
           ("mx", "e3m2", ["--scale-rule", "even", "--round", "sr", "--seed", "9"]), ("block3x5", "e3m4", [])]


@pytest.mark.parametrize("scheme, elem, extra", SCHEMES, ids=lambda v: str(v))
def test_quantize_matches_the_tool(tmp_path, cli, scheme, elem, extra):
    finite = X[torch.isfinite(X)]
    w = finite[: 200 * 136].reshape(200, 136).clone()
    w = w / w.abs().amax(dim=1, keepdim=True).clamp(min=1e-30)  # rows of sensible range
    tensors = {"w": w, "h": (w * 3).to(torch.bfloat16)[:, :64].contiguous()}
    src, out = tmp_path / "in.safetensors", tmp_path / "out.safetensors"
    save_file(tensors, str(src))
    run(cli, "quantize-tensors", src, out, "--granularity", scheme, "--elem", elem, *extra)
    got = load_file(str(out))
    opts = dict(granularity=scheme, scale_op="divide" if "divide" in extra else "multiply",
                power_of_two="--pow2" in extra, margin=2 if "--margin" in extra else 0,
                mx_rule=extra[1] if "--scale-rule" in extra else "floor",
                rounding="sr" if "sr" in extra else "rne", seed=9 if "sr" in extra else 0)
    for name, t in tensors.items():
        q = fp8q.quantize(t, elem, **opts)
        assert np.array_equal(one_code_a_byte(q.codes).reshape(-1),
                              one_code_a_byte(got[name].view(q.codes.dtype) if got[name].dtype != torch.uint8
                                              or q.codes.dtype != torch.float4_e2m1fn_x2
                                              else got[name].view(torch.float4_e2m1fn_x2)).reshape(-1)), name
        if scheme == "mx":
            assert np.array_equal(bits(q.scales).reshape(-1), bits(got[name + ".scale"]).reshape(-1)), name
        else:
            assert np.array_equal(bits(q.scales).reshape(-1), bits(got[name + ".scale_inv"]).reshape(-1)), name


MATMULS = [("trn3", None, "tensor", "row"), ("hopper", None, "tensor", "tensor"), ("ocp", "exact_block:32", "row", "row"),
           ("trn3", None, "block1x128", "block128x128"), ("trn3", None, "mx", "mx"), ("ocp", None, "mx", "mx"),
           ("fp32", "fused:32:13:rtz:promote128", "row", "tensor"), ("trn3", "systolic:128", "tensor", "tensor")]


@pytest.mark.parametrize("profile, model, sa, sb", MATMULS, ids=lambda v: str(v))
def test_matmul_matches_the_tool(tmp_path, cli, profile, model, sa, sb):
    g = torch.Generator().manual_seed(4)
    m, k, n = 33, 300, 140
    a = torch.randn(m, k, generator=g) * torch.logspace(-3, 3, k)
    w = torch.randn(n, k, generator=g)
    qa = fp8q.quantize(a, "e4m3fn", granularity=sa)
    qw = fp8q.quantize(w, "e4m3fn", granularity=sb)
    bias = torch.randn(n, generator=g)
    ours = fp8q.linear(qa, qw, bias, profile=profile, model=model)
    tensors = {"a": qa.codes, "bt": qw.codes, "bias": bias}
    for name, q in (("a", qa), ("bt", qw)):
        tensors[name + (".scale" if q.granularity == "mx" else ".scale_inv")] = (
            q.scales.view(torch.uint8) if q.granularity == "mx" else q.scales.reshape(-1) if q.granularity in
            ("tensor",) else q.scales)
    src, out = tmp_path / "ab.safetensors", tmp_path / "d.safetensors"
    save_file(tensors, str(src))
    run(cli, "matmul", src, out, "--profile", profile, *(["--model", model] if model else []))
    d = load_file(str(out))["d"]
    assert np.array_equal(bits(ours), bits(d))
    # and the Trainium instruction emulation gives the same bits where the profile is Trainium's
    # (MX data quantized in blocks of 32 consecutive K runs on the 1x32 layout: wrapx groups mix blocks)
    if profile.startswith("trn") and model is None and sa != "block1x128":
        layout = "trainium3_mx:1x32" if sa == "mx" else None
        want = d if layout is None else fp8q.linear(qa, qw, bias, profile=profile, model=layout)
        got = fp8q.linear(qa, qw, bias, profile=profile, model=layout, trainium=True)
        assert np.array_equal(bits(got), bits(want))
