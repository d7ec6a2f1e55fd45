"""One sample call of every fp8q operator, for the tests that run them all (test_compile.py,
test_strides.py)."""

from __future__ import annotations

import torch

import fp8q  # noqa: F401  (loads the operator library)
import fp8q.training  # noqa: F401  (registers fp8q::bias_grad)


def op_samples() -> list[tuple[object, tuple, dict]]:
    """(op, args, kwargs) for every operator: one call each, two where an op has two forms."""
    # opcheck's schema test runs torch arithmetic on the inputs, which torch lacks for float8 on
    # the CPU, so codes go in as uint8 with their format named (test_compile.py traces the float8
    # dtypes too)
    g = torch.Generator().manual_seed(3)
    x = torch.randn(4, 64, generator=g)
    codes = x.to(torch.float8_e4m3fn).view(torch.uint8)
    h = torch.ops.fp8q.histogram_observe(torch.ops.fp8q.histogram_new(64, 8), x)
    mx_codes, mx_scales = torch.ops.fp8q.quantize(x, "e4m3fn", "mx")
    nv_codes, nv_scales, nv_global = torch.ops.fp8q.quantize_nvfp4(x, "e2m1", "nvfp4")
    nv_codes = fp8q.formats.unpack_fp4(nv_codes)
    image = torch.ops.fp8q.pack_x4(torch.zeros(16, 8, dtype=torch.uint8), "float8_e4m3fn_x4")
    return [
        (torch.ops.fp8q.convert.default, (x, "e4m3fn"), dict(rounding="sr", seed=3)),
        (torch.ops.fp8q.convert.default, (codes, "f32", "e4m3fn"), {}),
        (torch.ops.fp8q.convert_into.default, (x, "e4m3"), dict(out=torch.empty(4, 64, dtype=torch.uint8))),
        (torch.ops.fp8q.amax.default, (x, "row"), {}),
        (torch.ops.fp8q.hadamard16.default, (x.bfloat16(), 0x1234), {}),
        (torch.ops.fp8q.unpack_fp4.default, (codes,), {}),
        (torch.ops.fp8q.scale_from_amax.default, (x.abs(), "e5m2"), {}),
        (torch.ops.fp8q.cast_transpose.default, (x, "e4m3fn"), {}),
        (torch.ops.fp8q.quantize.default, (x, "e2m1", "mx"), {}),
        (torch.ops.fp8q.quantize.default, (x.half(), "e4m3", "block2x32"), {}),
        (torch.ops.fp8q.dequantize.default, (mx_codes.view(torch.uint8), mx_scales.view(torch.uint8), "mx", "e4m3fn"),
         {}),
        (torch.ops.fp8q.quantize_nvfp4.default, (x, "e2m1", "nvfp4_16x16"), dict(rounding="sr", seed=2)),
        (torch.ops.fp8q.quantize_scaled.default, (x, "e4m3", torch.tensor([2.0])), dict(rounding="sr", seed=1)),
        (torch.ops.fp8q.delayed_update.default, (torch.rand(4, generator=g), torch.ones(1), torch.tensor(3.0), "e5m2"),
         dict(algorithm="most_recent", margin=1)),
        (torch.ops.fp8q.bias_grad.default, (x, torch.bfloat16), {}),
        (torch.ops.fp8q.histogram_observe.default, (h, x), {}),
        (torch.ops.fp8q.histogram_merge.default, (h, h), {}),
        (torch.ops.fp8q.calibrate.default, (h, "mse", "e4m3fn"), {}),
        (torch.ops.fp8q.matmul.default, (codes, codes.t().contiguous(), "ocp", "e4m3fn", "e4m3fn"), {}),
        (torch.ops.fp8q.matmul.default, (nv_codes, nv_codes.t().contiguous(), "ocp", "e2m1", "e2m1", "nvfp4",
                                         nv_scales.view(torch.uint8), "nvfp4_16x1",
                                         nv_scales.view(torch.uint8).t().contiguous(), None, None, "",
                                         torch.float32, False, "epilogue", nv_global, nv_global), {}),
        (torch.ops.fp8q.nc_matmul.default, (codes, codes, "e4m3fn", "e4m3fn"), {}),
        (torch.ops.fp8q.nc_matmul_mx.default, (image, torch.zeros(16, 2, dtype=torch.uint8), image,
                                               torch.zeros(16, 2, dtype=torch.uint8), "float8_e4m3fn_x4",
                                               "float8_e4m3fn_x4"), {}),
        (torch.ops.fp8q.trn3_pack_codes.default, (codes, "wrapX"), {}),
        (torch.ops.fp8q.trn3_pack_scales.default, (torch.zeros(2, 4, dtype=torch.uint8), "1x32", 64), {}),
        (torch.ops.fp8q.pack_x4.default, (codes, "float8_e4m3fn_x4"), {}),
        (torch.ops.fp8q.compare.default, (x, torch.nextafter(x, torch.zeros(())), "", 1, 3), {}),
        (torch.ops.fp8q.compare.default, (codes, codes ^ 1, "e4m3fn"), dict(worst=2)),
    ]
