#!/usr/bin/env python3
"""torch._scaled_mm on `fp8q vectors` inputs, for `fp8q fit --d` (docs/validation.md, section 6).

  scaled_mm.py IN.safetensors OUT_PREFIX [IN2 OUT_PREFIX2 ...]

For each pair: D = _scaled_mm(a, b, scale_a = 1, scale_b = 1, out_dtype = float32) on cuda (cuBLASLt),
written as OUT_PREFIX-accum.safetensors (use_fast_accum=False: cuBLAS's FP8 kernels then promote the
tensor-core partials into fp32 at intervals) and OUT_PREFIX-fast.safetensors (use_fast_accum=True: no
promotion), each with tensor d [M, N] F32. Unit scales make the dequantisation multiply exact, so d
is the accumulator itself. _scaled_mm has no accumulator input, so IN must have no c; it refuses
e5m2 x e5m2 (cuBLASLt has no such kernel). One process for all pairs: torch starts once.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import st_raw  # noqa: E402  (beside this file)


def run(torch, src, prefix):
    x = st_raw.load_inputs(src)
    if x["c"] is not None:
        sys.exit(f"{src}: has c; _scaled_mm has no accumulator input (give a file without --with-c)")
    if x["format_a"] == "e5m2" and x["format_b"] == "e5m2":
        sys.exit(f"{src}: e5m2 x e5m2: _scaled_mm (cuBLASLt) does not multiply two e5m2 matrices")
    m, n, k = x["m"], x["n"], x["k"]
    if k % 16:
        sys.exit(f"{src}: K = {k}; _scaled_mm needs K a multiple of 16 (padding K would change signed zeros)")
    dt = {"e4m3fn": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}
    # M and N padded to 16 with +0 codes (rows and columns of D apart from the M x N read back).
    mp, np_ = -(-m // 16) * 16, -(-n // 16) * 16
    a = torch.zeros(mp, k, dtype=torch.uint8)
    a[:m] = torch.frombuffer(bytearray(x["a"]), dtype=torch.uint8).reshape(m, k)
    bt = torch.zeros(np_, k, dtype=torch.uint8)  # B's columns as rows: mat_b must be column-major
    bt[:n] = torch.frombuffer(bytearray(x["b"]), dtype=torch.uint8).reshape(k, n).t()
    a = a.cuda().view(dt[x["format_a"]])
    b = bt.cuda().view(dt[x["format_b"]]).t()  # [K, Np], column-major
    one = torch.tensor(1.0, dtype=torch.float32, device="cuda")
    meta = {"fp8q.device": torch.cuda.get_device_name(), "fp8q.torch": torch.__version__,
            "fp8q.cuda": str(torch.version.cuda), "fp8q.source": src}
    for name, fast in (("accum", False), ("fast", True)):
        d = torch._scaled_mm(a, b, one, one, out_dtype=torch.float32, use_fast_accum=fast)
        torch.cuda.synchronize()
        d = d[:m, :n].contiguous().cpu()
        out = f"{prefix}-{name}.safetensors"
        st_raw.write_safetensors(out, [("d", "F32", [m, n], d.numpy().tobytes())],
                                 dict(meta, **{"fp8q.kernel": f"torch._scaled_mm use_fast_accum={fast}"}))
        print(f"{src} -> {out}: _scaled_mm {x['format_a']} x {x['format_b']}, K = {k}, use_fast_accum={fast}")


def main(argv):
    if not argv or len(argv) % 2:
        sys.exit(__doc__)
    import torch

    if not torch.cuda.is_available():
        sys.exit("scaled_mm.py: torch sees no CUDA device")
    print(f"torch {torch.__version__} (CUDA {torch.version.cuda}) on {torch.cuda.get_device_name()}")
    for src, prefix in zip(argv[::2], argv[1::2]):
        run(torch, src, prefix)


if __name__ == "__main__":
    main(sys.argv[1:])
