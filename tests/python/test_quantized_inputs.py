"""fp8q quantize on checkpoints that are quantized already (docs/checkpoints.md, "Quantized
inputs").

The loader suite's models are quantized by fp8q into an input layout, then converted into
another. Every converted weight is compared with the input's values, decoded here independently
of fp8q: the codes as torch's float8_e4m3fn (or ml_dtypes' float4_e2m1fn) in float64 times the
scales in float64, which is exact. The report's changed count and largest change must be those
of that comparison, and 0 where the pair is exact. Converted compressed-tensors outputs are then
loaded by transformers + compressed-tensors. Where the conversion kept every value, each weight
as the loader dequantizes it equals the input checkpoint's, as the loader dequantizes that one.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch
from checkpoints import DTYPE, loaders_weight, modelopt_export, tensors

transformers = pytest.importorskip("transformers")
pytest.importorskip("compressed_tensors")

LAYOUT_ARGS = {
    "hf-fp8": ["--layout", "hf-fp8"],
    "ct-fp8 channel": ["--layout", "ct-fp8", "--granularity", "row"],
    "ct-fp8 block": ["--layout", "ct-fp8", "--granularity", "block128x128"],
    "ct-mxfp8": ["--layout", "ct-mxfp8"],
    "ct-mxfp4": ["--layout", "ct-mxfp4"],
    "ct-nvfp4": ["--layout", "ct-nvfp4"],
    "trn2": ["--layout", "trn2"],
    "trn3-mx": ["--layout", "trn3-mx"],
}
# (input, output, every value kept)
PAIRS = [
    ("ct-mxfp8", "trn3-mx", True),
    ("ct-mxfp4", "ct-mxfp8", True),
    ("trn3-mx", "ct-mxfp8", True),
    ("hf-fp8", "ct-fp8 block", False),  # fp32 scale_inv into the model's bf16 scales (below)
    ("ct-fp8 channel", "ct-fp8 channel", True),
    ("hf-fp8", "trn2", False),  # odd subnormals of e4m3fn have no e4m3 code at twice the scale
    ("ct-fp8 channel", "trn3-mx", False),  # fp32 scales into power-of-two scales
    ("ct-nvfp4", "trn3-mx", False),  # e2m1 x fp32(s / S) into MXFP8
    ("hf-fp8", "ct-nvfp4", False),  # 128 x 128 fp32 scales into NVFP4 (fused layers: one global scale)
]


def run(cli: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(cli), *args], capture_output=True, text=True)


def exact_weights(q: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Every quantized weight of a checkpoint as float64 [out, in]: code x scale, exactly."""
    import ml_dtypes

    out = {}
    for name, t in q.items():
        if name.endswith(".weight_packed"):  # e2m1 two a byte, element 2i in the low nibble
            module = name[: -len(".weight_packed")]
            b = t.view(torch.uint8)
            nib = torch.stack((b & 0xF, b >> 4), dim=-1).reshape(b.shape[0], -1).numpy().astype(np.uint8)
            codes = torch.from_numpy(nib.view(ml_dtypes.float4_e2m1fn).astype(np.float64))
        elif name.endswith(".weight") and t.dtype == torch.float8_e4m3fn:
            module = name[: -len(".weight")]
            codes = t.to(torch.float64)  # trn2's e4m3 values (<= 240) have e4m3fn's bit patterns
        else:
            continue
        rows, cols = codes.shape
        if module + ".weight_global_scale" in q:  # NVFP4: compressed-tensors' fp32(s / S) per 1 x 16
            s = q[module + ".weight_scale"].to(torch.float32) / q[module + ".weight_global_scale"].to(torch.float32)
            out[module] = codes * s.to(torch.float64).repeat_interleave(16, dim=1)
            continue
        if module + ".weight_scale_inv" in q:
            scale = q[module + ".weight_scale_inv"].to(torch.float64)
        else:
            scale = q[module + ".weight_scale"]
            scale = torch.exp2(scale.to(torch.float64) - 127) if scale.dtype == torch.uint8 else scale.to(torch.float64)
        if scale.dim() == 1 and scale.numel() == rows > 1:  # ModelOpt per channel: [out]
            scale = scale.reshape(rows, 1)
        elif scale.dim() == 4:  # ModelOpt fp8_pb_wo: [out / 128, 1, in / 128, 1]
            scale = scale.reshape(scale.shape[0], scale.shape[2])
        if scale.numel() == 1:
            full = scale.reshape(1, 1).expand(rows, cols)
        elif scale.shape == (rows, 1):
            full = scale.expand(rows, cols)
        elif scale.dtype == torch.float64 and scale.shape[1] == (cols + 31) // 32 and q[module + ".weight_scale"].dtype == torch.uint8:
            full = scale.repeat_interleave(32, dim=1)[:, :cols]
        else:  # 128 x 128 blocks
            full = scale.repeat_interleave(128, dim=0)[:rows].repeat_interleave(128, dim=1)[:, :cols]
        out[module] = codes * full
    return out


def check_report(stdout: str, before_dir: Path, after_dir: Path, source: str) -> int:
    """The --json report of a conversion against the two checkpoints decoded here: per weight the
    input layout, the count of changed values, the largest change and the exact flag. Returns
    the total count."""
    report = {t["name"].rsplit(".", 1)[0]: t["conversion"] for t in json.loads(stdout)["tensors"] if "conversion" in t}
    before, after = exact_weights(tensors(before_dir)), exact_weights(tensors(after_dir))
    assert set(report) == set(before) == set(after) and len(before) >= 12
    for module, x in before.items():
        y = after[module]
        changed = (x != y) & ~(x.isnan() & y.isnan())
        assert report[module]["from"] == source, module
        assert report[module]["changed"] == int(changed.sum()), module
        largest = float((x - y).abs()[changed].max()) if changed.any() else 0.0
        assert report[module]["max_change"] == largest, module
        assert report[module]["exact"] == (not changed.any())
    return sum(r["changed"] for r in report.values())


@pytest.mark.parametrize("source,target,kept", PAIRS, ids=[f"{a}->{b}" for a, b, _ in PAIRS])
def test_conversion_keeps_or_counts_every_value(tmp_path, cli, loader_models, source, target, kept):
    src = loader_models["llama"]
    done = run(cli, "quantize", str(src), str(tmp_path / "in"), *LAYOUT_ARGS[source])
    assert done.returncode == 0, done.stderr
    done = run(cli, "quantize", str(tmp_path / "in"), str(tmp_path / "out"), *LAYOUT_ARGS[target], "--json")
    assert done.returncode == 0, done.stderr
    total = check_report(done.stdout, tmp_path / "in", tmp_path / "out", LAYOUT_ARGS[source][1])
    assert (total == 0) == kept, total
    # --require-exact agrees: it passes exactly where nothing changed, and writes nothing where it fails
    done = run(cli, "quantize", str(tmp_path / "in"), str(tmp_path / "strict"), *LAYOUT_ARGS[target], "--require-exact")
    assert done.returncode == (0 if kept else 2), done.stderr
    assert (tmp_path / "strict").exists() == kept


def test_conversion_into_ct_nvfp4_gives_fused_layers_one_global_scale(tmp_path, cli, loader_models):
    """A quantized input converted into ct-nvfp4: q/k/v and gate/up share the smallest of their
    global scales (vLLM loads one per fused layer), the one fp8q's NVFP4 gives the group's largest
    exact value (rounded to fp32 by round-to-odd, as the conversion quantizes); o_proj and down_proj
    keep their own."""
    import fp8q

    src = loader_models["llama"]
    assert run(cli, "quantize", str(src), str(tmp_path / "in"), *LAYOUT_ARGS["hf-fp8"]).returncode == 0
    done = run(cli, "quantize", str(tmp_path / "in"), str(tmp_path / "out"), *LAYOUT_ARGS["ct-nvfp4"])
    assert done.returncode == 0, done.stderr
    exact, q = exact_weights(tensors(tmp_path / "in")), tensors(tmp_path / "out")
    groups = 0
    for module in exact:
        parent, leaf = module.rsplit(".", 1)
        group = {"q_proj": ["q_proj", "k_proj", "v_proj"], "gate_proj": ["gate_proj", "up_proj"],
                 "o_proj": ["o_proj"], "down_proj": ["down_proj"]}.get(leaf)
        if group is None:
            continue
        members = [f"{parent}.{m}" for m in group]
        amax = float(torch.cat([exact[m] for m in members]).abs().max())
        # the conversion quantizes the exact values rounded to fp32 by round-to-odd; the group's amax so
        f = np.float32(amax)
        if float(f) != amax:
            if float(f) > amax:
                f = np.nextafter(f, np.float32(0))
            f = np.array(f).view(np.uint32) | np.uint32(1)
            f = f.view(np.float32)
        block = torch.full((1, 16), float(f), dtype=torch.float32)
        want = fp8q.quantize(block, "e2m1", granularity="nvfp4").global_scale.reshape([1])
        for m in members:
            assert torch.equal(q[m + ".weight_global_scale"], want), m
        groups += 1
    assert groups >= 4


LOADED = [(a, b) for a, b, _ in PAIRS if b.startswith("ct-")]


@pytest.mark.parametrize("source,target", LOADED, ids=[f"{a}->{b}" for a, b in LOADED])
def test_loader_reads_the_converted_values(tmp_path, cli, loader_models, source, target):
    """transformers + compressed-tensors dequantize every converted weight to its exact value
    rounded once to bf16. compressed-tensors casts weight_scale to the model's dtype on loading,
    so a converted ct-fp8 weight stores its scales in that dtype: fp32 scales would be rounded
    to bf16 by the loader, silently."""
    src = loader_models["llama"]
    assert run(cli, "quantize", str(src), str(tmp_path / "in"), *LAYOUT_ARGS[source]).returncode == 0
    assert run(cli, "quantize", str(tmp_path / "in"), str(tmp_path / "out"), *LAYOUT_ARGS[target]).returncode == 0
    loaded = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "out", dtype=DTYPE).eval()
    q = tensors(tmp_path / "out")
    exact = exact_weights(q)
    for module, x in exact.items():
        name = module + ".weight_packed" if module + ".weight_packed" in q else module + ".weight"
        assert torch.equal(loaders_weight(loaded, name, DTYPE), x.to(DTYPE)), module
    assert len(exact) >= 12


def write_modelopt_nvfp4(directory: Path) -> dict[str, torch.Tensor]:
    """A ModelOpt NVFP4 export written from its documented layout (vLLM's modelopt loader, ModelOpt's
    NVFP4QTensor packing): U8 weight (element 2i in the low nibble), F8_E4M3 weight_scale per 16,
    F32 weight_scale_2 and input_scale, hf_quant_config.json. Returns each module's exact values."""
    import ml_dtypes
    from safetensors.torch import save_file

    g = torch.Generator().manual_seed(5)
    state, exact = {}, {}
    for i, (rows, cols) in enumerate([(64, 128), (96, 64)]):
        module = f"model.layers.{i}.mlp.up_proj"
        codes = torch.randint(0, 16, (rows, cols), generator=g, dtype=torch.uint8)
        scales = (torch.rand(rows, cols // 16, generator=g) * 400 + 0.01).to(torch.float8_e4m3fn)
        s2 = torch.tensor(0.37 / (6 * 448) * (i + 1), dtype=torch.float32)
        state[module + ".weight"] = codes[:, 1::2] << 4 | codes[:, 0::2]
        state[module + ".weight_scale"] = scales
        state[module + ".weight_scale_2"] = s2
        state[module + ".input_scale"] = torch.tensor(0.02, dtype=torch.float32)
        values = torch.from_numpy(codes.numpy().view(ml_dtypes.float4_e2m1fn).astype(np.float64))
        exact[module] = values * scales.to(torch.float64).repeat_interleave(16, dim=1) * s2.to(torch.float64)
    state["model.norm.weight"] = torch.ones(64, dtype=torch.bfloat16)
    directory.mkdir()
    save_file(state, str(directory / "model.safetensors"))
    (directory / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"], "torch_dtype": "bfloat16"}))
    (directory / "hf_quant_config.json").write_text(json.dumps(
        {"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "NVFP4", "group_size": 16, "exclude_modules": ["lm_head"]}}))
    return exact


@pytest.mark.parametrize("target", ["trn3-mx --elem e2m1", "ct-nvfp4", "ct-mxfp8"])
def test_modelopt_nvfp4_input(tmp_path, cli, target):
    exact = write_modelopt_nvfp4(tmp_path / "in")
    done = run(cli, "inspect", str(tmp_path / "in"))
    assert 'read as: layout modelopt-nvfp4 (hf_quant_config.json quant_algo "NVFP4" (ModelOpt))' in done.stdout, done.stdout
    done = run(cli, "quantize", str(tmp_path / "in"), str(tmp_path / "out"), "--layout", *target.split(), "--json")
    assert done.returncode == 0, done.stderr
    report = {t["name"].rsplit(".", 1)[0]: t["conversion"] for t in json.loads(done.stdout)["tensors"] if "conversion" in t}
    q = tensors(tmp_path / "out")
    if target.startswith("trn3-mx"):  # e2m1 two a byte under the same name as ct-mxfp4's codes
        q = {k.replace(".weight", ".weight_packed") if k.endswith(".weight") and v.dtype == torch.uint8 else k: v
             for k, v in q.items()}
    after = exact_weights(q)
    assert set(report) == set(exact) == set(after)
    # the input's hf_quant_config.json describes its own quantization: a loader would read it first
    assert not (tmp_path / "out" / "hf_quant_config.json").exists()
    for module, x in exact.items():
        changed = x != after[module]
        assert report[module]["from"] == "modelopt-nvfp4"
        assert report[module]["changed"] == int(changed.sum()), module
        assert report[module]["max_change"] == (float((x - after[module]).abs().max()) if changed.any() else 0.0)


def test_modelopt_other_algorithms_are_refused(tmp_path, cli):
    write_modelopt_nvfp4(tmp_path / "in")
    (tmp_path / "in" / "hf_quant_config.json").write_text(json.dumps({"quantization": {"quant_algo": "W4A8_AWQ"}}))
    done = run(cli, "quantize", str(tmp_path / "in"), str(tmp_path / "out"), "--layout", "trn2")
    assert done.returncode == 2 and 'hf_quant_config.json: quant_algo is "W4A8_AWQ"' in done.stderr, done.stderr
    assert not (tmp_path / "out").exists()


def write_fbgemm_fp8(src: Path, cli: Path, directory: Path) -> None:
    """An FBGEMM FP8 checkpoint (Llama 3.1 405B's FP8 release format) written from its documented
    layout (Transformers' FbgemmFp8Linear: float8_e4m3fn weight, float32 weight_scale [out, 1]):
    fp8q's per-channel ct-fp8 codes with their scales in float32, each times 1 + 2^-17 so that
    bf16 cannot hold it, config quant_method "fbgemm_fp8"."""
    from safetensors.torch import save_file

    assert run(cli, "quantize", str(src), str(directory), *LAYOUT_ARGS["ct-fp8 channel"]).returncode == 0
    q = tensors(directory)
    q = {k: v.to(torch.float32) * (1 + 2**-17) if k.endswith(".weight_scale") else v for k, v in q.items()}
    for f in directory.glob("*.safetensors"):
        f.unlink()
    save_file(q, str(directory / "model.safetensors"), metadata={"format": "pt"})
    (directory / "model.safetensors.index.json").unlink(missing_ok=True)
    config = json.loads((directory / "config.json").read_text())
    config["quantization_config"] = {"quant_method": "fbgemm_fp8", "activation_scale_ub": 1200.0,
                                     "modules_to_not_convert": ["lm_head"]}
    (directory / "config.json").write_text(json.dumps(config))


@pytest.mark.parametrize("target,kept", [("trn2", False), ("ct-mxfp8", False), ("ct-fp8 channel", False)])
def test_fbgemm_fp8_input(tmp_path, cli, loader_models, target, kept):
    write_fbgemm_fp8(loader_models["llama"], cli, tmp_path / "in")
    done = run(cli, "inspect", str(tmp_path / "in"))
    assert 'read as: layout fbgemm-fp8 (config.json quant_method "fbgemm_fp8")' in done.stdout, done.stdout
    done = run(cli, "quantize", str(tmp_path / "in"), str(tmp_path / "out"), *LAYOUT_ARGS[target], "--json")
    assert done.returncode == 0, done.stderr
    assert (check_report(done.stdout, tmp_path / "in", tmp_path / "out", "fbgemm-fp8") == 0) == kept


@pytest.mark.parametrize("algorithm", ["FP8_PER_CHANNEL_PER_TOKEN", "fp8_pb_wo"])
def test_modelopt_fp8_channel_and_block_inputs(tmp_path, cli, algorithm):
    """ModelOpt's per-channel and 128x128-block FP8 exports (their own flow): read with their
    granularity and converted into trn2 and trn3-mx, each value against code x weight_scale. (Its
    blocks pad 192-row weights, which trn2's 128x128 blocks refuse: trn2 per row here.)"""
    pytest.importorskip("modelopt.torch.quantization")
    modelopt_export(tmp_path / "in", torch.bfloat16, {}, layers=2, algorithm=algorithm)
    done = run(cli, "inspect", str(tmp_path / "in"))
    assert f'read as: layout modelopt-fp8 (hf_quant_config.json quant_algo "{algorithm}" (ModelOpt))' in done.stdout
    for target in ("trn2", "trn3-mx"):
        row = ["--granularity", "row"] if target == "trn2" else []
        done = run(cli, "quantize", str(tmp_path / "in"), str(tmp_path / target), *LAYOUT_ARGS[target], *row, "--json")
        assert done.returncode == 0, done.stderr
        check_report(done.stdout, tmp_path / "in", tmp_path / target, "modelopt-fp8")


@pytest.mark.parametrize("target,kept", [("trn2", False), ("trn3-mx", False), ("ct-mxfp8", False)])
def test_modelopt_fp8_input(tmp_path, cli, target, kept):
    """A checkpoint written by ModelOpt's own FP8 flow (mtq.quantize + export_hf_checkpoint): read
    as modelopt-fp8 (its static input scales and FP8 KV-cache scales dropped with the weights),
    each converted value against the input's code x weight_scale decoded here. An all-zero weight,
    which the export writes as scale 0 and NaN codes, is refused by name."""
    pytest.importorskip("modelopt.torch.quantization")
    modelopt_export(tmp_path / "in", torch.bfloat16, {}, layers=2, kv_cache=True)
    assert "model.layers.1.self_attn.v_proj.v_scale" in tensors(tmp_path / "in")
    done = run(cli, "inspect", str(tmp_path / "in"))
    assert 'read as: layout modelopt-fp8 (hf_quant_config.json quant_algo "FP8" (ModelOpt))' in done.stdout, done.stdout
    for scale in ("input_scale", "k_scale", "weight_scale"):
        line = next(l for l in done.stdout.splitlines() if l.startswith(f"model.layers.0.self_attn.k_proj.{scale} "))
        assert line.endswith("scales of model.layers.0.self_attn.k_proj"), line
    done = run(cli, "quantize", str(tmp_path / "in"), str(tmp_path / "out"), *LAYOUT_ARGS[target], "--json")
    assert done.returncode == 0, done.stderr
    total = check_report(done.stdout, tmp_path / "in", tmp_path / "out", "modelopt-fp8")
    assert (total == 0) == kept, total
    assert not any(k.endswith(("input_scale", "k_scale", "v_scale")) for k in tensors(tmp_path / "out"))

    modelopt_export(tmp_path / "zero", torch.bfloat16, {"model.layers.0.self_attn.k_proj.weight": torch.zeros(192, 384)})
    done = run(cli, "quantize", str(tmp_path / "zero"), str(tmp_path / "zero-out"), "--layout", "trn2")
    assert done.returncode == 2 and "model.layers.0.self_attn.k_proj.weight_scale\" is 0" in done.stderr, done.stderr
    assert not (tmp_path / "zero-out").exists()


def test_modelopt_nvfp4_export_dequantizes_exactly(tmp_path, cli):
    """A checkpoint written by ModelOpt's own NVFP4 flow (mtq.quantize with NVFP4_DEFAULT_CFG,
    export_hf_checkpoint; it gives fused projections one weight_scale_2): every value fp8q
    dequantizes to fp32 is code x s x S2 computed exactly here and rounded once, and ModelOpt's
    own NVFP4QTensor.dequantize, which rounds s x S2 to fp32 first, differs from it on some."""
    from modelopt.torch.quantization.qtensor.nvfp4_tensor import NVFP4QTensor

    modelopt_export(tmp_path / "in", torch.bfloat16, {}, layers=2, algorithm="NVFP4")
    done = run(cli, "dequantize", str(tmp_path / "in"), str(tmp_path / "out"), "--dtype", "f32", "--json")
    assert done.returncode == 0, done.stderr
    q, out = tensors(tmp_path / "in"), tensors(tmp_path / "out")
    e2m1 = torch.tensor([0, .5, 1, 1.5, 2, 3, 4, 6, -0.0, -.5, -1, -1.5, -2, -3, -4, -6], dtype=torch.float64)
    checked = theirs_differ = 0
    for name, packed in q.items():
        if not name.endswith(".weight") or packed.dtype != torch.uint8:
            continue
        module = name[: -len(".weight")]
        s, s2 = q[module + ".weight_scale"], q[module + ".weight_scale_2"]
        codes = torch.stack((packed & 0xF, packed >> 4), dim=-1).reshape(packed.shape[0], -1).long()
        exact = e2m1[codes] * s.to(torch.float64).repeat_interleave(16, dim=1) * float(s2)
        assert torch.equal(out[name], exact.to(torch.float32)), name
        rows, half = packed.shape
        theirs = NVFP4QTensor((rows, 2 * half), torch.float32, packed).dequantize(
            dtype=torch.float32, scale=s, double_scale=s2, block_sizes={-1: 16})
        theirs_differ += int((theirs != out[name]).sum())
        checked += 1
    assert checked == 14
    assert theirs_differ > 0
