"""One training step (forward + backward) of a linear layer: fp8q's Float8Linear against torch's
bfloat16 nn.Linear and torchao's emulated Float8Linear, in one run.

    scripts/python bench/python/bench_training.py [--size 4096] [--tokens 4096] [--reps 3] [--warmup 1]
                                                   [--recipes tensorwise,rowwise,blockwise,mxfp8_rceil]

x [tokens, size] bfloat16, W [size, size] bfloat16, y.backward(dy): three GEMMs of
tokens * size^2 multiply-adds each. Cases: torch bf16 nn.Linear; torchao Float8Linear
(tensorwise, emulate=True: its casts, then torch.mm in high precision); fp8q Float8Linear with
each recipe (every GEMM through the profile's bit-exact model). 1 and 2 threads
(torch.set_num_threads, also fp8q's). Each case runs in its own process, which reports the
median step time and the peak RSS above the process's RSS before its first step (ru_maxrss:
what the step itself allocates). Prints medians and the ratios to the bf16 step and to torchao's.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

if "OMP_WAIT_POLICY" not in os.environ:  # as bench_convert.py: torch's spinning workers take a core
    os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"})

import torch  # noqa: E402


def rss_mib() -> float:
    """This process's RSS now (statm), in MiB."""
    return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def layer_for(case: str, size: int) -> torch.nn.Module:
    torch.manual_seed(0)
    base = torch.nn.Linear(size, size, bias=False, dtype=torch.bfloat16)
    if case == "bf16":
        return base
    if case == "torchao":
        from torchao.float8 import Float8LinearConfig, convert_to_float8_training

        m = torch.nn.Sequential(base)
        convert_to_float8_training(m, config=Float8LinearConfig(emulate=True))
        return m
    from fp8q.training import Float8Linear, recipe

    return Float8Linear.from_linear(base, recipe(case))


def one_case(case: str, size: int, tokens: int, threads: int, reps: int, warmup: int) -> dict:
    torch.set_num_threads(threads)
    layer = layer_for(case, size)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(tokens, size, generator=g).bfloat16().requires_grad_()
    dy = torch.randn(tokens, size, generator=g).bfloat16()
    before = rss_mib()

    def step():
        layer.zero_grad(set_to_none=True)
        x.grad = None
        layer(x).backward(dy)

    times = []
    for i in range(warmup + reps):
        t0 = time.perf_counter()
        step()
        if i >= warmup:
            times.append(time.perf_counter() - t0)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"seconds": statistics.median(times), "peak_mib": peak - before}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--tokens", type=int, default=4096)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1, help="untimed steps first (the bf16 step at 4096 takes minutes here)")
    ap.add_argument("--recipes", default="tensorwise,rowwise,blockwise,mxfp8_rceil")
    ap.add_argument("--one", help=argparse.SUPPRESS)  # case:threads, run in this process
    a = ap.parse_args()
    if a.one:
        case, threads = a.one.split(":")
        print(json.dumps(one_case(case, a.size, a.tokens, int(threads), a.reps, a.warmup)))
        return
    cpu = next((ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                if ln.startswith("model name")), "?")
    print(f"CPU: {cpu}; torch {torch.__version__}; x [{a.tokens}, {a.size}] bf16, W [{a.size}, {a.size}]; "
          f"median of {a.reps} steps (forward + backward) after {a.warmup} untimed; peak = RSS above the process's "
          "before the steps")
    cases = ["bf16", "torchao", *a.recipes.split(",")]
    for threads in (1, 2):
        got = {}
        for case in cases:
            out = subprocess.run([sys.executable, __file__, "--one", f"{case}:{threads}", "--size", str(a.size),
                                  "--tokens", str(a.tokens), "--reps", str(a.reps), "--warmup", str(a.warmup)],
                                 capture_output=True, text=True)
            if out.returncode != 0:
                print(f"  {case}: failed: {out.stderr.strip().splitlines()[-1] if out.stderr else out.returncode}")
                continue
            got[case] = json.loads(out.stdout.strip().splitlines()[-1])
        bf16, ao = got.get("bf16"), got.get("torchao")
        print(f"\n{threads} thread(s)")
        print(f"  {'case':14} {'step s':>9} {'to bf16':>8} {'to torchao':>10} {'peak MiB':>9} {'to bf16':>8}")
        for case, r in got.items():
            t_bf16 = r["seconds"] / bf16["seconds"] if bf16 else float("nan")
            t_ao = r["seconds"] / ao["seconds"] if ao else float("nan")
            m_bf16 = r["peak_mib"] / bf16["peak_mib"] if bf16 and bf16["peak_mib"] > 0 else float("nan")
            print(f"  {case:14} {r['seconds']:9.3f} {t_bf16:8.2f} {t_ao:10.2f} {r['peak_mib']:9.0f} {m_bf16:8.2f}")


if __name__ == "__main__":
    main()
