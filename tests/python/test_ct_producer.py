"""fp8q's MX layouts against compressed-tensors' own producer code (the installed release): the
E8M0 scales its observer path computes (``generate_mx_scales`` on each group's amax) and the
codes its compressors write from them (``quantize_and_pack_fp4`` for MXFP4, ``quantize`` with the
preset's arguments for MXFP8), byte for byte, on the loader suite's models. This is what
llm-compressor writes for the same weights with these presets (its observers give the group
amax; the rest is this code)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import torch
from checkpoints import tensors

ct = pytest.importorskip("compressed_tensors")
from compressed_tensors.compressors.mx_utils import decompress_mx_scale  # noqa: E402
from compressed_tensors.compressors.nvfp4.helpers import quantize_and_pack_fp4  # noqa: E402
from compressed_tensors.quantization import preset_name_to_scheme  # noqa: E402
from compressed_tensors.quantization.lifecycle.forward import quantize  # noqa: E402
from compressed_tensors.quantization.utils.mxfp_utils import generate_mx_scales  # noqa: E402


@pytest.mark.parametrize("layout", ["ct-mxfp4", "ct-mxfp8"])
@pytest.mark.parametrize("model", ["llama", "qwen2-odd-dims"])
def test_mx_layouts_equal_compressed_tensors_producer(tmp_path, cli, loader_models, model, layout):
    src, out = loader_models[model], tmp_path / "q"
    done = subprocess.run([str(cli), "quantize", str(src), str(out), "--layout", layout], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    q, original = tensors(out), tensors(src)
    fp4 = layout == "ct-mxfp4"
    args = preset_name_to_scheme("MXFP4A16" if fp4 else "MXFP8", ["Linear"]).weights
    checked = 0
    for name, w in original.items():
        module = name[: -len(".weight")]
        if module + ".weight_scale" not in q:
            continue
        amax = w.reshape(w.shape[0], -1, 32).abs().amax(-1)
        codes = generate_mx_scales(amax, 4 if fp4 else 8).clamp(0, 254).to(torch.uint8)
        assert torch.equal(codes, q[module + ".weight_scale"]), name
        scale = decompress_mx_scale(codes).to(w.dtype)
        if fp4:
            theirs = quantize_and_pack_fp4(w, scale, global_scale=None, zero_point=None, group_size=32)
            ours = q[module + ".weight_packed"]
        else:
            theirs = quantize(w, scale, None, args, dtype=torch.float8_e4m3fn).view(torch.uint8)
            ours = q[name].view(torch.uint8)
        assert torch.equal(theirs, ours), name
        checked += 1
    assert checked >= 12
