"""The loader tests' models and helpers: the small transformers models they quantize, the
tensors of a model directory, a weight as fp8q dequantizes it, and a weight as the loader that
opened the checkpoint computes it."""

from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors import safe_open

import fp8q

# layout -> (scale tensor suffix, QuantizedTensor granularity, element format); ct-fp8's and
# trn2's follow their strategy
_SCALES = {"hf-fp8": ("_scale_inv", "block128x128", None), "ct-fp8 tensor": ("_scale", "tensor", None),
           "ct-fp8 channel": ("_scale", "row", None), "ct-fp8 block": ("_scale", "block128x128", None),
           "ct-mxfp8": ("_scale", "mx", None), "trn3-mx": ("_scale", "mx", None),
           "trn3-mxfp4": ("_scale", "mx", "e2m1"),
           "trn2 tensor": ("_scale", "tensor", "e4m3"), "trn2 channel": ("_scale", "row", "e4m3"),
           "trn2 block": ("_scale", "block128x128", "e4m3")}


def is_quantized(t: torch.Tensor, name: str = ".weight") -> bool:
    """Whether a stored tensor is a quantized weight's codes: F8_E4M3 ``.weight`` (every FP8 layout)
    or the packed e2m1 ``.weight_packed`` of ct-mxfp4 and ct-nvfp4."""
    return (t.dtype == torch.float8_e4m3fn and name.endswith(".weight")) or name.endswith(".weight_packed")


VOCAB = 384
MODELS = {
    # name: (architecture, config overrides, save_pretrained max_shard_size)
    "llama": ("llama", dict(hidden_size=256, intermediate_size=512, num_key_value_heads=2,
                            tie_word_embeddings=False), None),
    "llama-tied-sharded": ("llama", dict(hidden_size=256, intermediate_size=512, num_key_value_heads=2,
                                         tie_word_embeddings=True), "300KB"),
    # k/v_proj [64, 256], gate/up_proj [344, 256], down_proj [256, 344]
    "qwen2-odd-dims": ("qwen2", dict(hidden_size=256, intermediate_size=344, num_key_value_heads=1,
                                     tie_word_embeddings=False), None),
}
# compressed-tensors decompresses MX weights to bf16 whatever the model's dtype
DTYPE = torch.bfloat16


def build(kind: str, overrides: dict, path: Path, shard: str | None) -> None:
    """A model transformers builds from a config with seeded random weights, saved in bf16."""
    import transformers

    torch.manual_seed(0)
    common = dict(vocab_size=VOCAB, num_hidden_layers=2, num_attention_heads=4, max_position_embeddings=128)
    if kind == "llama":
        model = transformers.LlamaForCausalLM(transformers.LlamaConfig(**common, **overrides))
    else:
        model = transformers.Qwen2ForCausalLM(transformers.Qwen2Config(**common, **overrides))
    # the initialisation's std 0.02 gives near-uniform logits; widen it so top-1 means something
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() == 2:
                p.mul_(3)
    model.to(DTYPE).save_pretrained(path, **({"max_shard_size": shard} if shard else {}))


def tensors(directory: Path) -> dict[str, torch.Tensor]:
    out = {}
    for f in sorted(directory.glob("*.safetensors")):
        with safe_open(str(f), "pt") as s:
            for k in s.keys():
                out[k] = s.get_tensor(k)
    return out


def fp8q_dequantized(q: dict[str, torch.Tensor], name: str, layout: str, dtype: torch.dtype) -> torch.Tensor:
    """The weight as fp8q dequantizes it: fp32(decode(q) * scale), rounded to dtype."""
    if name.endswith(".weight_packed"):  # ct-nvfp4 (with a global scale), ct-mxfp4 (E8M0 scales)
        module = name[: -len(".weight_packed")]
        codes = q[name].view(torch.float4_e2m1fn_x2)
        if module + ".weight_global_scale" not in q:
            return fp8q.from_codes(codes, q[module + ".weight_scale"].view(torch.float8_e8m0fnu), "mx",
                                   "e2m1").dequantize(dtype)
        return fp8q.from_codes(codes, q[module + ".weight_scale"], "nvfp4", "e2m1",
                               q[module + ".weight_global_scale"]).dequantize(dtype)
    suffix, gran, fmt = _SCALES[layout]
    scale = q[name + suffix]
    if gran == "mx":
        scale = scale.view(torch.float8_e8m0fnu)
    else:
        scale = scale.float().reshape(1, 1) if gran == "tensor" else scale.float()
    # trn2: Trainium2's e4m3 codes; trn3-mx MXFP4: e2m1 codes two a byte
    codes = q[name] if fmt is None else q[name].view(torch.float4_e2m1fn_x2 if fmt == "e2m1" else torch.uint8)
    return fp8q.from_codes(codes, scale.contiguous(), gran, fmt).dequantize(dtype)


def loaders_weight(model: torch.nn.Module, name: str, dtype: torch.dtype) -> torch.Tensor:
    """A weight as the loader computes it: transformers' FineGrainedFP8 CPU path has already
    dequantized it; compressed-tensors keeps the codes and dequantizes in forward, by its own
    dequantize() with the module's quantization args (its mxfp8 compressor for E8M0 scales)."""
    module = model.get_submodule(name.rsplit(".", 1)[0])
    if name.endswith(".weight_packed"):  # FP4: the pack-quantized compressors unpack and dequantize
        from compressed_tensors.compressors.mxfp4.base import MXFP4PackedCompressor
        from compressed_tensors.compressors.nvfp4.base import NVFP4PackedCompressor

        nvfp4 = hasattr(module, "weight_global_scale")
        keys = ("weight_packed", "weight_scale") + (("weight_global_scale",) if nvfp4 else ())
        compressor = NVFP4PackedCompressor if nvfp4 else MXFP4PackedCompressor
        return compressor.decompress({k: getattr(module, k) for k in keys}, module.quantization_scheme)["weight"].to(dtype)
    w = module.weight
    if w.dtype != torch.float8_e4m3fn:
        return w.detach().to(dtype)
    scheme = module.quantization_scheme
    if module.weight_scale.dtype == torch.uint8:  # E8M0 codes: the mxfp8 compressor decodes them first
        from compressed_tensors.compressors.mxfp8.base import MXFP8QuantizationCompressor

        state = {"weight": w, "weight_scale": module.weight_scale}
        return MXFP8QuantizationCompressor.decompress(state, scheme)["weight"].to(dtype)
    from compressed_tensors.quantization.lifecycle.forward import dequantize

    zero_point = getattr(module, "weight_zero_point", None)
    return dequantize(w, module.weight_scale, zero_point, scheme.weights).to(dtype)


def check_weights(model: torch.nn.Module, q: dict[str, torch.Tensor], layout: str, dtype: torch.dtype) -> int:
    """Every quantized weight as the loader reads it equals fp8q's dequantization, bit for bit."""
    checked = 0
    for name, t in q.items():
        if is_quantized(t, name):
            ours = fp8q_dequantized(q, name, layout, dtype)
            theirs = loaders_weight(model, name, dtype)
            bad = (ours.view(torch.int16 if dtype != torch.float32 else torch.int32)
                   != theirs.view(torch.int16 if dtype != torch.float32 else torch.int32)).sum().item()
            assert bad == 0, f"{name}: {bad} of {ours.numel()} elements differ"
            checked += 1
    return checked


def modelopt_export(directory: Path, dtype: torch.dtype, replace: dict[str, torch.Tensor], layers: int = 1,
                        kv_cache: bool = False, algorithm: str = "FP8"):
    """ModelOpt's own flow on a small Llama of `layers` layers in `dtype` whose named weights are
    replaced: mtq.quantize with the config of the quant_algo `algorithm` writes (FP8_DEFAULT_CFG,
    FP8_PER_CHANNEL_PER_TOKEN_CFG, FP8_2D_BLOCKWISE_WEIGHT_ONLY_CFG, NVFP4_DEFAULT_CFG; with
    FP8_KV_CFG's KV-cache quantizers if `kv_cache`) and a calibration forward pass, then
    export_hf_checkpoint.
    Returns the weights before quantization and the exported tensors."""
    import modelopt.torch.quantization as mtq
    from modelopt.torch.export import export_hf_checkpoint
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(vocab_size=128, hidden_size=384, intermediate_size=256, num_hidden_layers=layers,
                         num_attention_heads=4, num_key_value_heads=2, architectures=["LlamaForCausalLM"])
    torch.manual_seed(0)
    model = LlamaForCausalLM(config).to(dtype)
    originals = {}
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name in replace:
                p.copy_(replace[name])
            originals[name] = p.detach().clone()
    ids = torch.randint(0, 128, (1, 8), generator=torch.Generator().manual_seed(1))
    config = dict({"FP8": mtq.FP8_DEFAULT_CFG, "FP8_PER_CHANNEL_PER_TOKEN": mtq.FP8_PER_CHANNEL_PER_TOKEN_CFG,
                   "fp8_pb_wo": mtq.FP8_2D_BLOCKWISE_WEIGHT_ONLY_CFG, "NVFP4": mtq.NVFP4_DEFAULT_CFG}[algorithm])
    if kv_cache:
        config["quant_cfg"] = list(config["quant_cfg"]) + list(mtq.FP8_KV_CFG["quant_cfg"])
    model = mtq.quantize(model, config, lambda m: m(ids))
    export_hf_checkpoint(model, dtype=dtype, export_dir=str(directory))
    assert json.loads((directory / "hf_quant_config.json").read_text())["quantization"]["quant_algo"] == algorithm
    return originals, tensors(directory)
