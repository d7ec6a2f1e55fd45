"""fp8q.convert against torch's own cast and against the C++ library call, in one run.

    scripts/python bench/python/bench_convert.py [--reps 15] [--build build]

A 64 MiB bfloat16 tensor (N(0, 1) * 64) converted to float8_e4m3fn (nearest-even, saturating),
with 1 and 2 threads (torch.set_num_threads, which is also fp8q's thread count), two ways:
  - into a new tensor:       x.to(torch.float8_e4m3fn)  vs  fp8q.convert(x, torch.float8_e4m3fn)
  - into an existing tensor: out.copy_(x)               vs  fp8q.convert(x, ..., out=out)
  - the C++ library call fp8q::convert on the same bytes into an existing buffer
    (build/bench/fp8q_convert_timer), and the cost of a new 32 MiB tensor alone (torch.empty
    + first write: the page faults every new output pays)
and the per-call overhead of the Python / operator layer on a 1 KiB tensor (fp8q.convert's
median minus the C++ call's). Prints medians and the ratios; timings are wall clock.

The script runs itself with OMP_WAIT_POLICY=PASSIVE unless the variable is set: torch's OpenMP
workers otherwise spin after each of torch's parallel regions and take a core from fp8q's
threads (docs/performance.md has both).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

if "OMP_WAIT_POLICY" not in os.environ:  # before torch starts its OpenMP runtime
    os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"})

import torch  # noqa: E402

import fp8q  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def median_seconds(fn, reps: int) -> float:
    fn()  # warm: page faults, the kernels' first use
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def cpp_seconds(timer: Path, nbytes: int, threads: int, reps: int) -> float:
    out = subprocess.run([str(timer), str(nbytes), str(threads), str(reps)], check=True, capture_output=True, text=True)
    return float(out.stdout)


def cpu_name() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=15)
    p.add_argument("--small-reps", type=int, default=2000)
    p.add_argument("--build", type=Path, default=ROOT / "build")
    a = p.parse_args()
    timer = a.build / "bench" / "fp8q_convert_timer"
    big = 64 << 20
    x = (torch.randn(big // 2, generator=torch.Generator().manual_seed(1)) * 64).to(torch.bfloat16)
    small = x[:512].clone()  # 1 KiB
    assert torch.equal(fp8q.convert(x, torch.float8_e4m3fn).view(torch.uint8), x.to(torch.float8_e4m3fn).view(torch.uint8))
    print(f"CPU: {cpu_name()}; torch {torch.__version__}; {platform.python_implementation()} {platform.python_version()}; "
          f"OMP_WAIT_POLICY={os.environ['OMP_WAIT_POLICY']}")
    print(f"bf16 -> float8_e4m3fn, 64 MiB input, medians of {a.reps} calls (ms)")
    print(f"{'threads':>7} {'torch .to':>9} {'fp8q':>9} {'new 32MiB':>9} {'torch copy_':>11} {'fp8q out=':>9} "
          f"{'C++':>7} | {'fp8q/torch speed':>16} {'fp8q out=/copy_':>15} {'out= / C++':>10}")
    out = torch.empty(big // 2, dtype=torch.float8_e4m3fn)
    old = torch.get_num_threads()
    try:
        for threads in (1, 2):
            torch.set_num_threads(threads)
            t_to = median_seconds(lambda: x.to(torch.float8_e4m3fn), a.reps)
            t_new = median_seconds(lambda: fp8q.convert(x, torch.float8_e4m3fn), a.reps)
            t_page = median_seconds(lambda: torch.empty(big // 2, dtype=torch.uint8).fill_(1), a.reps)
            t_copy = median_seconds(lambda: out.copy_(x), a.reps)
            t_out = median_seconds(lambda: fp8q.convert(x, torch.float8_e4m3fn, out=out), a.reps)
            t_cpp = cpp_seconds(timer, big, threads, a.reps)
            print(f"{threads:>7} {t_to * 1e3:>9.2f} {t_new * 1e3:>9.2f} {t_page * 1e3:>9.2f} {t_copy * 1e3:>11.2f} "
                  f"{t_out * 1e3:>9.2f} {t_cpp * 1e3:>7.2f} | {t_to / t_new:>15.2f}x {t_copy / t_out:>14.2f}x "
                  f"{t_out / t_cpp:>9.3f}x")
        torch.set_num_threads(1)
        t_small = median_seconds(lambda: fp8q.convert(small, torch.float8_e4m3fn), a.small_reps)
        t_op = median_seconds(lambda: torch.ops.fp8q.convert(small, "e4m3fn"), a.small_reps)
        t_small_torch = median_seconds(lambda: small.to(torch.float8_e4m3fn), a.small_reps)
        t_small_cpp = cpp_seconds(timer, 1024, 1, a.small_reps)
    finally:
        torch.set_num_threads(old)
    print(f"1 KiB, medians of {a.small_reps} calls, 1 thread: fp8q.convert {t_small * 1e6:.2f} us, "
          f"torch.ops.fp8q.convert {t_op * 1e6:.2f} us, torch cast {t_small_torch * 1e6:.2f} us, "
          f"C++ call {t_small_cpp * 1e6:.2f} us")
    print(f"overhead per call: fp8q.convert {1e6 * (t_small - t_small_cpp):.2f} us, "
          f"the operator alone {1e6 * (t_op - t_small_cpp):.2f} us")


if __name__ == "__main__":
    main()
