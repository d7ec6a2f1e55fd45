"""NVFP4 quantization against an independent reference written from the published definition.

The reference is Transformer Engine's NVFP4 reference quantizer
(transformer_engine/pytorch/custom_recipes/quantization_nvfp4.py, ``_quantize_blockwise_reference``)
restated with torch's float32 arithmetic, torch's own float8_e4m3fn cast for the block scales
and ml_dtypes' float4_e2m1fn for the elements (docs/numerics.md section 5, "NVFP4"):

    S = fp32(2688 / amax), FLT_MAX when infinite, 1 when 0
    s = e4m3fn(clamp(fp32(block_amax * fp32(S * fp32(1 / 6))), 448))
    q = e2m1(clamp(fp32(x * min(fp32(1 / fp32(s * fp32(1 / S))), FLT_MAX)), 6))

and dequantization is fp32(q * fp32(s / S)), as compressed-tensors' and vLLM's decode.

One difference is deliberate: Transformer Engine's element cast maps an exact -0.0 to the +0
code (and a negative value that rounds to zero to -0); fp8q and ml_dtypes keep the sign of
every zero. The inputs below hold no -0.0 except where a test says so.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import fp8q
from fp8q.formats import unpack_fp4

ml_dtypes = pytest.importorskip("ml_dtypes")

FLT_MAX = torch.finfo(torch.float32).max


def f32(v: float) -> torch.Tensor:
    return torch.tensor(v, dtype=torch.float32)


def reference(x: torch.Tensor, tile: tuple[int, int]) -> tuple[np.ndarray, np.ndarray, float]:
    """(e2m1 codes [R, C], e4m3fn scale codes [R / tr, C / tc], S) of a 2-D tensor."""
    xf = x.float()
    rows, cols = xf.shape
    tr, tc = tile
    amax = xf.abs().max() if xf.numel() else f32(0.0)
    s = torch.minimum(f32(2688.0) / amax, f32(FLT_MAX))
    s = f32(1.0) if s == 0 else s
    gd = f32(1.0) / s
    multiplier = s * torch.reciprocal(f32(6.0))
    blocks = xf.reshape(rows // tr, tr, cols // tc, tc).abs().amax(dim=(1, 3))
    d = torch.minimum(blocks * multiplier, f32(FLT_MAX)).clamp(-448.0, 448.0).to(torch.float8_e4m3fn)
    enc = torch.minimum(f32(1.0) / (d.float() * gd), f32(FLT_MAX))
    enc_el = enc.repeat_interleave(tr, dim=0).repeat_interleave(tc, dim=1)
    scaled = (xf * enc_el).clamp(-6.0, 6.0)
    codes = scaled.numpy().astype(ml_dtypes.float4_e2m1fn).view(np.uint8)
    return codes, d.view(torch.uint8).numpy(), float(s)


def fp8q_codes(q: fp8q.QuantizedTensor) -> np.ndarray:
    return unpack_fp4(q.codes.view(torch.uint8)).numpy()


def cases() -> list[tuple[str, torch.Tensor]]:
    g = torch.Generator().manual_seed(7)
    out = [("gaussian", torch.randn(64, 128, generator=g))]
    # each 16-block scaled by its own power of two over 80 binades, and some blocks zero
    spread = torch.randn(32, 256, generator=g) * torch.exp2(torch.randint(-40, 40, (32, 16), generator=g)
                                                             .float()).repeat_interleave(16, dim=1)
    spread[3, 16:32] = 0.0
    spread[5] = 0.0
    out.append(("spread", spread))
    out.append(("tiny", torch.randn(16, 64, generator=g) * 1e-39))  # subnormal amax: S = FLT_MAX
    out.append(("huge", torch.randn(16, 64, generator=g) * 1e38))
    out.append(("zeros", torch.zeros(16, 32)))
    # exact grid values: block amax a multiple of 6, and ties between e2m1 values
    ties = torch.tensor([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 6.0] * 2).repeat(16, 1) * torch.linspace(1, 4, 16)[:, None]
    out.append(("ties", ties.float()))
    out.append(("bf16", torch.randn(32, 64, generator=g).bfloat16()))
    out.append(("f16", (torch.randn(32, 64, generator=g) * 100).half()))
    return out


@pytest.mark.parametrize("granularity,tile", [("nvfp4", (1, 16)), ("nvfp4_16x16", (16, 16))])
@pytest.mark.parametrize("name,x", cases(), ids=[c[0] for c in cases()])
def test_quantize_equals_the_reference(granularity: str, tile: tuple[int, int], name: str, x: torch.Tensor) -> None:
    codes, scales, s = reference(x, tile)
    q = fp8q.quantize(x, "e2m1", granularity=granularity)
    assert q.global_scale.dtype == torch.float32 and q.global_scale.shape == (1,)
    assert q.global_scale.view(torch.int32).item() == f32(s).view(torch.int32).item()
    assert q.scales.dtype == torch.float8_e4m3fn
    np.testing.assert_array_equal(q.scales.view(torch.uint8).numpy(), scales)
    np.testing.assert_array_equal(fp8q_codes(q), codes)


@pytest.mark.parametrize("granularity,tile", [("nvfp4", (1, 16)), ("nvfp4_16x16", (16, 16))])
def test_dequantize_is_code_times_scale_over_global_scale(granularity: str, tile: tuple[int, int]) -> None:
    x = cases()[1][1]
    q = fp8q.quantize(x, "e2m1", granularity=granularity)
    d = q.scales.float() / q.global_scale  # fp32(scale / S), as compressed-tensors and vLLM decode
    values = torch.from_numpy(fp8q_codes(q).view(ml_dtypes.float4_e2m1fn).astype(np.float32))
    want = values * d.repeat_interleave(tile[0], dim=0).repeat_interleave(tile[1], dim=1)
    assert torch.equal(q.dequantize().view(torch.int32), want.view(torch.int32))
    bf = q.dequantize(torch.bfloat16)
    assert torch.equal(bf.view(torch.int16), want.bfloat16().view(torch.int16))


def test_a_negative_zero_keeps_its_sign() -> None:
    x = torch.tensor([[-0.0, 0.0, -1e-6, 1.0] * 4])
    codes = fp8q_codes(fp8q.quantize(x, "e2m1", granularity="nvfp4"))
    assert codes[0, :4].tolist() == [8, 0, 8, 7]  # -0, +0, -0 (rounded), the block amax 1.0 -> 6


def test_stochastic_rounding_is_seeded_and_thread_independent() -> None:
    x = torch.randn(64, 256, generator=torch.Generator().manual_seed(3))
    a = fp8q.quantize(x, "e2m1", granularity="nvfp4", rounding="sr", seed=11)
    b = fp8q.quantize(x, "e2m1", granularity="nvfp4", rounding="sr", seed=12)
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        a1 = fp8q.quantize(x, "e2m1", granularity="nvfp4", rounding="sr", seed=11)
    finally:
        torch.set_num_threads(threads)
    assert torch.equal(a.codes.view(torch.uint8), a1.codes.view(torch.uint8))
    assert not torch.equal(a.codes.view(torch.uint8), b.codes.view(torch.uint8))
    # the scales do not depend on the rounding; the mean error of SR is small
    rne = fp8q.quantize(x, "e2m1", granularity="nvfp4")
    assert torch.equal(a.scales.view(torch.uint8), rne.scales.view(torch.uint8))
    assert abs(float((a.dequantize() - x).mean())) < 0.01


def test_compile_and_strided_inputs_give_eager_bits() -> None:
    # (opcheck cannot copy float4_e2m1fn_x2 inputs, so dequantize's NVFP4 form is checked here)
    torch._dynamo.reset()

    def f(x: torch.Tensor) -> torch.Tensor:
        return fp8q.quantize(x, "e2m1", granularity="nvfp4_16x16").dequantize(torch.bfloat16)

    x = torch.randn(32, 64, generator=torch.Generator().manual_seed(4))
    want = f(x)
    assert torch.equal(torch.compile(f, fullgraph=True, backend="aot_eager")(x).view(torch.int16), want.view(torch.int16))
    assert torch.equal(f(x.t().contiguous().t()).view(torch.int16), want.view(torch.int16))
    q = fp8q.quantize(x, "e2m1", granularity="nvfp4")
    wide = torch.stack([q.codes.view(torch.uint8), torch.full_like(q.codes.view(torch.uint8), 0x55)], dim=-1)
    strided = fp8q.QuantizedTensor(wide[..., 0].view(q.codes.dtype), q.scales.t().contiguous().t(), "e2m1", "nvfp4",
                                   q.global_scale)
    assert not strided.codes.is_contiguous()
    assert torch.equal(strided.dequantize(), q.dequantize())


def test_from_codes_round_trips() -> None:
    q = fp8q.quantize(torch.randn(16, 32), "e2m1", granularity="nvfp4")
    r = fp8q.from_codes(q.codes, q.scales, "nvfp4", "e2m1", q.global_scale)
    assert torch.equal(r.dequantize(), q.dequantize())


@pytest.mark.parametrize(
    "call,error,text",
    [
        (lambda x: fp8q.quantize(x, "e4m3fn", granularity="nvfp4"), ValueError, "format: granularity nvfp4 scales e2m1 elements, not e4m3fn"),
        (lambda x: fp8q.quantize(x, "e2m1", granularity="nvfp4", margin=1), ValueError, "takes no margin, amax_epsilon or power_of_two"),
        (lambda x: fp8q.quantize(x, "e2m1", granularity="nvfp4", scale_op="divide"), ValueError, "scale_op divide applies to tensor, row, col and block"),
        (lambda x: fp8q.quantize(x, "e2m1", granularity="nvfp4_16x1"), ValueError, r"takes nvfp4 \(1 x 16\) or nvfp4_16x16"),
        (lambda x: fp8q.quantize(x[:, :15], "e2m1", granularity="nvfp4"), ValueError, "last dimension .* must be even"),
        (lambda x: torch.ops.fp8q.quantize(x, "e2m1", "nvfp4"), ValueError, "quantize_nvfp4 returns it"),
        (lambda x: fp8q.quantize(x, "e2m1", granularity="nvfp4", margin=True), TypeError, "margin must be an int"),
    ],
)
def test_bad_arguments_are_named(call, error, text) -> None:
    x = torch.randn(16, 32)
    with pytest.raises(error, match=text):
        call(x)


def test_dequantize_refuses_what_quantize_never_writes() -> None:
    q = fp8q.quantize(torch.randn(16, 32), "e2m1", granularity="nvfp4")
    deq = torch.ops.fp8q.dequantize
    with pytest.raises(ValueError, match="needs the tensor's global scale"):
        deq(q.codes, q.scales, "nvfp4", "e2m1")
    with pytest.raises(ValueError, match="only the nvfp4 granularities have a global scale"):
        deq(q.codes, torch.ones(16, 1), "row", "e2m1", torch.float32, q.global_scale)
    with pytest.raises(ValueError, match="global_scale is 0; a scale must be finite and > 0"):
        deq(q.codes, q.scales, "nvfp4", "e2m1", torch.float32, torch.zeros(1))
    negative = q.scales.view(torch.uint8).clone()
    negative[2, 1] = 0x88
    with pytest.raises(ValueError, match=r"scales\[5\] = 136 is a negative E4M3FN scale"):
        deq(q.codes, negative, "nvfp4", "e2m1", torch.float32, q.global_scale)
    with pytest.raises(TypeError, match="NVFP4 scales are float8_e4m3fn"):
        deq(q.codes, q.scales.float(), "nvfp4", "e2m1", torch.float32, q.global_scale)
