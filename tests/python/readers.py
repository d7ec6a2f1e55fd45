"""Reference readers for the two layouts whose loaders cannot be installed here, written from
their consumers' definitions rather than from fp8q's code:

- trn2, as NxD Inference loads a pre-quantized checkpoint (neuronx-distributed-inference,
  application_base.py `get_state_dict`: `<module>.weight_scale` is renamed `<module>.scale`) into
  NxD's quantized layers (neuronx-distributed, quantization/quantization_layers.py: per-tensor
  scale [1], per-channel scale [out, 1] on axis 0 applied to the matmul's output, blockwise
  `floor(dim / block)` scales with `weight.to(float32) * scale` per block; dequantize.py).
- trn3-mx, fp8q's own layout, from its definition in docs/checkpoints.md: E8M0 scales of 32
  codes along the input axis, or the nc_matmul_mx operand image ([128, T, out, 4] codes,
  [128, T, out] scales) for --pack wrapX / 1x32; MXFP4 (--elem e2m1) with the codes two a byte
  (ml_dtypes decodes them).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch


def quantization_config(directory: Path) -> dict:
    return json.loads((directory / "config.json").read_text())["quantization_config"]


class NxdQuantizedLinear(torch.nn.Module):
    """NxD's forward of a quantized linear layer: per tensor / channel the codes are cast to the
    input's dtype, multiplied, and the output scaled (`scale_dequantize(output, scale.T)`);
    blockwise, the weight is dequantized in fp32 first."""

    def __init__(self, codes: torch.Tensor, scale: torch.Tensor, blockwise: bool, bias: torch.Tensor | None):
        super().__init__()
        self.codes, self.scale, self.blockwise, self.bias = codes, scale, blockwise, bias

    def dequantized(self) -> torch.Tensor:
        """The fp32 weight NxD's blockwise path forms (the per-channel path forms none)."""
        w = self.codes.to(torch.float32)
        rows, cols = w.shape
        if self.blockwise:
            sr, sc = self.scale.shape
            assert rows % sr == 0 and cols % sc == 0, "Tensor dimensions must be divisible by scale dimensions"
            return (w.reshape(sr, rows // sr, sc, cols // sc) * self.scale.reshape(sr, 1, sc, 1)).reshape(rows, cols)
        return w * self.scale.reshape(-1, 1) if self.scale.numel() > 1 else w * self.scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.blockwise:
            y = x @ self.dequantized().to(x.dtype).T
        else:
            y = (x @ self.codes.to(x.dtype).T) * self.scale.reshape(1, -1).to(x.dtype)
        return y if self.bias is None else y + self.bias


def nxd_trn2(state: dict[str, torch.Tensor], config: dict) -> dict[str, NxdQuantizedLinear]:
    """The quantized layers NxD builds from a trn2 checkpoint: module -> layer."""
    blockwise = config["weight_strategy"] == "block"
    renamed = {k.replace(".weight_scale", ".scale"): v for k, v in state.items()}  # NxD Inference's rename
    layers = {}
    for name, t in renamed.items():
        if name.endswith(".scale"):
            module = name[: -len(".scale")]
            codes = renamed[module + ".weight"]
            assert codes.dtype == torch.float8_e4m3fn and t.dtype == torch.float32
            # NxD reads the codes as float8_e4m3fn: for |value| <= 240 its bits are Trainium2's e4m3's
            scale = t if blockwise else t.reshape(-1)
            layers[module] = NxdQuantizedLinear(codes, scale, blockwise, renamed.get(module + ".bias"))
    return layers


def _scale_partition(g: int) -> int:
    return (g // 4) * 32 + g % 4  # 4 groups per 32-partition quadrant, in its first 4 partitions


def _nibbles(b: torch.Tensor) -> torch.Tensor:
    """uint8 bytes -> their two 4-bit codes, low nibble first, along a new last axis."""
    return torch.stack((b & 0xF, b >> 4), dim=-1)


def _e2m1_values(codes: torch.Tensor) -> torch.Tensor:
    """e2m1 codes (uint8, one a byte) -> float32 values, decoded by ml_dtypes' float4_e2m1fn."""
    import ml_dtypes

    return torch.from_numpy(codes.numpy().astype(np.uint8).view(ml_dtypes.float4_e2m1fn).astype(np.float32))


def trn3_mx_weights(state: dict[str, torch.Tensor], config: dict) -> dict[str, torch.Tensor]:
    """Every trn3-mx weight dequantized in fp32 (module -> W [out, in]): value * 2^(e - 127).
    MXFP8 codes are float8_e4m3fn; MXFP4 (``fmt`` e2m1) codes are packed two a byte, element 2i
    in the low nibble (unpacked) or code c in nibble c of the 16-bit x4 container (packed)."""
    packing, fp4 = config["packing"], config["fmt"] == "e2m1"
    out = {}
    for name, s in state.items():
        if not name.endswith(".weight_scale"):
            continue
        module = name[: -len(".weight_scale")]
        q = state[module + ".weight"]
        if packing == "none":
            if fp4:
                codes = _nibbles(q).flatten(-2)  # [out, in]
                values = _e2m1_values(codes)
            else:
                values = q.to(torch.float32)
            rows, cols = values.shape
            e = s.to(torch.int32)[:, torch.arange(cols) // 32]
        else:
            _, tiles, rows, _ = q.shape
            cols = config["in_features"][module]
            k = torch.arange(cols)
            t, r = k // 512, k % 512
            p, slot = (r % 128, r // 128) if packing == "wrapX" else (r // 4, r % 4)
            image = _nibbles(q).flatten(-2) if fp4 else q.view(torch.uint8)  # [128, T, out, 4] codes
            codes = image[p, t, :, slot].T.contiguous()  # [out, in]
            values = _e2m1_values(codes) if fp4 else codes.view(torch.float8_e4m3fn).to(torch.float32)
            sp = torch.tensor([_scale_partition(int(g)) for g in (p // 8)])
            e = s[sp, t, :].to(torch.int32).T  # [out, in]
        assert (e != 255).all(), f"{module}: a NaN scale"
        # E8M0: 2^(e - 127); code 0 is 2^-127 (a subnormal fp32, exact)
        scale = torch.ldexp(torch.ones(e.shape, dtype=torch.float32), (e - 127).to(torch.float32))
        out[module] = values * scale
    return out
