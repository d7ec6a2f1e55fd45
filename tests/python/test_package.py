"""The package itself: importing needs no GPU and no network, an old torch is refused with a
clear message, and the format table agrees with the C++ descriptors (the fp8q tool's)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
import torch

import fp8q
from fp8q import _library


def test_import_needs_no_gpu_and_no_network():
    if shutil.which("unshare") is None or subprocess.run(["unshare", "-n", "true"]).returncode != 0:
        pytest.skip("cannot make a network namespace here (unshare -n)")
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", HF_HUB_OFFLINE="1")
    code = "import torch, fp8q; print(fp8q.convert(torch.tensor([465.0]), torch.float8_e4m3fn).float().item())"
    done = subprocess.run(["unshare", "-n", sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "448.0"


def test_an_old_torch_is_refused_by_name(monkeypatch):
    monkeypatch.setattr(torch, "__version__", "2.7.1+cpu")
    with pytest.raises(ImportError, match=r"fp8q needs torch >= 2\.8 .* this is torch 2\.7\.1"):
        _library.load()


def test_the_format_table_is_the_libraries(cli):
    table = json.loads(subprocess.run([str(cli), "formats", "--json"], check=True, capture_output=True,
                                      text=True).stdout)
    assert {row["name"] for row in table} == set(fp8q.formats.FORMATS)
    for row in table:
        f = fp8q.formats.FORMATS[row["name"]]
        assert (f.exponent_bits, f.mantissa_bits, f.bias, f.bits) == (
            row["exponent_bits"], row["mantissa_bits"], row["bias"], row["bits"]), f.name
        assert (f.max_finite, f.min_normal, f.denorm_min) == (
            row["max_finite"], row["min_normal"], row["denorm_min"]), f.name
