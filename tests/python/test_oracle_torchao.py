"""fp8q's MX quantization against torchao's MX reference (``torchao.prototype.mx_formats.mx_tensor.to_mx``).

torchao (0.18 here) implements the OCP MX block scaling independently: one E8M0 scale per 32
elements along the last axis from the block's amax by a scale rule, the elements divided by it
and cast with saturation. Its rules map onto fp8q's ``mx_rule`` one for one (FLOOR floor, CEIL
ceil, EVEN even, RCEIL rceil); every element format it has is compared (e2m1 packed two a byte,
e2m3 and e3m2 one a byte, e4m3fn, e5m2), from float32 and bfloat16.

Where torchao computes something else, the blocks are left out and the difference is stated
(docs/tensors.md, "MX blocks"):

* a block whose scale code is 0 (2^-127: every |x| below about 2^-119): torchao divides the
  elements by 2^-126 (``clamp(scale, min=F32_MIN_NORMAL)``) while storing 2^-127, so its codes
  dequantize to half the input; fp8q divides by the 2^-127 it stores;
* a block holding Inf or NaN: fp8q gives the NaN scale 0xFF (OCP MX: the block is NaN) and the
  elements by the NaN policy; torchao's scale and codes for such blocks follow from its float
  arithmetic on Inf and differ.
"""

from __future__ import annotations

import pytest
import torch

import fp8q
from fp8q.formats import unpack_fp4

mx_tensor = pytest.importorskip("torchao.prototype.mx_formats.mx_tensor")
from torchao.prototype.mx_formats.config import ScaleCalculationMode  # noqa: E402

RULES = {"floor": ScaleCalculationMode.FLOOR, "ceil": ScaleCalculationMode.CEIL, "even": ScaleCalculationMode.EVEN,
         "rceil": ScaleCalculationMode.RCEIL}
ELEMENTS = {"e2m1": torch.float4_e2m1fn_x2, "e2m3": "fp6_e2m3", "e3m2": "fp6_e3m2", "e4m3fn": torch.float8_e4m3fn,
            "e5m2": torch.float8_e5m2}


def inputs() -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(5)
    binades = torch.randint(-100, 100, (64, 8), generator=g).float()
    return {
        "gaussian": torch.randn(64, 256, generator=g),
        # each block scaled by its own power of two over 200 binades; some blocks zero
        "spread": torch.randn(64, 256, generator=g) * torch.exp2(binades).repeat_interleave(32, dim=1),
        "subnormal": torch.randn(16, 64, generator=g) * 1e-36,
        "large": torch.randn(16, 64, generator=g) * 5e37,
        # the e2m1 and e4m3fn grids' ties and boundaries, times a few block maxima
        "ties": torch.tensor([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 6.0, 7.0, 448.0, 464.0, 57344.0] * 3)[:32]
        .repeat(8, 2) * torch.linspace(0.5, 3.0, 8)[:, None],
    }


def codes_of(t: torch.Tensor, element: str) -> torch.Tensor:
    return unpack_fp4(t.view(torch.uint8)) if element == "e2m1" else t.view(torch.uint8)


@pytest.mark.parametrize("source", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("rule", list(RULES))
@pytest.mark.parametrize("element", list(ELEMENTS))
def test_mx_quantize_equals_torchao(element: str, rule: str, source: torch.dtype) -> None:
    compared = 0
    for name, x in inputs().items():
        x = x.to(source)
        x[0, :32] = 0.0  # one block of zeros in every case
        scale, data = mx_tensor.to_mx(x, ELEMENTS[element], 32, RULES[rule])
        q = fp8q.quantize(x, element, granularity="mx", mx_rule=rule)
        ours = q.scales.view(torch.uint8)
        assert torch.equal(ours, scale.view(torch.uint8).reshape(ours.shape)), name
        kept = (ours != 0).repeat_interleave(32, dim=1)  # torchao divides scale-0 blocks by 2^-126
        got, want = codes_of(q.codes, element), codes_of(data, element)
        assert torch.equal(got[kept], want[kept]), name
        compared += int(kept.sum())
    assert compared > 30000
