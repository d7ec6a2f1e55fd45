"""The shared vector set: structured fp32 inputs that reach every rounding case.

Deterministic (a fixed generator seed), so a failure names the same input every run. The set
holds the specials (+-0, +-Inf, NaN of both signs), the fp32 extremes, every power of two from
2^-149 to 2^127 with its neighbours, ties of the 8-bit grids (k + 1/2 ulps at every binade the
narrow formats have), and random patterns across the whole exponent range.
"""

from __future__ import annotations

import numpy as np
import torch


def fp32_vectors(random: int = 1 << 14, seed: int = 20261201) -> torch.Tensor:
    rng = np.random.default_rng(seed)
    special = np.array(
        [0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00001, 0x00000001, 0x807FFFFF,
         0x7F7FFFFF, 0xFF7FFFFF, 0x00800000, 0x80800000],
        dtype=np.uint32,
    )
    pow2 = (np.arange(1, 255, dtype=np.uint32) << 23).astype(np.uint32)
    around = np.concatenate([pow2 - 1, pow2, pow2 + 1])
    # ties of a 3-bit mantissa (e4m3) and a 2-bit one (e5m2) in binades 2^-20 .. 2^20
    exps = np.arange(127 - 20, 127 + 20, dtype=np.uint32) << 23
    ties = np.concatenate([exps | (np.uint32(k) << np.uint32(19)) for k in range(16)]
                          + [exps | (np.uint32(k) << np.uint32(20)) for k in range(8)])
    near_ties = np.concatenate([ties - 1, ties + 1])
    rand = rng.integers(0, 1 << 32, size=random, dtype=np.uint64).astype(np.uint32)
    # random values of moderate exponent, where most of the narrow grids lie
    moderate = ((rng.integers(127 - 30, 127 + 20, size=random, dtype=np.uint32) << 23)
                | rng.integers(0, 1 << 23, size=random, dtype=np.uint32))
    sign = rng.integers(0, 2, size=random, dtype=np.uint32) << 31
    bits = np.concatenate([special, around, ties, near_ties, rand, moderate | sign]).astype(np.uint32)
    bits = np.concatenate([bits, bits ^ np.uint32(0x80000000)])
    return torch.from_numpy(bits.view(np.float32).copy())


def bits(t: torch.Tensor) -> np.ndarray:
    """The raw bytes of a tensor as an unsigned integer array of its element width."""
    width = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[t.element_size()]
    return t.contiguous().view(torch.uint8).numpy().view(width)
