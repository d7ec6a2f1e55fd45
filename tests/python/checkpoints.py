"""Reading fp8q's checkpoints back, for the loader tests: the tensors of a model directory, a
weight as fp8q dequantizes it, and a weight as the loader that opened the checkpoint computes it."""

from __future__ import annotations

from pathlib import Path

import torch
from safetensors import safe_open

import fp8q

# layout -> (scale tensor suffix, QuantizedTensor granularity); ct-fp8's follow its strategy
_SCALES = {"hf-fp8": ("_scale_inv", "block128x128"), "ct-fp8 tensor": ("_scale", "tensor"),
           "ct-fp8 channel": ("_scale", "row"), "ct-fp8 block": ("_scale", "block128x128"),
           "ct-mxfp8": ("_scale", "mx")}


def tensors(directory: Path) -> dict[str, torch.Tensor]:
    out = {}
    for f in sorted(directory.glob("*.safetensors")):
        with safe_open(str(f), "pt") as s:
            for k in s.keys():
                out[k] = s.get_tensor(k)
    return out


def fp8q_dequantized(q: dict[str, torch.Tensor], name: str, layout: str, dtype: torch.dtype) -> torch.Tensor:
    """The weight as fp8q dequantizes it: fp32(decode(q) * scale), rounded to dtype."""
    suffix, gran = _SCALES[layout]
    scale = q[name + suffix]
    if gran == "mx":
        scale = scale.view(torch.float8_e8m0fnu)
    else:
        scale = scale.float().reshape(1, 1) if gran == "tensor" else scale.float()
    return fp8q.from_codes(q[name], scale.contiguous(), gran).dequantize(dtype)


def loaders_weight(model: torch.nn.Module, name: str, dtype: torch.dtype) -> torch.Tensor:
    """A weight as the loader computes it: transformers' FineGrainedFP8 CPU path has already
    dequantized it; compressed-tensors keeps the codes and dequantizes in forward, by its own
    dequantize() with the module's quantization args (its mxfp8 compressor for E8M0 scales)."""
    module = model.get_submodule(name.rsplit(".", 1)[0])
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
        if t.dtype == torch.float8_e4m3fn:
            ours = fp8q_dequantized(q, name, layout, dtype)
            theirs = loaders_weight(model, name, dtype)
            bad = (ours.view(torch.int16 if dtype != torch.float32 else torch.int32)
                   != theirs.view(torch.int16 if dtype != torch.float32 else torch.int32)).sum().item()
            assert bad == 0, f"{name}: {bad} of {ours.numel()} elements differ"
            checked += 1
    return checked
