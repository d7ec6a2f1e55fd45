"""Bad input: each mistake gets a TypeError or ValueError naming the argument, and no op
writes to its inputs (checked for every op on valid and invalid calls alike)."""

from __future__ import annotations

import re

import pytest
import torch

import fp8q

X = torch.randn(8, 64)


def raises(kind: type, pattern: str):
    return pytest.raises(kind, match=re.compile(pattern, re.S))


@pytest.mark.parametrize(
    "call, kind, pattern",
    [
        (lambda: fp8q.convert(X, "e9m9"), ValueError, r"unknown format 'e9m9'"),
        (lambda: torch.ops.fp8q.quantize_scaled(X, "e4m3fn", torch.tensor([0.0])), ValueError,
         r"scale is 0.*finite and > 0"),
        (lambda: torch.ops.fp8q.quantize_scaled(X, "e8m0", torch.tensor([1.0])), ValueError,
         r"format: e8m0 is not an 8-bit element format"),
        (lambda: torch.ops.fp8q.delayed_update(torch.zeros(2, 2), torch.ones(1), torch.tensor(1.0), "e4m3fn"),
         ValueError, r"history"),
        (lambda: torch.ops.fp8q.delayed_update(torch.zeros(4), torch.ones(1), torch.tensor(1.0), "e4m3fn", "mean"),
         ValueError, r"algorithm: unknown 'mean'"),
        (lambda: torch.ops.fp8q.delayed_update(torch.zeros(4), torch.tensor([0.0]), torch.tensor(1.0), "e4m3fn"),
         ValueError, r"scale must be in \[2\^-127, FLT_MAX\]"),
        (lambda: torch.ops.fp8q.delayed_update(torch.zeros(4), torch.ones(1), torch.tensor(1.0), "e4m3fn", "max", 999),
         ValueError, r"margin: must be in"),
        (lambda: torch.ops.fp8q.convert(X, "e9m9"), ValueError, r"to: unknown format 'e9m9'"),
        (lambda: fp8q.convert(X, "e4m3fn", rounding="nearest"), ValueError, r"rounding: unknown mode 'nearest'"),
        (lambda: fp8q.convert(X, "e4m3fn", overflow="clip"), ValueError, r"overflow: unknown policy 'clip'"),
        (lambda: fp8q.convert(X, "e2m1", nan="drop"), ValueError, r"nan: unknown policy 'drop'"),
        (lambda: fp8q.convert(X, "e4m3fn", scale_op="add"), ValueError, r"scale_op: unknown 'add'"),
        (lambda: fp8q.convert(torch.arange(4, dtype=torch.uint8), "f32"), TypeError, r"x has dtype .*Byte.*format"),
        (lambda: fp8q.convert(torch.zeros(4, dtype=torch.int32), "e4m3fn"), TypeError, r"x has dtype Int"),
        (lambda: fp8q.convert(X, "e4m3fn", from_format="e5m2"), TypeError, r"x has dtype Float but its format is "
                                                                          r"given as e5m2"),
        (lambda: fp8q.convert(X, "e4m3fn", scale=torch.tensor([1.0, 2.0])), ValueError, r"scale has shape \[2\]"),
        (lambda: fp8q.convert(X, "e4m3fn", scale=-1.0), ValueError, r"scale is -1.*finite and > 0"),
        (lambda: fp8q.convert(X, "e4m3fn", scale=torch.tensor([1.0], dtype=torch.float64)), TypeError,
         r"scale has dtype Double"),
        (lambda: fp8q.convert(X, "e4m3fn", seed=-1), ValueError, r"seed = -1 is outside"),
        (lambda: fp8q.convert(X, "e4m3fn", offset=1 << 64), ValueError, r"offset = .* is outside"),
        (lambda: fp8q.convert([1.0], "e4m3fn"), TypeError, r"x must be a torch.Tensor"),
        (lambda: fp8q.convert(torch.tensor([1.0, float("nan")]), "e2m1"), ValueError, r"fp8q.convert: .*NaN"),
        (lambda: fp8q.convert(torch.ones(3), "e2m1"), ValueError, r"x has shape \[3\]: e2m1 codes are packed"),
        (lambda: fp8q.convert(torch.tensor([7, 17], dtype=torch.uint8), "f32", from_format="e2m1"), ValueError,
         r"fp8q.convert: .*17"),
        (lambda: fp8q.convert(X, "e4m3fn", out=torch.empty(8, 64, dtype=torch.float8_e5m2)), TypeError,
         r"out has dtype Float8_e5m2, expected Float8_e4m3fn"),
        (lambda: fp8q.convert(X, "e4m3fn", out=torch.empty(8, 63, dtype=torch.float8_e4m3fn)), ValueError,
         r"out has shape \[8, 63\]; expected \[8, 64\]"),
        (lambda: fp8q.convert(X, "f32", out=X), ValueError, r"out overlaps x"),
        (lambda: fp8q.convert(X, "e4m3fn", out=torch.empty(64, 8, dtype=torch.float8_e4m3fn).t()), ValueError,
         r"out is not contiguous"),
        (lambda: fp8q.convert(torch.zeros((), dtype=torch.uint8).view(torch.float4_e2m1fn_x2), "f32"), ValueError,
         r"x: a 0-d tensor cannot hold packed e2m1 codes"),
        (lambda: fp8q.amax(X, "blocks"), ValueError, r"granularity: unknown 'blocks'"),
        (lambda: fp8q.amax(X.to(torch.float8_e4m3fn)), TypeError, r"x has dtype Float8_e4m3fn; expected float32"),
        (lambda: fp8q.scale_from_amax(torch.tensor([-1.0]), "e4m3fn"), ValueError, r"fp8q.scale_from_amax: .*amax"),
        (lambda: fp8q.scale_from_amax(torch.tensor([1.0]), "e4m3fn", margin=600), ValueError, r"margin: 600"),
        (lambda: fp8q.cast_transpose(X.reshape(2, 4, 64), "e4m3fn"), ValueError, r"x has shape \[2, 4, 64\]; expected 2"),
        (lambda: fp8q.quantize(X, "e4m3fn", granularity="mx", scale_op="divide"), ValueError, r"scale_op: MX"),
        (lambda: fp8q.quantize(X, "e4m3fn", granularity="mx", mx_rule="round"), ValueError, r"mx_rule: unknown"),
        (lambda: fp8q.quantize(X, "e8m0"), ValueError, r"fp8q.quantize: .*e8m0"),
        (lambda: fp8q.quantize(X.to(torch.float64), "e4m3fn"), TypeError, r"x has dtype Double"),
        (lambda: fp8q.quantize(X, "e4m3fn", granularity="block0x4"), ValueError, r"granularity|block"),
        (lambda: torch.ops.fp8q.dequantize(torch.zeros(8, 64, dtype=torch.float8_e4m3fn), torch.ones(8), "row"),
         ValueError, r"scales has shape \[8\]; the row grid .* is \[8, 1\]"),
        (lambda: torch.ops.fp8q.dequantize(torch.zeros(8, 64, dtype=torch.float8_e4m3fn), torch.ones(1, 1),
                                           "tensor", "", torch.int8), TypeError, r"dtype: Char"),
        (lambda: torch.ops.fp8q.dequantize(torch.zeros(8, 64, dtype=torch.float8_e4m3fn),
                                           torch.zeros(1, 1), "tensor"), ValueError, r"scale_inv\[0\] = 0"),
        (lambda: torch.ops.fp8q.dequantize(torch.zeros(8, 64, dtype=torch.float8_e4m3fn), torch.ones(8, 2), "mx"),
         TypeError, r"scales has dtype Float; E8M0"),
        (lambda: fp8q.matmul(torch.zeros(2, 3, dtype=torch.float8_e4m3fn), torch.zeros(4, 2, dtype=torch.float8_e4m3fn),
                             profile="ocp"), ValueError, r"K differs"),
        (lambda: fp8q.matmul(torch.zeros(2, 3, dtype=torch.float8_e4m3fn), torch.zeros(3, 2, dtype=torch.float8_e4m3fn),
                             profile="tpu"), ValueError, r"profile: unknown 'tpu'"),
        (lambda: fp8q.matmul(torch.zeros(2, 3, dtype=torch.float8_e4m3fn), torch.zeros(3, 2, dtype=torch.float8_e4m3fn),
                             profile="ocp", model="sloppy"), ValueError, r"model: unknown 'sloppy'"),
        (lambda: fp8q.matmul(torch.zeros(2, 3, dtype=torch.float8_e4m3fn), torch.zeros(3, 2, dtype=torch.float8_e4m3fn),
                             profile="trn2"), ValueError, r"fp8q.matmul: .*trn2"),
        (lambda: fp8q.matmul(torch.zeros(2, 3, dtype=torch.float8_e4m3fn), torch.zeros(3, 2, dtype=torch.float8_e4m3fn),
                             profile="ocp", bias=torch.zeros(3)), ValueError, r"bias has shape \[3\]; expected \[2\]"),
        (lambda: fp8q.matmul(torch.zeros(2, 3, dtype=torch.float8_e4m3fn), torch.zeros(3, 2, dtype=torch.float8_e4m3fn),
                             profile="ocp", c=torch.zeros(2, 2, dtype=torch.float64)), TypeError, r"c has dtype Double"),
        (lambda: fp8q.matmul(torch.zeros(2, 3, dtype=torch.float8_e4m3fn), torch.zeros(3, 2, device="meta",
                                                                                    dtype=torch.float8_e4m3fn),
                             profile="ocp"), ValueError, r"b is on meta but a is on cpu"),
        (lambda: torch.ops.fp8q.matmul(torch.zeros(2, 3, dtype=torch.float8_e4m3fn),
                                       torch.zeros(3, 2, dtype=torch.float8_e4m3fn), "ocp", "", "", "row"),
         ValueError, r"a_scale is missing: granularity row needs scales of shape \[2, 1\]"),
        (lambda: torch.ops.fp8q.matmul(torch.zeros(2, 64, dtype=torch.float8_e4m3fn),
                                       torch.zeros(64, 2, dtype=torch.float8_e4m3fn), "ocp", "", "", "mx",
                                       torch.zeros(2, 3, dtype=torch.float8_e8m0fnu)),
         ValueError, r"a_scale has shape \[2, 3\]; expected \[2, 2\]"),
        (lambda: fp8q.trn.nc_matmul(torch.zeros(129, 2, dtype=torch.float8_e4m3fn),
                                    torch.zeros(129, 2, dtype=torch.float8_e4m3fn)), ValueError, r"fp8q.nc_matmul: .*128"),
        (lambda: fp8q.trn.nc_matmul(torch.zeros(4, 2, dtype=torch.float8_e4m3fn), torch.zeros(4, 2, dtype=torch.float8_e4m3fn),
                                    psum=torch.zeros(3, 2)), ValueError, r"psum has shape \[3, 2\]; expected \[2, 2\]"),
        (lambda: fp8q.trn.nc_matmul(torch.zeros(4, 2, dtype=torch.float8_e4m3fn), torch.zeros(4, 2, dtype=torch.float8_e4m3fn),
                                    perf_mode="fast"), ValueError, r"perf_mode: unknown 'fast'"),
        (lambda: fp8q.trn.nc_matmul_mx(torch.zeros(8, 2, 4, dtype=torch.uint8), torch.zeros(8, 2, dtype=torch.uint8),
                                       torch.zeros(8, 2, 4, dtype=torch.uint8), torch.zeros(8, 2, dtype=torch.uint8),
                                       moving_type="float8_e4m3_x4"), ValueError, r"moving_type: unknown x4 type"),
        (lambda: fp8q.trn.nc_matmul_mx(torch.zeros(8, 2, 2, dtype=torch.uint8), torch.zeros(8, 2, dtype=torch.uint8),
                                       torch.zeros(8, 2, 4, dtype=torch.uint8), torch.zeros(8, 2, dtype=torch.uint8)),
         ValueError, r"stationary has shape \[8, 2, 2\]; an x4 tile"),
        (lambda: fp8q.trn.pack_codes(torch.zeros(3, 4, dtype=torch.uint8), "wrapx4"), ValueError, r"layout: unknown"),
        (lambda: fp8q.trn.unpack_codes(torch.zeros(128, 2, 4, 4, dtype=torch.uint8), "1x32", 100), ValueError,
         r"onchip has shape \[128, 2, 4, 4\]; K = 100"),
        (lambda: fp8q.trn.pack_scales(torch.zeros(3, 4, dtype=torch.uint8), "1x32", 64), ValueError,
         r"scales has shape \[3, 4\]; K = 64 in layout 1x32 has 2"),
        (lambda: fp8q.trn.pack_x4(torch.zeros(2, 6, dtype=torch.uint8), "float8_e4m3fn_x4"), ValueError,
         r"multiple of 4"),
        (lambda: fp8q.trn.pack_x4(torch.full((4,), 16, dtype=torch.uint8), "float4_e2m1fn_x4"), ValueError,
         r"fp8q.pack_x4: .*16"),
        (lambda: torch.ops.fp8q.compare(X, X.double()), TypeError, r"expected has dtype Double, actual Float"),
        (lambda: torch.ops.fp8q.compare(X, X.t().contiguous()), ValueError, r"expected has shape \[64, 8\], actual \[8, 64\]"),
        (lambda: torch.ops.fp8q.compare(X, X, "", -1), ValueError, r"ulps and worst must not be negative"),
        (lambda: torch.ops.fp8q.compare(X, X, "bf16"), TypeError, r"actual has dtype Float but its format is given as bf16"),
        (lambda: torch.ops.fp8q.compare(torch.full((2,), 64, dtype=torch.uint8), torch.zeros(2, dtype=torch.uint8), "e2m1"),
         ValueError, r"actual\[flat index 0\]: byte 64 is not a e2m1 code"),
        (lambda: fp8q.testing.compare(X, X, ulps=True), ValueError, r"ulps must be an int >= 0"),
        (lambda: fp8q.calib.Histogram(bins=100), ValueError, r"bins: 100 is not a power of two"),
        (lambda: fp8q.calib.Histogram().observe(torch.ones(3, dtype=torch.float64)), TypeError, r"x has dtype Double"),
        (lambda: fp8q.calib.Histogram(state=torch.zeros(10, dtype=torch.int64)).observe(X), ValueError,
         r"state: histogram state: 10 words"),
        (lambda: fp8q.calib.Histogram().merge(fp8q.calib.Histogram(bins=64)), ValueError, r"b has .* state words"),
        (lambda: fp8q.calib.Histogram().calibrate("median", "e4m3fn"), ValueError, r"method: unknown 'median'"),
        (lambda: fp8q.calib.Histogram().observe(X).calibrate("percentile", "e4m3fn", percentile=150.0), ValueError,
         r"fp8q.calibrate: .*percentile"),
    ],
)
def test_bad_input_is_named(call, kind, pattern):
    with raises(kind, pattern):
        call()


Q8 = torch.zeros(4, 64).to(torch.float8_e4m3fn)
H = fp8q.calib.Histogram(64, 8)


@pytest.mark.parametrize(
    "call, argument",
    [
        (lambda: fp8q.convert(X, "e4m3fn", rounding=1), "rounding"),
        (lambda: fp8q.convert(X, "e4m3fn", overflow=None), "overflow"),
        (lambda: fp8q.convert(X, "e4m3fn", nan=0), "nan"),
        (lambda: fp8q.convert(X, "e4m3fn", scale_op=True), "scale_op"),
        (lambda: fp8q.convert(X, "e4m3fn", seed=1.5), "seed"),
        (lambda: fp8q.amax(X, None), "granularity"),
        (lambda: fp8q.scale_from_amax(torch.ones(2), "e4m3fn", scale_op=2), "scale_op"),
        (lambda: fp8q.scale_from_amax(torch.ones(2), "e4m3fn", margin=1.0), "margin"),
        (lambda: fp8q.scale_from_amax(torch.ones(2), "e4m3fn", amax_epsilon="0"), "amax_epsilon"),
        (lambda: fp8q.scale_from_amax(torch.ones(2), "e4m3fn", power_of_two=1), "power_of_two"),
        (lambda: fp8q.cast_transpose(X, "e4m3fn", rounding=0), "rounding"),
        (lambda: fp8q.cast_transpose(X, "e4m3fn", overflow=0), "overflow"),
        (lambda: fp8q.cast_transpose(X, "e4m3fn", nan=0), "nan"),
        (lambda: fp8q.quantize(X, "e4m3fn", granularity=3), "granularity"),
        (lambda: fp8q.quantize(X, "e4m3fn", scale_op=None), "scale_op"),
        (lambda: fp8q.quantize(X, "e4m3fn", margin="1"), "margin"),
        (lambda: fp8q.quantize(X, "e4m3fn", amax_epsilon=None), "amax_epsilon"),
        (lambda: fp8q.quantize(X, "e4m3fn", power_of_two="yes"), "power_of_two"),
        (lambda: fp8q.quantize(X, "e4m3fn", granularity="mx", mx_rule=1), "mx_rule"),
        (lambda: fp8q.quantize(X, "e4m3fn", rounding=1), "rounding"),
        (lambda: fp8q.quantize(X, "e4m3fn", overflow=1), "overflow"),
        (lambda: fp8q.quantize(X, "e4m3fn", nan=1), "nan"),
        (lambda: fp8q.dequantize(fp8q.quantize(X, "e4m3fn"), "float32"), "dtype"),
        (lambda: fp8q.from_codes(Q8, torch.ones(1, 1), 1), "granularity"),
        (lambda: fp8q.from_codes([1], torch.ones(1, 1), "tensor"), "codes"),
        (lambda: fp8q.from_codes(Q8, torch.ones(1, 1), "tensor", None, 2.0), "global_scale"),
        (lambda: fp8q.matmul(Q8, Q8.t(), profile=3), "profile"),
        (lambda: fp8q.matmul(Q8, Q8.t(), profile="trn3", model=1), "model"),
        (lambda: fp8q.matmul(Q8, Q8.t(), profile="trn3", c=1.0), "c"),
        (lambda: fp8q.matmul(Q8, Q8.t(), profile="trn3", bias=[0.0]), "bias"),
        (lambda: fp8q.matmul(Q8, Q8.t(), profile="trn3", out_dtype="float32"), "out_dtype"),
        (lambda: fp8q.matmul(Q8, Q8.t(), profile="trn3", trainium=1), "trainium"),
        (lambda: fp8q.matmul(Q8, Q8.t(), profile="trn3", c_role=None), "c_role"),
        (lambda: fp8q.linear(Q8, Q8, profile=None), "profile"),
        (lambda: fp8q.trn.nc_matmul(Q8, Q8, perf_mode=2), "perf_mode"),
        (lambda: fp8q.trn.nc_matmul(Q8, Q8, psum=0.0), "psum"),
        (lambda: fp8q.trn.nc_matmul_mx(Q8, Q8, Q8, Q8, stationary_type=4), "stationary_type"),
        (lambda: fp8q.trn.nc_matmul_mx(Q8, Q8, Q8, Q8, moving_type=4), "moving_type"),
        (lambda: fp8q.trn.nc_matmul_mx(Q8, Q8, Q8, Q8, exact_partition_sum=1), "exact_partition_sum"),
        (lambda: fp8q.trn.nc_matmul_mx(Q8, Q8, Q8, Q8, single_rounding_add=None), "single_rounding_add"),
        (lambda: fp8q.trn.pack_codes(Q8, 1), "layout"),
        (lambda: fp8q.trn.unpack_codes(Q8, "1x32", "64"), "k"),
        (lambda: fp8q.trn.pack_scales(Q8, "1x32", 64.0), "k"),
        (lambda: fp8q.trn.unpack_scales(Q8, b"1x32", 64), "layout"),
        (lambda: fp8q.trn.pack_x4(Q8, None), "type"),
        (lambda: fp8q.trn.unpack_x4(Q8, 4), "type"),
        (lambda: fp8q.calib.Histogram(bins="64"), "bins"),
        (lambda: fp8q.calib.Histogram(64, tail=8.0), "tail"),
        (lambda: H.calibrate(1, "e4m3fn"), "method"),
        (lambda: H.calibrate("percentile", "e4m3fn", percentile="99"), "percentile"),
        (lambda: H.calibrate("max", "e4m3fn", margin=0.5), "margin"),
        (lambda: H.calibrate("max", "e4m3fn", amax_epsilon=[0]), "amax_epsilon"),
        (lambda: H.calibrate("max", "e4m3fn", power_of_two=0), "power_of_two"),
    ],
)
def test_an_argument_of_the_wrong_type_is_named(call, argument):
    with pytest.raises(TypeError, match=rf"^{argument} must be a"):
        call()


def test_a_corrupted_histogram_state_names_the_field():
    h = fp8q.calib.Histogram(bins=64, tail=4).observe(torch.tensor([1.0, 2.0, 3.0]))
    for word, value, pattern in [(0, 1, "tag"), (5, 7, "bins hold 3 samples, the count is 7"),
                                 (7, 0x7F800000, "amax pattern"), (4, 200, "top exponent"),
                                 (13 + 64, 0x3F800000, "tail value 0")]:
        state = h.state.clone()
        state[word] = value
        with raises(ValueError, pattern):
            fp8q.calib.Histogram(state=state).calibrate("max", "e4m3fn")


def test_no_op_writes_its_inputs():
    g = torch.Generator().manual_seed(2)
    x = torch.randn(16, 256, generator=g)
    xb = x.to(torch.bfloat16)
    codes = x.to(torch.float8_e4m3fn)
    mx = fp8q.quantize(x, "e4m3fn", granularity="mx")
    h = fp8q.calib.Histogram().observe(x)
    h2 = fp8q.calib.Histogram().observe(x * 3)
    tiles = torch.randn(128, 16, generator=g).to(torch.float8_e4m3fn)
    psum = torch.randn(16, 16, generator=g)
    image = fp8q.trn.pack_x4(torch.zeros(128, 32, dtype=torch.uint8), "float8_e4m3fn_x4")
    scales = torch.full((128, 8), 127, dtype=torch.uint8)
    inputs = [x, xb, codes, mx.codes, mx.scales, h.state, h2.state, tiles, psum, image, scales]
    before = [t.clone() for t in inputs]
    fp8q.convert(x, "e4m3fn", rounding="sr")
    fp8q.convert(xb, "e2m1", scale=0.25)
    fp8q.convert(codes, torch.float32)
    fp8q.amax(xb, "row")
    fp8q.cast_transpose(x, "e5m2")
    fp8q.quantize(xb, "e4m3fn", granularity="block1x128")
    fp8q.dequantize(mx)
    h.observe(x), h.merge(h2), h.calibrate("entropy", "e4m3fn")
    fp8q.matmul(codes, codes.t().contiguous(), profile="trn3", c=psum, bias=psum[0].contiguous())
    fp8q.linear(mx, mx, profile="ocp")
    fp8q.trn.nc_matmul(tiles, tiles, psum=psum)
    fp8q.trn.nc_matmul_mx(image, scales, image, scales, psum=psum[:8, :8].contiguous())
    fp8q.trn.pack_codes(codes, "wrapX")
    fp8q.testing.compare(x, xb.float(), ulps=3), fp8q.testing.compare(codes, codes)
    fp8q.convert(x.t(), "e4m3fn")  # a strided input, read through a copy
    with pytest.raises(ValueError):
        fp8q.convert(x, "e4m3fn", out=torch.empty(x.shape[::-1], dtype=torch.float8_e4m3fn).t())
    with pytest.raises(ValueError):
        fp8q.trn.nc_matmul(tiles, tiles, psum=psum[:3])
    for a, b in zip(inputs, before):
        assert torch.equal(a.view(torch.uint8), b.view(torch.uint8))
