"""fp8q.trn: the instructions against the GEMM models they implement, and the layouts'
round trips (the instructions' own bit-level tests are the C++ suites in tests/kernels)."""

from __future__ import annotations

import pytest
import torch

import fp8q


def codes(shape, seed, fmt=torch.float8_e4m3fn, spread=3.0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(*shape, generator=g) * torch.logspace(-spread, spread, shape[-1])).to(fmt)


def u8(t: torch.Tensor) -> torch.Tensor:
    return t.reshape(-1).view(torch.uint8)


@pytest.mark.parametrize("fmt", [torch.float8_e4m3fn, torch.float8_e5m2])
def test_nc_matmul_is_systolic_128_and_accumulates(fmt):
    k, m, n = 256, 20, 70
    st, mv = codes((k, m), 1, fmt), codes((k, n), 2, fmt)
    p = fp8q.trn.nc_matmul(st[:128], mv[:128])
    p = fp8q.trn.nc_matmul(st[128:], mv[128:], psum=p)
    want = fp8q.matmul(st.t().contiguous(), mv, profile="trn3", model="systolic:128")
    assert torch.equal(u8(p), u8(want))


def test_nc_matmul_double_row_is_systolic_256():
    k, m, n = 256, 8, 16
    st, mv = codes((k, m), 3), codes((k, n), 4)
    # partition p holds the pair K = 2p, 2p + 1
    pairs = lambda t: t.reshape(128, 2, -1).permute(0, 2, 1).contiguous()
    p = fp8q.trn.nc_matmul(pairs(st), pairs(mv), perf_mode="double_row")
    want = fp8q.matmul(st.t().contiguous(), mv, profile="trn3", model="systolic:256")
    assert torch.equal(u8(p), u8(want))


@pytest.mark.parametrize("layout", ["wrapX", "1x32"])
def test_code_and_scale_layouts_round_trip(layout):
    k, n = 700, 9
    c = codes((k, n), 5)
    onchip = fp8q.trn.pack_codes(c, layout)
    assert onchip.shape == (128, 2, n, 4) and onchip.dtype == c.dtype
    assert torch.equal(u8(fp8q.trn.unpack_codes(onchip, layout, k)), u8(c))
    groups = {"1x32": 22, "wrapX": 16 + 16}[layout]  # 700 = 512 + 188: wrapX's last tile has min(16, 24) groups
    s = torch.randint(100, 140, (groups, n), dtype=torch.uint8).view(torch.float8_e8m0fnu)
    placed = fp8q.trn.pack_scales(s, layout, k)
    assert placed.shape == (128, 2, n)
    assert torch.equal(u8(fp8q.trn.unpack_scales(placed, layout, k)), u8(s))
    x4 = fp8q.trn.pack_x4(c.view(torch.uint8)[:, :8].contiguous(), "float8_e4m3fn_x4")
    assert x4.shape == (k, 2, 4) and torch.equal(fp8q.trn.unpack_x4(x4, "float8_e4m3fn_x4").view(torch.uint8),
                                                 c.view(torch.uint8)[:, :8])


def test_nc_matmul_mx_is_trainium3_mx_1x32():
    m, n, k = 16, 24, 512
    g = torch.Generator().manual_seed(6)
    qa = fp8q.quantize(torch.randn(m, k, generator=g) * 10, "e4m3fn", granularity="mx", mx_rule="trainium3")
    qb = fp8q.quantize(torch.randn(n, k, generator=g), "e4m3fn", granularity="mx", mx_rule="trainium3")

    def tile(q):  # [rows, K] quantized along K -> the x4 image [128, rows, 4] and scale tile [128, rows]
        image = fp8q.trn.pack_codes(q.codes.t().contiguous(), "1x32")[:, 0].contiguous().view(torch.uint8)
        scales = fp8q.trn.pack_scales(q.scales.t().contiguous(), "1x32", k)[:, 0].contiguous()
        return image, scales

    (sa, ss), (sb, sbs) = tile(qa), tile(qb)
    p = fp8q.trn.nc_matmul_mx(sa, ss, sb, sbs)
    want = fp8q.linear(qa, qb, profile="trn3", model="trainium3_mx:1x32")
    assert torch.equal(u8(p), u8(want))
    # the assumption A1 is a parameter: rounding each partition's sum is a different model
    rounded = fp8q.trn.nc_matmul_mx(sa, ss, sb, sbs, exact_partition_sum=False)
    want_rounded = fp8q.linear(qa, qb, profile="trn3", model="trainium3_mx:1x32:rounded_partition_sum")
    assert torch.equal(u8(rounded), u8(want_rounded))
