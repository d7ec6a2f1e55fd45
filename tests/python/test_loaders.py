"""fp8q quantize's checkpoints opened by the code they are written for.

Small Llama- and Qwen2-architecture models that transformers builds from a config with seeded
random weights and writes with save_pretrained (tied and untied embeddings, sharded, and one
whose dimensions are not multiples of 128) are quantized by the fp8q tool into each layout.
hf-fp8 and compressed-tensors outputs are loaded with transformers' from_pretrained on the CPU
(which dequantizes: compressed-tensors decompresses its formats, FineGrainedFP8 falls back to
bf16 without a GPU); trn2 and trn3-mx, whose loaders cannot be installed here, by the reference
readers of readers.py. For each model and layout: the logits against the original's (relative
error, top-1 agreement), 16 greedy tokens of generate(), every dequantized weight against fp8q's
own dequantization bit for bit, and every weight fp8q kept loaded unchanged. The table is
printed (pytest -s shows it).
"""

from __future__ import annotations

import copy
import subprocess
from pathlib import Path

import pytest
import torch
from checkpoints import DTYPE, MODELS, VOCAB, check_weights, fp8q_dequantized, is_quantized, tensors
from readers import nxd_trn2, quantization_config, trn3_mx_weights

transformers = pytest.importorskip("transformers")

TRANSFORMERS_LAYOUTS = {
    "hf-fp8": ["--layout", "hf-fp8"],
    "ct-fp8 tensor": ["--layout", "ct-fp8", "--granularity", "tensor"],
    "ct-fp8 channel": ["--layout", "ct-fp8", "--granularity", "row"],
    "ct-fp8 block": ["--layout", "ct-fp8", "--granularity", "block128x128"],
    "ct-mxfp8": ["--layout", "ct-mxfp8"],
    "ct-mxfp4": ["--layout", "ct-mxfp4"],
    "ct-nvfp4": ["--layout", "ct-nvfp4"],
}
READER_LAYOUTS = {
    "trn2 tensor": ["--layout", "trn2", "--granularity", "tensor"],
    "trn2 channel": ["--layout", "trn2", "--granularity", "row"],
    "trn2 block": ["--layout", "trn2", "--granularity", "block128x128"],
    "trn3-mx": ["--layout", "trn3-mx"],
    "trn3-mx 1x32": ["--layout", "trn3-mx", "--pack", "1x32"],
    "trn3-mx wrapX": ["--layout", "trn3-mx", "--pack", "wrapX"],
    "trn3-mxfp4": ["--layout", "trn3-mx", "--elem", "e2m1"],
    "trn3-mxfp4 1x32": ["--layout", "trn3-mx", "--elem", "e2m1", "--pack", "1x32"],
    "trn3-mxfp4 wrapX": ["--layout", "trn3-mx", "--elem", "e2m1", "--pack", "wrapX"],
}
LAYOUTS = {**TRANSFORMERS_LAYOUTS, **READER_LAYOUTS}


def expected_quantized(name: str, shape: torch.Size, layout: str) -> bool:
    """The layout's rule: projections only; whole 128 x 128 blocks for the block layouts, whole
    groups of 32 along the input for ct-mxfp8 (trn3-mx takes a partial last group)."""
    if "embed" in name or "lm_head" in name or len(shape) != 2:
        return False
    if layout in ("hf-fp8", "ct-fp8 block", "trn2 block"):
        return shape[0] % 128 == 0 and shape[1] % 128 == 0
    if layout in ("ct-mxfp8", "ct-mxfp4"):
        return shape[1] % 32 == 0
    if layout == "ct-nvfp4":
        return shape[1] % 16 == 0
    return True


def quantize(cli: Path, src: Path, out: Path, layout: str) -> dict[str, torch.Tensor]:
    done = subprocess.run([str(cli), "quantize", str(src), str(out), *LAYOUTS[layout]], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    verified = subprocess.run([str(cli), "verify", str(out), "--against", str(src)], capture_output=True, text=True)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    q = tensors(out)
    original = tensors(src)
    for name, t in original.items():
        quantized = expected_quantized(name, t.shape, layout) and name.endswith(".weight")
        assert (name + "_scale" in q or name + "_scale_inv" in q) == quantized, name
        if not quantized:  # kept: stored unchanged, and (for a 2-D weight) listed as not converted
            assert torch.equal(q[name].view(torch.uint8), t.view(torch.uint8)), name
            if t.dim() == 2 and name.endswith(".weight"):
                qc = quantization_config(out)
                assert name[:-7] in qc.get("ignore", qc.get("modules_to_not_convert")), name
    return q


def agreement(original, candidate, ids) -> tuple[float, float, float]:
    with torch.no_grad():
        a, b = original(ids).logits.float(), candidate(ids).logits.float()
        ga = original.generate(ids[:1, :8], max_new_tokens=16, do_sample=False)
        gb = candidate.generate(ids[:1, :8], max_new_tokens=16, do_sample=False)
    rel = ((a - b).norm() / a.norm()).item()
    top1 = (a.argmax(-1) == b.argmax(-1)).float().mean().item()
    return rel, top1, (ga[0, 8:] == gb[0, 8:]).float().mean().item()


def report(model: str, layout: str, n: int, rel: float, top1: float, same: float) -> None:
    print(f"\n{model:20} {layout:15} {n:2} quantized  logits rel. error {rel:.4f}  top-1 agree {top1:.3f}  "
          f"generate agree {same:.3f}")
    # FP8 weights (and, for compressed-tensors, activations) of a random 2-layer model; FP4
    # weights (SQNR about 19-20 dB) move the logits more
    assert (rel < 0.2 and top1 > 0.6) if "fp4" not in layout else (rel < 0.5 and top1 > 0.3)


IDS = torch.randint(0, VOCAB, (2, 24), generator=torch.Generator().manual_seed(1))


@pytest.mark.parametrize("layout", TRANSFORMERS_LAYOUTS)
@pytest.mark.parametrize("model", MODELS)
def test_transformers_loads_what_fp8q_wrote(tmp_path, cli, loader_models, model, layout):
    src, out = loader_models[model], tmp_path / "q"
    q = quantize(cli, src, out, layout)
    original = transformers.AutoModelForCausalLM.from_pretrained(src, dtype=DTYPE).eval()
    loaded = transformers.AutoModelForCausalLM.from_pretrained(out, dtype=DTYPE).eval()
    # every quantized weight, as the loader dequantized it, against fp8q's dequantization
    n = check_weights(loaded, q, layout, DTYPE)
    assert n == sum(is_quantized(t, name) for name, t in q.items()) and n > 0
    for name, p in original.named_parameters():  # every kept weight loads unchanged
        if name in q and not is_quantized(q[name], name):
            assert torch.equal(loaded.get_parameter(name), p), name
    rel, top1, same = agreement(original, loaded, IDS)
    # FineGrainedFP8 on a CPU dequantizes to bf16 and runs plain Linear layers: its forward pass
    # is the original architecture on fp8q's dequantized weights, bit for bit. compressed-tensors
    # also quantizes the activations dynamically (the scheme fp8q's config declares).
    if layout == "hf-fp8":
        reference = copy.deepcopy(original)
        with torch.no_grad():
            for name, t in q.items():
                if is_quantized(t, name):
                    reference.get_parameter(name).copy_(fp8q_dequantized(q, name, layout, DTYPE))
            assert torch.equal(loaded(IDS).logits, reference(IDS).logits)
    report(model, layout, n, rel, top1, same)


def _set(model: torch.nn.Module, module: str, layer: torch.nn.Module) -> None:
    parent, _, leaf = module.rpartition(".")
    setattr(model.get_submodule(parent), leaf, layer)


@pytest.mark.parametrize("layout", READER_LAYOUTS)
@pytest.mark.parametrize("model", MODELS)
def test_reference_readers_load_what_fp8q_wrote(tmp_path, cli, loader_models, model, layout):
    src, out = loader_models[model], tmp_path / "q"
    q = quantize(cli, src, out, layout)
    config = quantization_config(out)
    original = transformers.AutoModelForCausalLM.from_pretrained(src, dtype=DTYPE).eval()
    loaded = copy.deepcopy(original)
    if layout.startswith("trn2"):
        layers = nxd_trn2(q, config)
        for module, layer in layers.items():
            # NxD's fp32 weight (blockwise), or codes x per-row scale, is fp8q's dequantization
            ours = fp8q_dequantized(q, module + ".weight", layout, torch.float32)
            assert torch.equal(layer.dequantized().view(torch.int32), ours.view(torch.int32)), module
            _set(loaded, module, layer)
    else:
        weights = trn3_mx_weights(q, config)
        unpacked = tensors(out) if config["packing"] == "none" else None
        plain = "trn3-mxfp4" if layout.startswith("trn3-mxfp4") else "trn3-mx"
        if config["packing"] == "1x32":  # the same MX groups as the unpacked layout: the same bits
            quantize(cli, src, tmp_path / "plain", plain)
            unpacked = tensors(tmp_path / "plain")
        with torch.no_grad():
            for module, w in weights.items():
                if unpacked is not None:
                    ours = fp8q_dequantized(unpacked, module + ".weight", plain, torch.float32)
                    assert torch.equal(w.view(torch.int32), ours.view(torch.int32)), module
                loaded.get_parameter(module + ".weight").copy_(w.to(DTYPE))
        layers = weights
    rel, top1, same = agreement(original, loaded, IDS)
    report(model, layout, len(layers), rel, top1, same)
