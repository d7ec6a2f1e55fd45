"""fp8q.convert, amax, scale_from_amax and cast_transpose: properties the bits must have.

Bit equality against independent implementations is in test_oracle_ml_dtypes.py and
test_torch_casts.py, against the C++ tool in test_cli_agreement.py; here: invariance under
threads and the caller's FP environment, stochastic rounding's keying, scales, packing, and
the fused cast + transpose against its three separate parts.
"""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
import torch

import fp8q
from vectors import bits, fp32_vectors

NARROW = ["e4m3fn", "e4m3", "e5m2", "e4m3fnuz", "e5m2fnuz", "e3m4", "e8m0", "e2m3", "e3m2", "e2m1"]


@pytest.fixture
def big() -> torch.Tensor:
    g = torch.Generator().manual_seed(5)
    return (torch.randn(1 << 18, generator=g) * 40).to(torch.bfloat16)


@pytest.mark.parametrize("rounding", ["rne", "rtz", "sr"])
def test_same_bits_for_any_thread_count(big, rounding):
    # 2^18 elements: the library splits them across threads (16384 per thread at least)
    old = torch.get_num_threads()
    try:
        out = []
        for t in (1, 2, 4):
            torch.set_num_threads(t)
            out.append(bits(fp8q.convert(big, "e4m3fn", rounding=rounding, seed=3)))
    finally:
        torch.set_num_threads(old)
    assert np.array_equal(out[0], out[1]) and np.array_equal(out[0], out[2])


def test_every_op_gives_the_same_bits_for_any_thread_count():
    g = torch.Generator().manual_seed(8)
    x = torch.randn(512, 640, generator=g) * torch.logspace(-4, 4, 640)
    w = torch.randn(256, 640, generator=g)

    def run() -> list[np.ndarray]:
        qa = fp8q.quantize(x, "e4m3fn", granularity="mx", mx_rule="rceil", rounding="sr", seed=5)
        qw = fp8q.quantize(w, "e4m3fn", granularity="mx")
        qb = fp8q.quantize(x.bfloat16(), "e5m2", granularity="block1x128", scale_op="divide")
        h = fp8q.calib.Histogram().observe(x)
        q, qt, a = fp8q.cast_transpose(x, "e4m3fn", scale=0.5)
        return [bits(t) for t in (qa.codes, qa.scales, qb.codes, qb.scales, h.state, q, qt, a.reshape(1),
                                  fp8q.linear(qa, qw, profile="ocp"), fp8q.linear(qa, qw, profile="fp32"),
                                  fp8q.amax(x, "block128x128"), qa.dequantize(torch.bfloat16))]

    old = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = run()
        torch.set_num_threads(2)
        two = run()
    finally:
        torch.set_num_threads(old)
    for i, (a, b) in enumerate(zip(one, two)):
        assert np.array_equal(a, b), i


def test_same_bits_under_any_caller_fp_environment():
    x = fp32_vectors()
    want = {f: bits(fp8q.convert(x, f, nan="zero", scale=0.75)) for f in NARROW}
    want_q = fp8q.quantize(x[:4096].reshape(64, 64), "e4m3fn", granularity="row")
    libm = ctypes.CDLL("libm.so.6")
    fe_towardzero = 0xC00  # x86-64 <fenv.h>
    flush = torch.set_flush_denormal(True)  # FTZ and DAZ on this thread
    assert flush, "this CPU cannot flush denormals: the test would not test anything"
    assert libm.fesetround(fe_towardzero) == 0
    try:
        for f in NARROW:
            assert np.array_equal(bits(fp8q.convert(x, f, nan="zero", scale=0.75)), want[f]), f
        q = fp8q.quantize(x[:4096].reshape(64, 64), "e4m3fn", granularity="row")
        assert torch.equal(q.codes.view(torch.uint8), want_q.codes.view(torch.uint8))
        assert torch.equal(q.scales, want_q.scales)
    finally:
        libm.fesetround(0)
        torch.set_flush_denormal(False)


def test_stochastic_rounding_depends_on_seed_offset_and_index_only():
    x = torch.full((3000,), 1.1)
    a = bits(fp8q.convert(x, "e5m2", rounding="sr", seed=7, offset=100))
    # element i of a call with offset 100 is element i + 100 of a call with offset 0
    b = bits(fp8q.convert(torch.full((3100,), 1.1), "e5m2", rounding="sr", seed=7))
    assert np.array_equal(a, b[100:])
    assert not np.array_equal(a, bits(fp8q.convert(x, "e5m2", rounding="sr", seed=8, offset=100)))
    # both neighbours occur, in proportion to the distance: 1.1 = 1 + 0.4 ulp of e5m2 (ulp 0.25)
    up = float((a == 0x3D).mean())
    assert set(np.unique(a)) == {0x3C, 0x3D} and 0.35 < up < 0.45
    # 64-bit seeds and offsets travel as their bits
    top = fp8q.convert(x, "e5m2", rounding="sr", seed=(1 << 64) - 1, offset=(1 << 63) + 5)
    assert top.shape == x.shape


def test_scale_multiply_and_divide():
    x = torch.tensor([1.0, 3.0, -100.0])
    assert fp8q.convert(x, "e4m3fn", scale=2.0).float().tolist() == [2.0, 6.0, -192.0]
    assert fp8q.convert(x, "e4m3fn", scale=torch.tensor([4.0]), scale_op="divide").float().tolist() == [
        0.25, 0.75, -24.0]


@pytest.mark.parametrize("to", ["e4m3fn", "e4m3", "e2m1", "bf16"])
def test_out_is_written_and_returned(to):
    x = fp32_vectors()[:4096]
    want = fp8q.convert(x, to, nan="zero")
    out = torch.empty_like(want)
    assert fp8q.convert(x, to, nan="zero", out=out) is out
    assert np.array_equal(bits(out), bits(want))


def test_e2m1_packs_two_codes_a_byte():
    x = torch.tensor([[0.5, -1.0, 6.0, 100.0]])
    q = fp8q.convert(x, "e2m1")
    assert q.dtype == torch.float4_e2m1fn_x2 and q.shape == (1, 2)
    # e2m1 codes: 0.5 = 0x1, -1.0 = 0xA, 6.0 = 0x7, 100 saturates to 6.0 = 0x7; element 2i low
    assert q.view(torch.uint8).flatten().tolist() == [0xA1, 0x77]
    back = fp8q.convert(q, torch.float32)
    assert back.tolist() == [[0.5, -1.0, 6.0, 6.0]]
    assert torch.equal(fp8q.formats.unpack_fp4(q), torch.tensor([[1, 10, 7, 7]], dtype=torch.uint8))
    assert torch.equal(fp8q.formats.pack_fp4(fp8q.formats.unpack_fp4(q)).view(torch.uint8), q.view(torch.uint8))


def test_uint8_codes_of_a_format_torch_has():
    codes = torch.arange(256, dtype=torch.uint8)
    a = fp8q.convert(codes, torch.float32, from_format="e4m3fn", overflow="inf-nan")
    b = fp8q.convert(codes.view(torch.float8_e4m3fn), torch.float32, overflow="inf-nan")
    assert np.array_equal(bits(a), bits(b))


def test_amax_per_granularity_and_nan():
    x = torch.tensor([[1.0, -5.0, 2.0], [0.25, 3.0, -0.5]])
    assert fp8q.amax(x).tolist() == [[5.0]]
    assert fp8q.amax(x, "row").flatten().tolist() == [5.0, 3.0]
    assert fp8q.amax(x, "col").flatten().tolist() == [1.0, 5.0, 2.0]
    assert fp8q.amax(x.to(torch.bfloat16), "block1x2").tolist() == [[5.0, 2.0], [3.0, 0.5]]
    x[1, 1] = float("nan")
    assert torch.isnan(fp8q.amax(x)).item()
    assert fp8q.amax(torch.empty(0, 3)).tolist() == [[0.0]]


def test_scale_from_amax_rules():
    a = torch.tensor([448.0, 0.0, float("inf"), float("nan"), 3.5, 1000.0])
    assert fp8q.scale_from_amax(a, "e4m3fn").tolist()[:5] == [1.0, 1.0, 1.0, 1.0, 128.0]
    assert fp8q.scale_from_amax(a, "e4m3fn", power_of_two=True).tolist()[5] == 0.25  # 0.448 -> 2^-2
    assert fp8q.scale_from_amax(torch.tensor([896.0]), "e4m3fn", scale_op="divide").tolist() == [2.0]
    assert fp8q.scale_from_amax(torch.tensor([448.0]), "e4m3fn", margin=1).tolist() == [0.5]


@pytest.mark.parametrize("to", ["e4m3fn", "e5m2", "e4m3", "e2m1"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_cast_transpose_is_convert_transpose_amax(to, dtype):
    g = torch.Generator().manual_seed(1)
    x = (torch.randn(96, 130, generator=g) * 30).to(dtype)
    q, qt, a = fp8q.cast_transpose(x, to, scale=1.5, rounding="sr", seed=9)
    want = fp8q.convert(x, to, scale=1.5, rounding="sr", seed=9)
    assert np.array_equal(bits(q), bits(want))
    unpacked = fp8q.formats.unpack_fp4 if to == "e2m1" else (lambda t: t.view(torch.uint8))
    assert torch.equal(unpacked(qt), unpacked(want).t().contiguous())
    assert a.item() == x.abs().max().float().item()
