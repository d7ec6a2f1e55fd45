"""fp8q.calib: the histogram state is exact under merge and save/load, and the calibrators give
the fp8q tool's amax (the C++ library) for the same samples."""

from __future__ import annotations

import io
import json
import subprocess

import pytest
import torch
from safetensors.torch import save_file

import fp8q

METHODS = ["max", "percentile", "mse", "entropy"]


def samples(n: int = 20000, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, generator=g) * torch.exp(torch.randn(n, generator=g))  # heavy tails
    x[:7] = torch.tensor([0.0, -0.0, float("nan"), float("inf"), -float("inf"), 1e-40, 3e4])
    return x


def test_merge_equals_observing_everything():
    a, b = samples(seed=1), samples(seed=2) * 50
    whole = fp8q.calib.Histogram().observe(torch.cat([a, b]))
    assert fp8q.calib.Histogram().observe(a).merge(fp8q.calib.Histogram().observe(b)) == whole
    assert fp8q.calib.Histogram().observe(b).merge(fp8q.calib.Histogram().observe(a)) == whole
    assert whole.count == 2 * 20000 - 6  # NaN and the two Infs are counted apart


def test_state_survives_save_and_load_and_any_thread_count():
    x = samples().to(torch.bfloat16)
    h = fp8q.calib.Histogram(bins=512, tail=64).observe(x)
    buf = io.BytesIO()
    torch.save(h.state, buf)
    buf.seek(0)
    back = fp8q.calib.Histogram(state=torch.load(buf))
    assert back == h and back.calibrate("mse", "e4m3fn").item() == h.calibrate("mse", "e4m3fn").item()
    old = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        assert fp8q.calib.Histogram(bins=512, tail=64).observe(torch.cat([x] * 8)) == h.observe(
            torch.cat([x] * 7))
    finally:
        torch.set_num_threads(old)


def test_f16_samples_are_their_exact_values():
    x = samples().to(torch.float16)
    assert fp8q.calib.Histogram().observe(x) == fp8q.calib.Histogram().observe(x.float())


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("fmt", ["e4m3fn", "e5m2", "e4m3"])
def test_calibrators_match_the_tool(tmp_path, cli, method, fmt):
    x = samples()
    src = tmp_path / "acts.safetensors"
    save_file({"x": x, "y": (x * 1e-3).to(torch.bfloat16)}, str(src))
    done = subprocess.run([str(cli), "calibrate", str(src), "--method", method, "--format", fmt, "--percentile",
                           "99.9", "--json"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    for name, t in (("x", x), ("y", (x * 1e-3).to(torch.bfloat16))):
        amax = fp8q.calib.Histogram().observe(t).calibrate(method, fmt, percentile=99.9)
        assert amax.item() == torch.tensor(report[name]["amax"], dtype=torch.float32).item(), name
