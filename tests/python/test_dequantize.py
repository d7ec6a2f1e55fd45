"""fp8q dequantize: a quantized checkpoint written in high precision (docs/checkpoints.md,
"Dequantized outputs").

The loader suite's llama model is quantized by fp8q into each input layout (and a ModelOpt NVFP4
export is written from its documented layout), then dequantized. Each output weight is checked
against the input's exact values, decoded here independently of fp8q (test_quantized_inputs'
exact_weights): it must be the nearest value of the dtype, ties to even, which this test checks
from the value's two neighbours in that dtype, not by a rounding of its own. The report's count
and largest change must be those of that comparison. Every other tensor is the input's, bit for
bit; the output has no scales and no quantization config, and transformers loads it as a plain
model whose weights are the file's.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import torch
from checkpoints import tensors
from test_quantized_inputs import LAYOUT_ARGS, exact_weights, write_modelopt_nvfp4

transformers = pytest.importorskip("transformers")

SOURCES = ["hf-fp8", "ct-fp8 channel", "ct-mxfp8", "ct-mxfp4", "ct-nvfp4", "trn2", "trn3-mx"]
DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}
INT = {torch.bfloat16: torch.int16, torch.float16: torch.int16, torch.float32: torch.int32}


# e2m1 code -> value (OCP MX: sign, 2 exponent bits, 1 mantissa bit)
FP4_VALUES = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0],
                          dtype=torch.float64)


def run(cli: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(cli), *args], capture_output=True, text=True)


def assert_nearest_even(x: torch.Tensor, y: torch.Tensor, name: str) -> None:
    """y (a float dtype) holds x (float64) rounded to nearest, ties to even: no neighbour of y
    in y's dtype is nearer to x, and on a tie y's last bit is 0. Finite x only."""
    bits = y.view(INT[y.dtype])
    # neighbours by the integer next to y's pattern, toward and away from zero (sign-magnitude)
    up, down = (bits + 1).view(y.dtype).to(torch.float64), (bits - 1).view(y.dtype).to(torch.float64)
    y64 = y.to(torch.float64)
    d = (x - y64).abs()
    zero = y64 == 0  # a zero's pattern minus one is not its neighbour: compare with the smallest subnormal
    tiny = torch.tensor(1, dtype=INT[y.dtype]).view(y.dtype).to(torch.float64)
    nearer_up = torch.where(zero, x.abs() > tiny / 2, ((x - up).abs() < d) & ~up.isnan())
    nearer_down = torch.where(zero, torch.zeros_like(zero), ((x - down).abs() < d) & ~down.isnan())
    tie = ((x - up).abs() == d) | ((x - down).abs() == d)
    odd_tie = tie & (d > 0) & ((bits & 1) == 1) & ~zero
    finite = y64.isfinite()
    assert not (nearer_up & finite).any(), f"{name}: a larger-magnitude neighbour is nearer"
    assert not (nearer_down & finite).any(), f"{name}: a smaller-magnitude neighbour is nearer"
    assert not (odd_tie & finite).any(), f"{name}: a tie went to the odd neighbour"
    assert not ((~finite) & x.isfinite() & (x.abs() < torch.finfo(y.dtype).max)).any(), name


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("source", SOURCES)
def test_dequantized_weights_are_the_exact_values_rounded_once(tmp_path, cli, loader_models, source, dtype):
    src = loader_models["llama"]
    done = run(cli, "quantize", str(src), str(tmp_path / "in"), *LAYOUT_ARGS[source])
    assert done.returncode == 0, done.stderr
    done = run(cli, "dequantize", str(tmp_path / "in"), str(tmp_path / "out"), "--dtype", dtype, "--json")
    assert done.returncode == 0, done.stderr
    report = {t["name"]: t for t in json.loads(done.stdout)["tensors"]}
    q, out = tensors(tmp_path / "in"), tensors(tmp_path / "out")
    exact = exact_weights(q)
    assert len(exact) >= 12
    for module, x in exact.items():
        y = out[module + ".weight"]
        assert y.dtype == DTYPES[dtype] and y.shape == x.shape, module
        assert_nearest_even(x, y, module)
        codes = module + (".weight_packed" if module + ".weight_packed" in q else ".weight")
        c = report[codes]["conversion"]
        changed = x != y.to(torch.float64)
        assert c["path"] == "dequantized" and c["changed"] == int(changed.sum()), module
        assert c["max_change"] == (float((x - y.to(torch.float64)).abs().max()) if changed.any() else 0.0), module
        assert not any(k.startswith(module + ".") and k != module + ".weight" and k != module + ".bias" for k in out), module
    for name, t in q.items():  # everything else, bit for bit
        if not any(name.startswith(m + ".") for m in exact):
            assert torch.equal(out[name].view(torch.uint8), t.view(torch.uint8)), name
    config = json.loads((tmp_path / "out" / "config.json").read_text())
    assert "quantization_config" not in config
    loaded = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "out", dtype=DTYPES[dtype]).eval()
    params = dict(loaded.named_parameters())
    for module in exact:
        assert torch.equal(params[module + ".weight"].detach(), out[module + ".weight"]), module


def test_mx_values_fit_f32_and_require_exact(tmp_path, cli, loader_models):
    """An e4m3fn code times a power of two has at most 4 significant bits: every MXFP8 value
    fits fp32 (and --require-exact passes); per-channel fp32 scales give up to 28 bits, which
    bf16 cannot hold: --require-exact fails, naming the tensor, and writes nothing."""
    src = loader_models["llama"]
    assert run(cli, "quantize", str(src), str(tmp_path / "mx"), "--layout", "ct-mxfp8").returncode == 0
    done = run(cli, "dequantize", str(tmp_path / "mx"), str(tmp_path / "mx32"), "--dtype", "f32", "--require-exact", "--json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)["summary"]
    assert summary["converted"] == summary["converted_exact"] >= 12
    assert run(cli, "quantize", str(src), str(tmp_path / "ch"), *LAYOUT_ARGS["ct-fp8 channel"]).returncode == 0
    done = run(cli, "dequantize", str(tmp_path / "ch"), str(tmp_path / "ch16"), "--dtype", "bf16", "--require-exact")
    assert done.returncode == 2 and "--require-exact: tensor " in done.stderr and "nothing was written" in done.stderr
    assert not (tmp_path / "ch16").exists()


def test_modelopt_export_drops_its_quant_config(tmp_path, cli):
    exact = write_modelopt_nvfp4(tmp_path / "in")
    done = run(cli, "dequantize", str(tmp_path / "in"), str(tmp_path / "out"), "--dtype", "f32")
    assert done.returncode == 0, done.stderr
    out = tensors(tmp_path / "out")
    for module, x in exact.items():
        assert_nearest_even(x, out[module + ".weight"], module)
    assert not (tmp_path / "out" / "hf_quant_config.json").exists()


def test_refusals(tmp_path, cli, loader_models):
    src = loader_models["llama"]
    done = run(cli, "dequantize", str(src), str(tmp_path / "out"))
    assert done.returncode == 2 and "holds no quantized weight: nothing to dequantize" in done.stderr, done.stderr
    assert run(cli, "quantize", str(src), str(tmp_path / "in"), "--layout", "ct-mxfp8").returncode == 0
    done = run(cli, "dequantize", str(tmp_path / "in"), str(tmp_path / "out"), "--dtype", "f64")
    assert done.returncode == 2 and "--dtype: 'f64' is not one of bf16 f16 f32" in done.stderr, done.stderr
    assert not (tmp_path / "out").exists()


def write_gpt_oss_mxfp4(directory: Path) -> dict[str, torch.Tensor]:
    """A small gpt-oss model (transformers' GptOssForCausalLM, random init, bf16) whose experts
    are stored as gpt-oss stores them: U8 *_blocks [E, N, K/32, 16] and E8M0 *_scales
    [E, N, K/32], config.json quant_method "mxfp4". Returns the blocks and scales."""
    from safetensors.torch import load_file, save_file

    torch.manual_seed(0)
    config = transformers.GptOssConfig(num_hidden_layers=1, hidden_size=64, intermediate_size=96, num_local_experts=4,
                                       num_experts_per_tok=2, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                                       vocab_size=128, layer_types=["full_attention"])
    transformers.GptOssForCausalLM(config).to(torch.bfloat16).save_pretrained(directory)
    state = load_file(directory / "model.safetensors")
    g = torch.Generator().manual_seed(1)
    packed = {}
    for name in [k for k in state if k.endswith("_proj") and ".experts." in k]:
        experts, k, n = state.pop(name).shape  # the loader's [E, K, N]
        packed[name + "_blocks"] = torch.randint(0, 256, (experts, n, k // 32, 16), generator=g, dtype=torch.uint8)
        packed[name + "_scales"] = torch.randint(100, 150, (experts, n, k // 32), generator=g, dtype=torch.uint8)
    save_file({**state, **packed}, str(directory / "model.safetensors"), metadata={"format": "pt"})
    c = json.loads((directory / "config.json").read_text())
    c["quantization_config"] = {"quant_method": "mxfp4", "modules_to_not_convert": ["model.layers.*.self_attn", "lm_head"]}
    (directory / "config.json").write_text(json.dumps(c))
    return packed


@pytest.mark.parametrize("dtype", ["bf16", "f32"])
def test_gpt_oss_experts_as_the_loader_dequantizes_them(tmp_path, cli, dtype):
    """Each expert stack equals transformers' own convert_moe_packed_tensors (its gpt-oss loader's
    dequantization, [E, K, N]) bit for bit: every MXFP4 value of these scales fits both dtypes;
    transformers then loads the output as a plain gpt-oss model with the same logits as the
    MXFP4 checkpoint it dequantizes itself."""
    from transformers.integrations.mxfp4 import convert_moe_packed_tensors

    packed = write_gpt_oss_mxfp4(tmp_path / "mx")
    done = run(cli, "inspect", str(tmp_path / "mx"))
    assert 'read as: layout gpt-oss-mxfp4 (config.json quant_method "mxfp4"' in done.stdout, done.stdout
    assert "codes of model.layers.0.mlp.experts.gate_up_proj, experts W [4, 192, 64]" in done.stdout, done.stdout
    done = run(cli, "dequantize", str(tmp_path / "mx"), str(tmp_path / "out"), "--dtype", dtype, "--require-exact")
    assert done.returncode == 0, done.stderr
    out = tensors(tmp_path / "out")
    for name in [k for k in packed if k.endswith("_blocks")]:
        proj = name[: -len("_blocks")]
        expected = convert_moe_packed_tensors(packed[name], packed[proj + "_scales"], dtype=DTYPES[dtype])
        assert torch.equal(out[proj], expected), proj
        assert name not in out and proj + "_scales" not in out
    if dtype == "bf16":
        own = transformers.GptOssForCausalLM.from_pretrained(
            tmp_path / "mx", quantization_config=transformers.Mxfp4Config(dequantize=True), dtype=torch.bfloat16).eval()
        ours = transformers.GptOssForCausalLM.from_pretrained(tmp_path / "out", dtype=torch.bfloat16).eval()
        ids = torch.randint(0, 128, (2, 9), generator=torch.Generator().manual_seed(3))
        with torch.no_grad():
            assert torch.equal(own(ids).logits, ours(ids).logits)
    # the 2-D layouts cannot hold a stack of experts: refused, nothing written
    done = run(cli, "quantize", str(tmp_path / "mx"), str(tmp_path / "ct"), "--layout", "ct-mxfp4")
    assert done.returncode == 2 and "holds 4 experts in one 3-D tensor" in done.stderr, done.stderr
    assert not (tmp_path / "ct").exists()


@pytest.mark.parametrize("elem", ["e4m3fn", "e2m1"])
def test_gpt_oss_experts_into_trn3_mx(tmp_path, cli, elem):
    """gpt-oss's MXFP4 experts into trn3-mx, MXFP8 or MXFP4 (--elem e2m1): every value kept
    (re-encoded, 0 changed), stored [E, N, K] with scales [E, N, K / 32]; decoded, each expert is
    transformers' convert_moe_packed_tensors transposed. verify passes; the output read back as
    an input dequantizes to the same experts; --pack refuses a stack by name."""
    from transformers.integrations.mxfp4 import convert_moe_packed_tensors

    packed = write_gpt_oss_mxfp4(tmp_path / "mx")
    done = run(cli, "quantize", str(tmp_path / "mx"), str(tmp_path / "trn"), "--layout", "trn3-mx", "--elem", elem,
               "--json", "--require-exact")
    assert done.returncode == 0, done.stderr
    report = {t["name"]: t["conversion"] for t in json.loads(done.stdout)["tensors"] if "conversion" in t}
    out = tensors(tmp_path / "trn")
    stacks = [k[: -len("_blocks")] for k in packed if k.endswith("_blocks")]
    assert len(stacks) == 2
    for proj in stacks:
        blocks, scales = packed[proj + "_blocks"], packed[proj + "_scales"]
        assert report[proj + "_blocks"]["changed"] == 0 and report[proj + "_blocks"]["path"] == "re-encoded"
        experts, n, groups, _ = blocks.shape
        codes, scale = out[proj + ".weight"], out[proj + ".weight_scale"]
        assert scale.dtype == torch.uint8 and scale.shape == (experts, n, groups)
        if elem == "e2m1":
            assert codes.dtype == torch.uint8 and codes.shape == (experts, n, groups * 16)
            b = codes.view(torch.uint8)
            nib = torch.stack((b & 0xF, b >> 4), dim=-1).reshape(experts, n, -1)
            values = FP4_VALUES[nib.long()]
        else:
            assert codes.dtype == torch.float8_e4m3fn and codes.shape == (experts, n, groups * 32)
            values = codes.to(torch.float64)
        values = values * torch.exp2(scale.to(torch.float64) - 127).repeat_interleave(32, dim=-1)
        want = convert_moe_packed_tensors(blocks, scales, dtype=torch.float32).transpose(1, 2).to(torch.float64)
        assert torch.equal(values, want), proj
    done = run(cli, "verify", str(tmp_path / "trn"), "--against", str(tmp_path / "mx"))
    assert done.returncode == 0, done.stdout + done.stderr
    done = run(cli, "dequantize", str(tmp_path / "trn"), str(tmp_path / "back"), "--dtype", "f32", "--require-exact")
    assert done.returncode == 0, done.stderr
    back = tensors(tmp_path / "back")
    for proj in stacks:
        assert torch.equal(back[proj], convert_moe_packed_tensors(packed[proj + "_blocks"], packed[proj + "_scales"],
                                                                   dtype=torch.float32)), proj
    done = run(cli, "quantize", str(tmp_path / "mx"), str(tmp_path / "p"), "--layout", "trn3-mx", "--pack", "wrapX")
    assert done.returncode == 2 and "stores unpacked only (without --pack)" in done.stderr, done.stderr
    assert not (tmp_path / "p").exists()


def test_gpt_oss_scales_of_another_shape_are_refused(tmp_path, cli):
    from safetensors.torch import load_file, save_file

    write_gpt_oss_mxfp4(tmp_path / "mx")
    state = load_file(tmp_path / "mx" / "model.safetensors")
    name = "model.layers.0.mlp.experts.down_proj_scales"
    state[name] = state[name][:, :, :1].contiguous()  # one group short
    save_file(state, str(tmp_path / "mx" / "model.safetensors"), metadata={"format": "pt"})
    done = run(cli, "dequantize", str(tmp_path / "mx"), str(tmp_path / "out"))
    assert done.returncode == 2 and f'"{name}"' in done.stderr, done.stderr
    assert not (tmp_path / "out").exists()
