"""The ct-fp8 and ct-nvfp4 layouts read by the oldest compressed-tensors they are tested with, 0.12.2 (installed beside
the environment by scripts/setup.sh, python/requirements-oldest.txt; the environment's own
release is the newest): its QuantizationConfig accepts the config fp8q writes (its
QuantizationArgs forbids unknown keys) and its dequantize(), given the arguments that config
declares, computes every stored weight as fp8q's dequantization does, bit for bit. It runs in a
subprocess, where 0.12.2 shadows the environment's release."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from checkpoints import fp8q_dequantized, is_quantized, tensors
from safetensors.torch import load_file

OLDEST = "0.12.2"
READER = r"""
import json, sys
import compressed_tensors, torch
from compressed_tensors.quantization import QuantizationConfig
from compressed_tensors.quantization.lifecycle.forward import dequantize
from safetensors.torch import load_file, save_file

assert compressed_tensors.__version__ == sys.argv[3], compressed_tensors.__version__
directory, out = sys.argv[1], sys.argv[2]
config = QuantizationConfig.model_validate(json.load(open(directory + "/config.json"))["quantization_config"])
args = config.config_groups["group_0"].weights
state = {}
import glob
for f in sorted(glob.glob(directory + "/*.safetensors")):
    state.update(load_file(f))
result = {}
for name, t in state.items():
    if t.dtype == torch.float8_e4m3fn:
        result[name] = dequantize(t, state[name + "_scale"], None, args)
save_file(result, out)
"""


def read_with_oldest(cli, src: Path, tmp_path: Path, options: list[str], reader: str):
    """fp8q quantize src with `options`, then `reader` under compressed-tensors OLDEST: (fp8q's
    tensors, the reader's dequantized weights, the names of the quantized weights)."""
    site = Path(os.environ.get("FP8Q_CT_OLDEST", ""))
    if not (site / "compressed_tensors").is_dir():
        pytest.fail(f"compressed-tensors {OLDEST} is not installed at {site!s}: run scripts/setup.sh")
    out = tmp_path / "q"
    done = subprocess.run([str(cli), "quantize", str(src), str(out), *options], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    env = dict(os.environ, PYTHONPATH=str(site))
    read = subprocess.run([sys.executable, "-c", reader, str(out), str(tmp_path / "read.safetensors"), OLDEST],
                          capture_output=True, text=True, env=env)
    assert read.returncode == 0, read.stderr[-3000:]
    theirs = load_file(str(tmp_path / "read.safetensors"))
    q = tensors(out)
    quantized = [name for name, t in q.items() if is_quantized(t, name)]
    assert sorted(theirs) == sorted(quantized) and quantized
    return q, theirs, quantized


@pytest.mark.parametrize("strategy", ["tensor", "channel", "block"])
@pytest.mark.parametrize("model", ["llama", "qwen2-odd-dims"])
def test_oldest_compressed_tensors_reads_ct_fp8(tmp_path, cli, loader_models, model, strategy):
    q, theirs, quantized = read_with_oldest(cli, loader_models[model], tmp_path,
                                            ["--layout", "ct-fp8", "--strategy", strategy], READER)
    for name in quantized:
        # 0.12.2 dequantizes in the scale's dtype (the weight's, bf16): fp8q's result rounded to it
        dtype = theirs[name].dtype
        ours = fp8q_dequantized(q, name, f"ct-fp8 {strategy}", dtype)
        assert torch.equal(theirs[name].view(torch.int16), ours.view(torch.int16)), name
    print(f"\ncompressed-tensors {OLDEST} {model:15} ct-fp8 {strategy:8} {len(quantized)} weights bit for bit")


NVFP4_READER = r"""
import json, sys, glob
import compressed_tensors, torch
from compressed_tensors.compressors.quantized_compressors.nvfp4_quantized import NVFP4PackedCompressor
from compressed_tensors.quantization import QuantizationConfig
from safetensors.torch import load_file, save_file

assert compressed_tensors.__version__ == sys.argv[3], compressed_tensors.__version__
directory, out = sys.argv[1], sys.argv[2]
config = QuantizationConfig.model_validate(json.load(open(directory + "/config.json"))["quantization_config"])
assert config.format == "nvfp4-pack-quantized", config.format
args = config.config_groups["group_0"].weights
state = {}
for f in sorted(glob.glob(directory + "/*.safetensors")):
    state.update(load_file(f))
result = {}
for name in state:
    if name.endswith(".weight_packed"):
        m = name[: -len("weight_packed")]
        data = {k: state[m + k] for k in ("weight_packed", "weight_scale", "weight_global_scale")}
        result[name] = NVFP4PackedCompressor().decompress_weight(data, args)
save_file(result, out)
"""


@pytest.mark.parametrize("model", ["llama", "qwen2-odd-dims"])
def test_oldest_compressed_tensors_reads_ct_nvfp4(tmp_path, cli, loader_models, model):
    q, theirs, quantized = read_with_oldest(cli, loader_models[model], tmp_path, ["--layout", "ct-nvfp4"],
                                            NVFP4_READER)
    for name in quantized:
        ours = fp8q_dequantized(q, name, "ct-nvfp4", theirs[name].dtype)
        assert torch.equal(theirs[name].view(torch.int16), ours.view(torch.int16)), name
    print(f"\ncompressed-tensors {OLDEST} {model:15} ct-nvfp4 {len(quantized)} weights bit for bit")


def test_oldest_compressed_tensors_rejected_the_old_config_keys():
    """Why fp8q writes no scale_dtype / zp_dtype for ct-fp8: 0.12.2's QuantizationArgs refuses them."""
    site = Path(os.environ.get("FP8Q_CT_OLDEST", ""))
    code = ("from compressed_tensors.quantization import QuantizationArgs\n"
            "QuantizationArgs.model_validate({'num_bits': 8, 'type': 'float', 'scale_dtype': None})\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(site)))
    assert r.returncode != 0 and "scale_dtype" in r.stderr and "xtra" in r.stderr, r.stderr[-2000:]
