"""Writes the seed corpus of fp8q_histogram_state_fuzz: valid histogram states (64-bit words,
little-endian) of observers built several ways, so the fuzzer starts from inputs that load.

    scripts/python tests/fuzz/make_histogram_corpus.py
"""

from __future__ import annotations

from pathlib import Path

import torch

import fp8q

OUT = Path(__file__).resolve().parent / "corpus" / "histogram_state"


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    g = torch.Generator().manual_seed(1)
    states = {
        "empty_64_0": fp8q.calib.Histogram(bins=64, tail=0),
        "small_64_4": fp8q.calib.Histogram(bins=64, tail=4).observe(torch.tensor([1.0, 2.0, 1.5, 0.0, 0.5, 0.25])),
        "wide_128_8": fp8q.calib.Histogram(bins=128, tail=8).observe(
            torch.randn(500, generator=g) * torch.exp(4 * torch.randn(500, generator=g))),
        "specials_64_2": fp8q.calib.Histogram(bins=64, tail=2).observe(
            torch.tensor([float("nan"), float("inf"), -float("inf"), 1e-40, 3e38, -0.0])),
    }
    for name, h in states.items():
        (OUT / name).write_bytes(h.state.numpy().tobytes())


if __name__ == "__main__":
    main()
