"""The compressed-tensors quantization_config that ``fp8q quantize`` writes (ct-fp8, ct-mxfp8, ct-mxfp4, ct-nvfp4)
loads with compressed-tensors: parsed by the installed release (``QuantizationConfig``), and
every QuantizationArgs key is one that the oldest release reading the format accepts
(QuantizationArgs forbids unknown keys). The key lists are read from the released wheels'
``compressed_tensors/quantization/quant_args.py``; they cannot be installed beside the pinned
release. A model with ``tie_word_embeddings`` (no ``lm_head.weight``) still lists lm_head."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import torch
from compressed_tensors.quantization import QuantizationConfig
from safetensors.torch import save_file

# compressed-tensors 0.12.2, QuantizationArgs: the last release before scale_dtype / zp_dtype.
ARGS_0_12_2 = {"num_bits", "type", "symmetric", "group_size", "strategy", "block_structure", "dynamic",
               "actorder", "observer", "observer_kwargs"}
# compressed-tensors 0.15.0, QuantizationArgs: the first release with the mxfp8-quantized format
# (config/base.py CompressionFormat.mxfp8_quantized; 0.14.0.1 has none).
ARGS_0_15_0 = ARGS_0_12_2 | {"scale_dtype", "zp_dtype"}

LAYOUTS = [("ct-fp8", "channel", ARGS_0_12_2, "0.13.0"), ("ct-fp8", "tensor", ARGS_0_12_2, "0.13.0"),
           ("ct-fp8", "block", ARGS_0_12_2, "0.13.0"), ("ct-mxfp8", None, ARGS_0_15_0, "0.15.0"),
           ("ct-mxfp4", None, ARGS_0_15_0, "0.15.0"), ("ct-nvfp4", None, ARGS_0_12_2, "0.10.0")]


def tied_model(path: Path) -> None:
    """A Llama-like model whose lm_head is tied to the embedding (no lm_head.weight)."""
    path.mkdir()
    g = torch.Generator().manual_seed(5)
    tensors = {
        "model.embed_tokens.weight": torch.randn(64, 128, generator=g).to(torch.bfloat16),
        "model.layers.0.self_attn.q_proj.weight": torch.randn(128, 128, generator=g).to(torch.bfloat16),
        "model.layers.0.mlp.down_proj.weight": torch.randn(128, 256, generator=g).to(torch.bfloat16),
        "model.norm.weight": torch.ones(128, dtype=torch.bfloat16),
    }
    save_file(tensors, str(path / "model.safetensors"))
    (path / "config.json").write_text(json.dumps(
        {"architectures": ["LlamaForCausalLM"], "hidden_size": 128, "tie_word_embeddings": True}))


@pytest.mark.parametrize("layout, strategy, accepted, version", LAYOUTS, ids=lambda v: str(v))
def test_config_loads_with_compressed_tensors(tmp_path, cli, layout, strategy, accepted, version):
    tied_model(tmp_path / "in")
    args = [str(cli), "quantize", str(tmp_path / "in"), str(tmp_path / "out"), "--layout", layout]
    if strategy:
        args += ["--strategy", strategy]
    done = subprocess.run(args, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    qc = json.loads((tmp_path / "out" / "config.json").read_text())["quantization_config"]
    parsed = QuantizationConfig.model_validate(qc)
    assert parsed.format == qc["format"]
    assert qc["version"] == version
    for name, group in qc["config_groups"].items():
        for role in ("weights", "input_activations"):
            if group[role] is None:  # NVFP4A16: weights only
                continue
            extra = set(group[role]) - accepted
            assert not extra, f"{name}.{role}: keys {sorted(extra)} that QuantizationArgs of the oldest reader forbids"
    assert "lm_head" in qc["ignore"], qc["ignore"]
    assert "lm_head" in parsed.ignore
