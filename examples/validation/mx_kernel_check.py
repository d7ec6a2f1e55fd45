"""What ``allclose`` hides: an MXFP8 matmul kernel checked against Trainium3's ``nc_matmul_mx``.

The kernel under test is written the way MX golden references usually are: dequantize both MX
operands to fp32 (codes x 2^(scale - 127) per block of 32 along K), then ``numpy.einsum``. The
device's result is fp8q's emulation of ``nc_matmul_mx`` (docs/numerics.md, ``trainium3_mx``): each
partition's 4 products summed exactly, added into an fp32 column sum in partition order, each
512-K instruction's column sum added into PSUM. Both are correct to a few ULPs, so
``numpy.allclose`` at a usual fp32 tolerance passes; bitwise they differ in many elements (by
up to a thousand ULPs where the sum cancels), because the additions run in another order. A kernel that adds in the device's order matches the emulation bit for bit.

    scripts/python examples/validation/mx_kernel_check.py [--out DIR] [--fp8q build/fp8q]

It writes DIR/kernel.safetensors (the kernel's output, as a device harness would) and
DIR/emulated.safetensors (fp8q's), prints what allclose and fp8q.testing say, and, with --fp8q,
runs ``fp8q compare`` on the two files. No downloads: the operands are made here from a seed.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch
from safetensors.numpy import save_file

import fp8q
import fp8q.testing

M, N, K = 32, 48, 1024  # K: two nc_matmul_mx instructions of 512
SEED = 7
# The tolerance of a typical fp32 golden test. numpy's default atol (1e-8) fails here: where the
# sum cancels (|D| ~ 0.03 from terms of ~100) the order of additions moves the result by ~1e-6.
RTOL, ATOL = 1e-5, 1e-5


def operands(seed: int = SEED) -> tuple[fp8q.QuantizedTensor, fp8q.QuantizedTensor]:
    """A [M, K] and B [N, K], MXFP8 e4m3fn along K with Trainium3's scale rule (NKI quantize_mx)."""
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(M, K, generator=g) * torch.exp2(torch.randint(-4, 5, (M, 1), generator=g).float())
    b = torch.randn(N, K, generator=g)
    return (fp8q.quantize(a, "e4m3fn", granularity="mx", mx_rule="trainium3"),
            fp8q.quantize(b, "e4m3fn", granularity="mx", mx_rule="trainium3"))


def dequantize_mx(q: fp8q.QuantizedTensor, dtype: type = np.float32) -> np.ndarray:
    """codes x 2^(e - 127), one E8M0 scale e per 32 elements along K (exact in fp32 here)."""
    codes = q.codes.float().numpy().astype(dtype)
    e = q.scales.view(torch.uint8).numpy().astype(np.int32) - 127
    return codes * np.exp2(e).astype(dtype).repeat(32, axis=1)


# ---- the kernel under test ------------------------------------------------------------------------
def golden_style_kernel(qa: fp8q.QuantizedTensor, qb: fp8q.QuantizedTensor) -> np.ndarray:
    """D = A B^T as MX golden code computes it: dequantize to fp32, then einsum (numpy's order)."""
    return np.einsum("mk,nk->mn", dequantize_mx(qa), dequantize_mx(qb))


def device_order_kernel(qa: fp8q.QuantizedTensor, qb: fp8q.QuantizedTensor) -> np.ndarray:
    """The same product, adding in nc_matmul_mx's order (1x32 layout: partition p of the instruction
    at k0 holds k0 + 4p .. k0 + 4p + 3). float64 holds every partition sum exactly (4 products of
    8-bit significands sharing one scale), and float32 + float32 exactly; t + s_p is rounded to
    float64 and then to float32, which can differ from one rounding only on a float32 midpoint."""
    a, b = dequantize_mx(qa, np.float64), dequantize_mx(qb, np.float64)
    psum = np.zeros((M, N), np.float32)
    for k0 in range(0, K, 512):
        t = np.zeros((M, N), np.float32)
        for p in range(128):
            k = slice(k0 + 4 * p, k0 + 4 * p + 4)
            t = (t.astype(np.float64) + a[:, k] @ b[:, k].T).astype(np.float32)  # t = fp32(t + s_p)
        psum = (psum.astype(np.float64) + t).astype(np.float32)  # psum = fp32(psum + t)
    return psum


# ---- the device: fp8q's emulation of nc_matmul_mx -----------------------------------------------
def emulated_nc_matmul_mx(qa: fp8q.QuantizedTensor, qb: fp8q.QuantizedTensor) -> np.ndarray:
    """PSUM of K / 512 nc_matmul_mx instructions on the 1x32 SBUF images of A (stationary) and B."""
    def tiles(q: fp8q.QuantizedTensor) -> tuple[torch.Tensor, torch.Tensor]:
        images = fp8q.trn.pack_codes(q.codes.t().contiguous(), "1x32").view(torch.uint8)  # [128, T, rows, 4]
        scales = fp8q.trn.pack_scales(q.scales.t().contiguous(), "1x32", K)              # [128, T, rows]
        return images, scales

    (ia, sa), (ib, sb) = tiles(qa), tiles(qb)
    psum = None
    for t in range(K // 512):
        psum = fp8q.trn.nc_matmul_mx(ia[:, t].contiguous(), sa[:, t].contiguous(), ib[:, t].contiguous(),
                                     sb[:, t].contiguous(), psum=psum)
    return psum.numpy()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, help="folder for the two safetensors files (default: a temporary one)")
    ap.add_argument("--fp8q", type=Path, help="the fp8q tool: run `fp8q compare` on the files")
    args = ap.parse_args(argv)
    out = args.out or Path(tempfile.mkdtemp(prefix="fp8q-validation-"))
    out.mkdir(parents=True, exist_ok=True)

    qa, qb = operands()
    kernel, device = golden_style_kernel(qa, qb), emulated_nc_matmul_mx(qa, qb)
    print(f"D = A B^T, M={M} N={N} K={K}, MXFP8 e4m3fn (trainium3 scale rule), seed {SEED}")
    print(f"numpy.allclose(kernel, device, rtol={RTOL}, atol={ATOL}): {np.allclose(kernel, device, RTOL, ATOL)}")
    c = fp8q.testing.compare(kernel, device)
    print(f"fp8q.testing.compare: {c.report()}")
    print(f"device-order kernel: {fp8q.testing.compare(device_order_kernel(qa, qb), device).differ} elements differ")
    save_file({"d": kernel}, str(out / "kernel.safetensors"))
    save_file({"d": device}, str(out / "emulated.safetensors"))
    print(f"wrote {out / 'kernel.safetensors'} and {out / 'emulated.safetensors'}")
    if args.fp8q:
        cmd = [str(args.fp8q), "compare", str(out / "kernel.safetensors"), str(out / "emulated.safetensors")]
        print("$ fp8q compare kernel.safetensors emulated.safetensors", flush=True)
        return subprocess.run(cmd).returncode
    return 0


if __name__ == "__main__":
    sys.exit(main())
