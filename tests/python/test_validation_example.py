"""examples/validation/mx_kernel_check.py: allclose passes where the bits differ, fp8q compare and
assert_bitwise_equal report the difference, and a kernel adding in the device's order (or fp8q's
GEMM under the trn3 profile) matches the nc_matmul_mx emulation bit for bit."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import fp8q
import fp8q.testing

ROOT = Path(__file__).resolve().parents[2]

spec = importlib.util.spec_from_file_location("mx_kernel_check", ROOT / "examples/validation/mx_kernel_check.py")
example = importlib.util.module_from_spec(spec)
sys.modules["mx_kernel_check"] = example
spec.loader.exec_module(example)


@pytest.fixture(scope="module")
def results():
    qa, qb = example.operands()
    return qa, qb, example.golden_style_kernel(qa, qb), example.emulated_nc_matmul_mx(qa, qb)


def test_allclose_passes_but_the_bits_differ(results):
    _, _, kernel, device = results
    assert np.allclose(kernel, device, rtol=example.RTOL, atol=example.ATOL)
    c = fp8q.testing.compare(kernel, device)
    assert 0 < c.differ < c.count and c.max_ulps is not None and c.max_ulps >= 1
    with pytest.raises(AssertionError, match=r"of 1536 f32 elements differ, max \d+ ULP"):
        fp8q.testing.assert_bitwise_equal(kernel, device)


def test_adding_in_the_devices_order_gives_the_same_bits(results):
    qa, qb, _, device = results
    fp8q.testing.assert_bitwise_equal(example.device_order_kernel(qa, qb), device)
    gemm = fp8q.linear(qa, qb, profile="trn3", model="trainium3_mx:1x32")
    fp8q.testing.assert_bitwise_equal(gemm, device)


def test_the_script_and_fp8q_compare(cli, tmp_path, results):
    _, _, kernel, device = results
    done = subprocess.run([sys.executable, str(ROOT / "examples/validation/mx_kernel_check.py"), "--out", str(tmp_path),
                           "--fp8q", str(cli)], capture_output=True, text=True)
    assert done.returncode == 1, done.stderr  # fp8q compare's exit code: the files differ
    assert "numpy.allclose(kernel, device, rtol=1e-05, atol=1e-05): True" in done.stdout
    assert "device-order kernel: 0 elements differ" in done.stdout
    c = fp8q.testing.compare(kernel, device)
    assert f"d  F32 [32, 48]: 1536 elements, {c.bit_equal} bit-equal, {c.differ} differ, max {c.max_ulps} ULP" in done.stdout
    report = json.loads(subprocess.run([str(cli), "compare", str(tmp_path / "kernel.safetensors"),
                                        str(tmp_path / "emulated.safetensors"), "--json"],
                                       capture_output=True, text=True).stdout)
    assert report["tensors"][0]["differ"] == c.differ and report["tensors"][0]["max_ulps"] == c.max_ulps
    ok = subprocess.run([str(cli), "compare", str(tmp_path / "kernel.safetensors"), str(tmp_path / "emulated.safetensors"),
                         "--ulps", str(c.max_ulps)], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stdout
