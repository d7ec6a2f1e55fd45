"""``fp8q quantize --layout ct-fp8|ct-nvfp4 --like compressed-tensors`` against compressed-tensors'
own quantizer (the installed release): ``calculate_qparams`` on each block's min and max (what
llm-compressor's observers give it), then ``quantize`` with the preset's arguments, byte for
byte, on bf16, fp16 and fp32 weights with an all-zero row, subnormals and ties of the division.
Without the preset fp8q rounds each value once, and the two differ on bf16 weights. The same for
``like="modelopt"`` against ModelOpt's quantizers and exports (FP8 and NVFP4).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

import fp8q
from checkpoints import modelopt_export, tensors

ct = pytest.importorskip("compressed_tensors")
from compressed_tensors.quantization import preset_name_to_scheme  # noqa: E402
from compressed_tensors.quantization.lifecycle.forward import quantize  # noqa: E402
from compressed_tensors.quantization.utils.helpers import calculate_qparams  # noqa: E402

STRATEGIES = {"tensor": ("FP8", "tensor"), "row": ("FP8_DYNAMIC", "channel"), "block128x128": ("FP8_BLOCK", "block")}


def hostile_weight(dtype: torch.dtype) -> torch.Tensor:
    """[256, 384]: normal values, an all-zero row, a row of the dtype's subnormals, and a row of
    multiples of the row's amax / 448 at halfway points (ties of x / s before the fp8 rounding)."""
    g = torch.Generator().manual_seed(3)
    w = (torch.randn(256, 384, generator=g) * 0.05).to(dtype)
    w[7] = 0
    tiny = torch.finfo(dtype).tiny
    w[11] = (torch.arange(384, dtype=torch.float32) - 192).mul(tiny / 64).to(dtype)
    w[13] = (torch.arange(384, dtype=torch.float32) % 17 + 0.5).mul(0.02).to(dtype)
    w[200, 5] = 3.0  # one outlier: its block's other values fall far down the fp8 range
    return w


def compressed_tensors_codes(w: torch.Tensor, strategy: str) -> tuple[torch.Tensor, torch.Tensor]:
    preset, _ = STRATEGIES[strategy]
    args = preset_name_to_scheme(preset, ["Linear"]).weights
    if strategy == "tensor":
        lo, hi = w.min(), w.max()
    elif strategy == "row":
        lo, hi = w.amin(dim=1, keepdim=True), w.amax(dim=1, keepdim=True)
    else:
        blocks = w.reshape(w.shape[0] // 128, 128, w.shape[1] // 128, 128)
        lo, hi = blocks.amin(dim=(1, 3)), blocks.amax(dim=(1, 3))
    scale, zero_point = calculate_qparams(lo, hi, args)
    codes = quantize(w, scale, zero_point, args, dtype=torch.float8_e4m3fn)
    return codes.view(torch.uint8), scale.reshape(-1)


@pytest.mark.parametrize("strategy", list(STRATEGIES))
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32], ids=["bf16", "fp16", "fp32"])
def test_like_compressed_tensors_equals_its_quantizer(tmp_path, cli, dtype, strategy):
    w = hostile_weight(dtype)
    model = tmp_path / "model"
    model.mkdir()
    save_file({"layer.proj.weight": w}, str(model / "model.safetensors"))
    (model / "config.json").write_text(json.dumps({"architectures": ["X"]}))
    theirs, their_scales = compressed_tensors_codes(w, strategy)
    outputs = {}
    for like in ("compressed-tensors", "fp8q"):
        out = tmp_path / like
        done = subprocess.run([str(cli), "quantize", str(model), str(out), "--layout", "ct-fp8", "--granularity", strategy,
                               "--like", like], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        outputs[like] = tensors(out)
    ours = outputs["compressed-tensors"]
    assert ours["layer.proj.weight_scale"].dtype == dtype
    assert torch.equal(ours["layer.proj.weight_scale"].reshape(-1), their_scales.to(dtype))
    assert torch.equal(ours["layer.proj.weight"].view(torch.uint8), theirs)
    # fp8q's own rounding: one rounding of x / s; on bf16 and fp16 weights it differs
    plain = outputs["fp8q"]["layer.proj.weight"].view(torch.uint8)
    differ = int((plain != theirs).sum())
    if dtype == torch.float32:  # the same arithmetic; only an all-zero block's scale differs (eps against 1)
        assert differ == 0
        zero_scale = outputs["fp8q"]["layer.proj.weight_scale"].reshape(-1)[7 if strategy == "row" else 0]
        assert strategy != "row" or zero_scale == 1.0
    else:
        assert differ > 0
    print(f"{strategy} {dtype}: {differ} of {plain.numel()} codes differ between --like fp8q and compressed-tensors")


def compressed_tensors_nvfp4(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """compressed-tensors' NVFP4A16 weight quantizer as llm-compressor runs it: generate_gparam on
    the weight's min and max, calculate_qparams on each group of 16's, quantize_and_pack_fp4."""
    from compressed_tensors.compressors.nvfp4.helpers import quantize_and_pack_fp4
    from compressed_tensors.quantization.utils.helpers import generate_gparam

    args = preset_name_to_scheme("NVFP4A16", ["Linear"]).weights
    global_scale = generate_gparam(w.min(), w.max())
    groups = w.reshape(w.shape[0], -1, 16)
    scale, _ = calculate_qparams(groups.amin(-1), groups.amax(-1), args, global_scale=global_scale)
    return quantize_and_pack_fp4(w, scale, global_scale=global_scale), scale.to(torch.float8_e4m3fn), global_scale


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32], ids=["bf16", "fp16", "fp32"])
def test_like_compressed_tensors_nvfp4_equals_its_quantizer(tmp_path, cli, dtype):
    """`fp8q quantize --layout ct-nvfp4 --like compressed-tensors` and fp8q.quantize(w, "e2m1",
    granularity="nvfp4", like="compressed-tensors") write compressed-tensors' own packed codes,
    weight_scale and weight_global_scale byte for byte: the hostile weight (zero row, subnormals,
    ties), the e2m1 rounding's ties, and a weight of amax 2^-6, whose global scale overflows fp16
    (compressed-tensors then takes 1). fp8q's own NVFP4 differs."""
    g = torch.Generator().manual_seed(4)
    weights = {"layer.proj.weight": hostile_weight(dtype), "layer.ties.weight": nvfp4_ties().to(dtype),
               "layer.small.weight": (torch.rand(32, 64, generator=g) * 2 - 1).mul(2.0 ** -6).to(dtype)}
    model = tmp_path / "model"
    model.mkdir()
    save_file(weights, str(model / "model.safetensors"))
    (model / "config.json").write_text(json.dumps({"architectures": ["X"]}))
    out = tmp_path / "out"
    done = subprocess.run([str(cli), "quantize", str(model), str(out), "--layout", "ct-nvfp4", "--like",
                           "compressed-tensors"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    written = tensors(out)
    differ = 0
    for name, w in weights.items():
        module = name.removesuffix(".weight")
        packed, scale, global_scale = compressed_tensors_nvfp4(w)
        assert torch.equal(written[module + ".weight_packed"], packed), name
        assert torch.equal(written[module + ".weight_scale"].view(torch.uint8), scale.view(torch.uint8)), name
        assert torch.equal(written[module + ".weight_global_scale"], global_scale), name
        q = fp8q.quantize(w, "e2m1", granularity="nvfp4", like="compressed-tensors")
        assert torch.equal(q.codes.view(torch.uint8), packed) and q.global_scale_op == "divide", name
        assert torch.equal(q.scales.view(torch.uint8), scale.view(torch.uint8)), name
        assert torch.equal(q.global_scale, global_scale), name
        own = fp8q.quantize(w, "e2m1", granularity="nvfp4")
        differ += int((own.codes.view(torch.uint8) != packed).sum())
    assert differ > 0
    print(f"{dtype}: {differ} code bytes of fp8q's own NVFP4 differ from compressed-tensors'")


def fused_model(tmp_path: Path, dtype: torch.dtype) -> tuple[Path, dict[str, torch.Tensor]]:
    """One decoder layer's q/k/v/o and gate/up/down weights of different amaxes; in float16, k_proj's
    amax (2^-6) is small enough that compressed-tensors' own global scale overflows (then 1)."""
    g = torch.Generator().manual_seed(12)
    amax = {"self_attn.q_proj": 0.5, "self_attn.k_proj": 2.0 ** -6, "self_attn.v_proj": 3.0, "self_attn.o_proj": 0.25,
            "mlp.gate_proj": 0.125, "mlp.up_proj": 1.5, "mlp.down_proj": 0.75}
    weights = {}
    for name, a in amax.items():
        w = torch.rand(48, 64, generator=g) * 2 - 1
        weights[f"model.layers.0.{name}.weight"] = (w / w.abs().max() * a).to(dtype)
    model = tmp_path / "model"
    model.mkdir()
    save_file(weights, str(model / "model.safetensors"))
    (model / "config.json").write_text(json.dumps({"architectures": ["X"]}))
    return model, weights


FUSED = (("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"), ("mlp.gate_proj", "mlp.up_proj"))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32], ids=["bf16", "fp16", "fp32"])
def test_ct_nvfp4_fused_layers_share_one_global_scale(tmp_path, cli, dtype):
    """vLLM loads one weight_global_scale per fused layer (q/k/v, gate/up: the largest of the
    shards'), so `fp8q quantize --layout ct-nvfp4` gives each group the smallest of its layers' global
    scales. With --like compressed-tensors that is llm-compressor's update_fused_layer_weight_global_scales
    (the minimum of generate_gparam over the group) before calculate_qparams and quantize_and_pack_fp4,
    byte for byte; fp8q's own equals quantizing the group's concatenation. o_proj and down_proj keep
    their own."""
    from compressed_tensors.compressors.nvfp4.helpers import quantize_and_pack_fp4
    from compressed_tensors.quantization.utils.helpers import generate_gparam

    model, weights = fused_model(tmp_path, dtype)
    args = preset_name_to_scheme("NVFP4A16", ["Linear"]).weights
    outputs = {}
    for like in ("compressed-tensors", "fp8q"):
        out = tmp_path / like
        done = subprocess.run([str(cli), "quantize", str(model), str(out), "--layout", "ct-nvfp4", "--like", like],
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        outputs[like] = tensors(out)
    prefix = "model.layers.0."
    groups = [[prefix + m for m in group] for group in FUSED] + [[prefix + "self_attn.o_proj"], [prefix + "mlp.down_proj"]]
    for group in groups:
        ws = [weights[m + ".weight"] for m in group]
        # compressed-tensors: each layer's own global scale, then the group's minimum
        shared = torch.min(torch.cat([generate_gparam(w.min(), w.max()) for w in ws])).reshape([1])
        for m, w in zip(group, ws):
            blocks = w.reshape(w.shape[0], -1, 16)
            scale, _ = calculate_qparams(blocks.amin(-1), blocks.amax(-1), args, global_scale=shared)
            written = outputs["compressed-tensors"]
            assert torch.equal(written[m + ".weight_global_scale"], shared), m
            assert torch.equal(written[m + ".weight_scale"].view(torch.uint8),
                               scale.to(torch.float8_e4m3fn).view(torch.uint8)), m
            assert torch.equal(written[m + ".weight_packed"], quantize_and_pack_fp4(w, scale, global_scale=shared)), m
            # the Python API, given the group's global scale
            q = fp8q.quantize(w, "e2m1", granularity="nvfp4", like="compressed-tensors", global_scale=shared.item())
            assert torch.equal(q.codes.view(torch.uint8), written[m + ".weight_packed"]), m
            assert torch.equal(q.scales.view(torch.uint8), written[m + ".weight_scale"].view(torch.uint8)), m
            assert torch.equal(q.global_scale, shared), m
        # fp8q's own: the concatenation's global scale, codes and block scales, row for row
        q = fp8q.quantize(torch.cat(ws), "e2m1", granularity="nvfp4")
        row = 0
        for m, w in zip(group, ws):
            written = outputs["fp8q"]
            rows = slice(row, row + w.shape[0])
            assert torch.equal(written[m + ".weight_global_scale"], q.global_scale.reshape([1])), m
            assert torch.equal(written[m + ".weight_packed"], q.codes.view(torch.uint8)[rows]), m
            assert torch.equal(written[m + ".weight_scale"].view(torch.uint8), q.scales.view(torch.uint8)[rows]), m
            row += w.shape[0]
    if dtype == torch.float16:  # k_proj's own global scale overflows float16: the group's is 1
        assert outputs["compressed-tensors"][prefix + "self_attn.q_proj.weight_global_scale"].item() == 1.0


def test_global_scale_argument_is_checked():
    w = torch.ones(2, 16)
    for bad in (0.0, -1.0, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="global_scale"):
            fp8q.quantize(w, "e2m1", granularity="nvfp4", global_scale=bad)
    with pytest.raises(ValueError, match="not a float32 value"):
        fp8q.quantize(w, "e2m1", granularity="nvfp4", global_scale=0.1)
    with pytest.raises(ValueError, match="applies to NVFP4"):
        fp8q.quantize(w, "e4m3fn", granularity="row", global_scale=1.0)
    with pytest.raises(TypeError, match="global_scale must be a float"):
        fp8q.quantize(w, "e2m1", granularity="nvfp4", global_scale="1")


def test_verify_names_fused_layers_with_different_global_scales(tmp_path, cli):
    """fp8q verify reports a ct-nvfp4 checkpoint whose q/k/v global scales differ (vLLM would read
    some of them at the wrong magnitude), naming the tensors; the checkpoint as written passes."""
    from safetensors import safe_open

    model, _ = fused_model(tmp_path, torch.bfloat16)
    out = tmp_path / "out"
    assert subprocess.run([str(cli), "quantize", str(model), str(out), "--layout", "ct-nvfp4"]).returncode == 0
    verified = subprocess.run([str(cli), "verify", str(out), "--against", str(model)], capture_output=True, text=True)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    with safe_open(str(out / "model.safetensors"), "pt") as f:
        metadata = f.metadata()
        state = {k: f.get_tensor(k) for k in f.keys()}
    # k's global scale and block scales doubled: its own values are the same (s / S), the group's
    # scales differ, and only that is reported
    k = "model.layers.0.self_attn.k_proj."
    block = state[k + "weight_scale"].to(torch.float32) * 2
    assert torch.equal(block.to(torch.float8_e4m3fn).to(torch.float32), block)
    state[k + "weight_scale"] = block.to(torch.float8_e4m3fn)
    state[k + "weight_global_scale"] = state[k + "weight_global_scale"] * 2
    save_file(state, str(out / "model.safetensors"), metadata=metadata)
    verified = subprocess.run([str(cli), "verify", str(out), "--against", str(model)], capture_output=True, text=True)
    assert verified.returncode == 1, verified.stdout + verified.stderr
    problems = [line for line in verified.stdout.splitlines() if line.startswith("PROBLEM")]
    assert len(problems) == 1 and "fused layers hold different global scales" in problems[0], problems
    assert k + "weight_global_scale" in problems[0]


@pytest.mark.parametrize("fmt,num_bits", [("e4m3fn", 8), ("e2m3", 6), ("e2m1", 4)])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32], ids=["bf16", "fp32"])
def test_mx_rule_compressed_tensors_equals_generate_mx_scales(fmt, num_bits, dtype):
    """fp8q.quantize(..., granularity="mx", mx_rule="compressed-tensors") gives the E8M0 codes of
    compressed-tensors' own generate_mx_scales on each group's amax (in the weight's dtype, as
    its observer passes it), over amaxes at and around every rounding threshold of 30 binades."""
    from compressed_tensors.quantization.utils.mxfp_utils import generate_mx_scales

    g = torch.Generator().manual_seed(9)
    fractions = torch.tensor([1.0, 1.5, 1.7, 1.74, 1.75, 1.76, 1.875, 1.9, 1.9375, 1.95, 1.99])
    amax = (fractions[:, None] * torch.exp2(torch.arange(-15, 15, dtype=torch.float32))[None, :]).flatten()
    groups = torch.rand(amax.numel(), 32, generator=g) * 2 - 1
    groups = groups / groups.abs().amax(dim=1, keepdim=True) * amax[:, None]  # each group's amax is exact
    x = groups.to(dtype)
    ours = fp8q.quantize(x, fmt, granularity="mx", mx_rule="compressed-tensors").scales.view(torch.uint8).flatten()
    theirs = generate_mx_scales(x.abs().amax(dim=1), num_bits=num_bits).to(torch.uint8)
    assert torch.equal(ours, theirs)


@pytest.mark.parametrize("strategy", list(STRATEGIES))
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32], ids=["bf16", "fp16", "fp32"])
def test_python_like_compressed_tensors_equals_its_quantizer(dtype, strategy):
    """fp8q.quantize(..., like="compressed-tensors") on tensors: the codes and scales of
    compressed-tensors' own calculate_qparams + quantize, byte for byte, on the hostile weight."""
    w = hostile_weight(dtype)
    want_codes, want_scales = compressed_tensors_codes(w, strategy)
    q = fp8q.quantize(w, "e4m3fn", granularity=strategy, scale_op="divide", like="compressed-tensors")
    assert torch.equal(q.codes.view(torch.uint8), want_codes)
    assert torch.equal(q.scales.flatten(), want_scales.to(torch.float32))
    if dtype != torch.float32:  # fp8q's own single rounding differs from it on these weights
        plain = fp8q.quantize(w, "e4m3fn", granularity=strategy, scale_op="divide")
        assert not torch.equal(plain.codes.view(torch.uint8), want_codes)


@pytest.mark.parametrize("algorithm,granularity", [("FP8_PER_CHANNEL_PER_TOKEN", "row"), ("fp8_pb_wo", "block128x128")])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32], ids=["bf16", "fp16", "fp32"])
def test_python_like_modelopt_per_row_and_block_equals_its_export(tmp_path, dtype, algorithm, granularity):
    """fp8q.quantize(w, granularity=row / block128x128, like="modelopt") gives every code and
    scale of ModelOpt's own per-channel and 2-D block FP8 exports, the hostile weight (zero row,
    subnormals, ties) among them; there fp8q's own divide form is ModelOpt's arithmetic."""
    replace = {"model.layers.0.mlp.up_proj.weight": hostile_weight(dtype)}
    originals, exported = modelopt_export(tmp_path / "modelopt", dtype, replace, algorithm=algorithm)
    checked = 0
    for name, w in originals.items():
        if name + "_scale" not in exported:
            continue
        q = fp8q.quantize(w, "e4m3fn", granularity=granularity, scale_op="divide", like="modelopt")
        assert torch.equal(q.codes.view(torch.uint8), exported[name].view(torch.uint8)), name
        assert torch.equal(q.scales.flatten(), exported[name + "_scale"].flatten()), name
        checked += 1
    assert checked == 7


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32], ids=["bf16", "fp16", "fp32"])
def test_python_like_modelopt_equals_its_export(tmp_path, dtype):
    """fp8q.quantize(w, like="modelopt") gives every weight's codes and weight_scale of ModelOpt's
    own FP8 export, byte for byte: the hostile weight (zero row, subnormals, ties) and a weight of
    the dtype's subnormals only, beside the model's own random weights. An all-zero weight, which
    the export writes as scale 0 and NaN codes, is refused by the preset and by fp8q's reader."""
    tiny = torch.full((192, 384), torch.finfo(dtype).tiny / 4, dtype=dtype)
    tiny[::3] *= -1
    replace = {"model.layers.0.mlp.up_proj.weight": hostile_weight(dtype),
               "model.layers.0.self_attn.k_proj.weight": torch.zeros(192, 384, dtype=dtype),
               "model.layers.0.self_attn.v_proj.weight": tiny}
    originals, exported = modelopt_export(tmp_path / "modelopt", dtype, replace)
    checked = differ = 0
    zero = "model.layers.0.self_attn.k_proj.weight"
    assert float(exported[zero + "_scale"]) == 0 and exported[zero].float().isnan().all()
    with pytest.raises(ValueError, match="like modelopt: the tensor's amax is 0, for which ModelOpt's FP8 export "
                                         "writes the scale 0 and NaN codes"):
        fp8q.quantize(originals[zero], "e4m3fn", scale_op="divide", like="modelopt")
    for name, w in originals.items():
        if name + "_scale" not in exported or name == zero:
            continue
        q = fp8q.quantize(w, "e4m3fn", scale_op="divide", like="modelopt")
        assert torch.equal(q.codes.view(torch.uint8), exported[name].view(torch.uint8)), name
        assert torch.equal(q.scales.flatten(), exported[name + "_scale"].reshape(-1)), name
        plain = fp8q.quantize(w, "e4m3fn", scale_op="divide")
        differ += int((plain.codes.view(torch.uint8) != exported[name].view(torch.uint8)).sum())
        checked += 1
    assert checked == 6  # q, v, o, gate, up, down
    assert (differ > 0) == (dtype != torch.float32), differ
    print(f"{dtype}: {differ} codes of fp8q's single rounding differ from ModelOpt's export")


def nvfp4_ties() -> torch.Tensor:
    """[4, 64] with amax 2688 (weight_scale_2 = 1): block b of row r is k_rb times the e2m1
    rounding ties 0.25 ... 5 and the block amax 6, k an e4m3fn value, so that x / d_b lands on
    each tie exactly; then -0, a block of zeros and one of values below the block scale's 2^-9."""
    ties = torch.tensor([6.0, 0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0])
    w = torch.zeros(4, 64)
    for r, k in enumerate([448.0, 1.0, 0.015625, 0.001953125]):
        for b in range(3):
            w[r, 16 * b:16 * b + 16] = torch.cat([ties, -ties]) * k
    w[0, 0] = 2688.0
    w[1, 48] = -0.0
    w[2, 48:] = 1e-7 * torch.arange(16)
    return w


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32], ids=["bf16", "fp16", "fp32"])
def test_python_like_modelopt_nvfp4_equals_its_quantizer(dtype):
    """fp8q.quantize(w, "e2m1", granularity="nvfp4", like="modelopt") gives NVFP4QTensor.quantize's
    packed codes, block scales and weight_scale_2 bit for bit (the e2m1 rounding's ties, -0, an
    all-zero block, blocks below the scale's 2^-9), and dequantizes to its dequantize()'s values
    (ModelOpt decodes the code of -0 as +0)."""
    from modelopt.torch.quantization.qtensor.nvfp4_tensor import NVFP4QTensor

    g = torch.Generator().manual_seed(5)
    for w in [nvfp4_ties(), torch.randn(32, 256, generator=g) * torch.logspace(-3, 1, 32).unsqueeze(1)]:
        w = w.to(dtype)
        packed, scale, scale_2 = NVFP4QTensor.quantize(w.clone(), 16)
        q = fp8q.quantize(w, "e2m1", granularity="nvfp4", like="modelopt")
        assert torch.equal(q.codes.view(torch.uint8), packed._quantized_data.view(torch.uint8))
        assert torch.equal(q.scales.view(torch.uint8), scale.view(torch.uint8).reshape(q.scales.shape))
        assert q.global_scale.view(torch.int32).item() == scale_2.float().view(torch.int32).item()
        assert q.global_scale_op == "multiply"
        theirs = packed.dequantize(dtype=torch.float32, scale=scale, double_scale=scale_2, block_sizes={-1: 16})
        ours = q.dequantize()
        assert torch.equal((ours + 0.0).view(torch.int32), theirs.view(torch.int32))  # -0 + 0 = +0, as theirs
        assert torch.equal(ours.view(torch.int32), fp8q.from_codes(q.codes, q.scales, "nvfp4", "e2m1", q.global_scale,
                                                                    "multiply").dequantize().view(torch.int32))
    with pytest.raises(ValueError, match="like modelopt: the tensor's amax is 0, for which ModelOpt's NVFP4 export"):
        fp8q.quantize(torch.zeros(2, 32), "e2m1", granularity="nvfp4", like="modelopt")
    m = fp8q.quantize(torch.ones(2, 32), "e2m1", granularity="nvfp4", like="modelopt")
    with pytest.raises(ValueError, match="global_scale_op: 'times' is not divide or multiply"):
        torch.ops.fp8q.dequantize(m.codes, m.scales, "nvfp4", "e2m1", torch.float32, m.global_scale, "times")
    with pytest.raises(ValueError, match="global_scale_op: only the nvfp4 granularities have a global scale"):
        torch.ops.fp8q.dequantize(m.codes, m.scales.float(), "tensor", "e2m1", torch.float32, None, "multiply")


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
def test_python_like_modelopt_nvfp4_equals_its_export(tmp_path, dtype):
    """ModelOpt's own NVFP4 export (NVFP4_DEFAULT_CFG, export_hf_checkpoint): every weight's packed
    codes, weight_scale and weight_scale_2 equal fp8q.quantize(..., like="modelopt")'s, the
    hostile weight among them. The export gives the layers a server fuses (q, k, v; gate, up) the
    weight_scale_2 of their concatenation, so each such group is quantized as one tensor of
    stacked rows (a 1 x 16 block never spans two of them) and split. fp8q's own NVFP4
    (Transformer Engine's quantizer) differs."""
    replace = {"model.layers.0.mlp.up_proj.weight": hostile_weight(dtype)}
    originals, exported = modelopt_export(tmp_path / "modelopt", dtype, replace, algorithm="NVFP4")
    groups = [["self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"], ["self_attn.o_proj"],
              ["mlp.gate_proj", "mlp.up_proj"], ["mlp.down_proj"]]
    checked = differ = 0
    for group in groups:
        names = [f"model.layers.0.{g}.weight" for g in group]
        q = fp8q.quantize(torch.cat([originals[n] for n in names]), "e2m1", granularity="nvfp4", like="modelopt")
        row = 0
        for name in names:
            rows = originals[name].shape[0]
            assert torch.equal(q.codes.view(torch.uint8)[row:row + rows], exported[name].view(torch.uint8)), name
            assert torch.equal(q.scales.view(torch.uint8)[row:row + rows],
                               exported[name + "_scale"].view(torch.uint8)), name
            assert torch.equal(q.global_scale, exported[name + "_scale_2"].reshape(1)), name
            own = fp8q.quantize(originals[name], "e2m1", granularity="nvfp4")
            differ += int((own.codes.view(torch.uint8) != exported[name].view(torch.uint8)).sum())
            row += rows
            checked += 1
    assert checked == 7 and differ > 0
    print(f"{dtype}: {differ} code bytes of fp8q's own NVFP4 differ from ModelOpt's export")


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32], ids=["bf16", "fp16", "fp32"])
def test_python_like_modelopt_cuda_equals_its_arithmetic_on_a_gpu(dtype):
    """like="modelopt-cuda": ModelOpt's quantizers as they run on a CUDA device, where torch
    computes a tensor divided by a Python number n as the tensor times fp32(1 / n)
    (div_true_kernel_cuda) and every other division as a division. NVFP4: NVFP4QTensor.quantize
    given that weight_scale_2; FP8: the export's `weight / scale` with that scale, per tensor (a
    0-dim scale: the quotient in x's dtype), per row and per 128x128 block (an all-zero block's
    scale 1). The CPU preset differs from it on some of these weights."""
    from modelopt.torch.quantization.qtensor.nvfp4_tensor import NVFP4QTensor

    g = torch.Generator().manual_seed(6)
    weights = [hostile_weight(dtype)] + [(torch.randn(128, 256, generator=g) * 0.02 * (1 + i)).to(dtype)
                                         for i in range(24)]
    inv = {n: torch.tensor(1.0 / n, dtype=torch.float32) for n in (448.0, 2688.0)}
    differ = 0
    for w in weights:
        scale_2 = w.abs().amax().float() * inv[2688.0]
        packed, scale, _ = NVFP4QTensor.quantize(w.clone(), 16, weights_scaling_factor_2=scale_2)
        q = fp8q.quantize(w, "e2m1", granularity="nvfp4", like="modelopt-cuda")
        assert q.global_scale.view(torch.int32).item() == scale_2.view(torch.int32).item()
        assert torch.equal(q.codes.view(torch.uint8), packed._quantized_data.view(torch.uint8))
        assert torch.equal(q.scales.view(torch.uint8), scale.view(torch.uint8).reshape(q.scales.shape))
        cpu = fp8q.quantize(w, "e2m1", granularity="nvfp4", like="modelopt")
        differ += int(not torch.equal(cpu.global_scale, q.global_scale))
        for granularity in ("tensor", "row", "block128x128"):
            if granularity == "tensor":
                s = w.abs().amax().float() * inv[448.0]
                want = (w / s).to(torch.float8_e4m3fn)
            else:
                r, c = (1, w.shape[1]) if granularity == "row" else (128, 128)
                blocks = w.float().abs().reshape(w.shape[0] // r, r, w.shape[1] // c, c).amax(dim=(1, 3))
                s = blocks * inv[448.0]
                s[s == 0] = 1.0
                full = s.repeat_interleave(r, 0).repeat_interleave(c, 1)
                want = (w / full).to(torch.float8_e4m3fn)
            q8 = fp8q.quantize(w, "e4m3fn", granularity=granularity, scale_op="divide", like="modelopt-cuda")
            assert torch.equal(q8.scales.flatten(), s.flatten()), granularity
            assert torch.equal(q8.codes.view(torch.uint8), want.view(torch.uint8)), granularity
    assert differ > 0
    print(f"{dtype}: weight_scale_2 differs between the CPU and CUDA arithmetic on {differ} of {len(weights)} weights")


def test_python_like_refuses_what_the_producer_does_not_do():
    w = torch.ones(4, 32)
    for kwargs in [dict(granularity="row"), dict(granularity="col", scale_op="divide"),
                   dict(granularity="mx"), dict(granularity="row", scale_op="divide", margin=1)]:
        with pytest.raises(ValueError, match="like compressed-tensors"):
            fp8q.quantize(w, "e4m3fn", like="compressed-tensors", **kwargs)
    with pytest.raises(ValueError, match="like modelopt: its FP8 quantizer writes e4m3fn per tensor, row or 128x128 block"):
        fp8q.quantize(w, "e4m3fn", granularity="col", scale_op="divide", like="modelopt")
    with pytest.raises(ValueError, match="like modelopt: its NVFP4 weights have blocks of 1 x 16"):
        fp8q.quantize(w, "e2m1", granularity="nvfp4_16x16", like="modelopt")
    with pytest.raises(ValueError, match="the GEMM takes NVFP4's global scale as a divisor"):
        m = fp8q.quantize(w, "e2m1", granularity="nvfp4", like="modelopt")
        fp8q.matmul(m, torch.ones(32, 4).to(torch.float8_e4m3fn), profile="ocp")
    with pytest.raises(ValueError, match="like: unknown 'transformer-engine'"):
        fp8q.quantize(w, "e4m3fn", scale_op="divide", like="transformer-engine")
