"""fp8q's conversions against torch's own CPU casts (``x.to(dtype)``), an independent implementation.

What torch (2.14 here) computes on the CPU, determined empirically by the tests below (every
bf16 and f16 bit pattern, ~9M structured f32 inputs; casting 4096 random f32 one element at a
time gave the same bits as the vectorised whole-tensor path) and by reading c10/util/Float8_*.h:

* f32 / bf16 / f16 -> float8_e4m3fn: nearest-even, SATURATING: a rounded magnitude above 448
  and +/-Inf give +/-448 (0x7E / 0xFE); NaN gives 0x7F / 0xFF, sign kept. That is fp8q's
  ``rounding="rne", overflow="saturate"``, bit for bit on every input.
* -> float8_e5m2: nearest-even, NOT saturating: overflow and +/-Inf give +/-Inf (0x7C / 0xFC):
  fp8q's ``overflow="inf-nan"``, bit for bit on every non-NaN input. NaN gives 0x7F / 0xFF
  (sign kept, all mantissa bits set) where fp8q gives its canonical 0x7E / 0xFE: both NaN of the
  same sign, so NaN inputs are checked for that, not for the bits.
* -> float8_e4m3fnuz, float8_e5m2fnuz: nearest-even, NOT saturating: overflow, +/-Inf and NaN
  give the NaN 0x80, -0 gives +0: fp8q's ``overflow="inf-nan"``, bit for bit on every input.
* -> float8_e8m0fnu (``fp8e8m0fnu_from_fp32_value``): works on the f32 exponent field: NaN and
  +/-Inf give 0xFF; the sign is IGNORED (-x gives the code of x); zero gives 0x00 (2^-127);
  otherwise nearest with ties up (guard/round/sticky on the f32 mantissa), overflow past 2^127
  gives 0xFF. So: for positive finite x it is fp8q's ``overflow="inf-nan"`` (whose ties go up
  too, docs/numerics.md section 2 step 5), for +/-0 fp8q's ``overflow="saturate"`` (0x00), for
  negative x it is fp8q's result for |x|. fp8q's own rule for negative inputs (0x00 under
  saturate, NaN under inf-nan, e8m0 has no sign) is a deliberate difference and is asserted
  on its own. One defect of torch's rule: an f32 subnormal strictly between 2^-127 and
  1.5 * 2^-127 (f32 bits 0x00400001..0x005FFFFF, bf16 0x0041..0x005F) gives 0x01 (2^-126),
  although 0x00 (2^-127) is nearer (the guard bit of a subnormal is its leading bit); fp8q gives
  0x00 and these inputs are checked against 0x00 instead of torch.
* float4_e2m1fn_x2: torch has no CPU cast ("copy_kernel" not implemented); skipped.
* Decoding (``codes.to(float32 / float64 / bfloat16 / float16)``) equals fp8q's decoding under
  ``overflow="inf-nan"`` for every non-NaN code, bit for bit; NaN codes are NaN in both, but torch
  keeps payload bits (e4m3fn 0x7F -> 0x7FF00000; fnuz / e8m0 -> 0x7F800001, a signalling
  pattern; bf16 results lose the NaN's sign) where fp8q gives the canonical quiet NaN, so only
  NaN-ness is compared. Under fp8q's default ``overflow="saturate"`` decoding is exact too (Inf
  codes stay Inf: the target holds every value), but e8m0 values past f16's range become +/-max,
  tested against torch's decoded values with those +/-Inf replaced by +/-max.
* f32 -> bfloat16 / float16: nearest-even, overflow and +/-Inf give +/-Inf: fp8q's
  ``overflow="inf-nan"``, bit for bit on every non-NaN input; NaN is NaN in both (torch keeps
  payload bits).
* f64 sources: torch goes through f32 (double rounding: 2^-10 * (1 + 2^-40) -> e4m3fn 0 where
  fp8q's single rounding gives 2^-9), so f64 inputs are compared only where they are exact in
  f32.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
import torch

import fp8q

E8M0_MIN = 2.0**-127


@dataclass(frozen=True)
class Cast:
    name: str
    dtype: torch.dtype


CASTS = [
    Cast("e4m3fn", torch.float8_e4m3fn),
    Cast("e5m2", torch.float8_e5m2),
    Cast("e4m3fnuz", torch.float8_e4m3fnuz),
    Cast("e5m2fnuz", torch.float8_e5m2fnuz),
    Cast("e8m0", torch.float8_e8m0fnu),
]
# the fp8q options under which torch's cast is fp8q's (e8m0: for positive finite inputs)
TORCH_OVERFLOW = {"e4m3fn": "saturate", "e5m2": "inf-nan", "e4m3fnuz": "inf-nan", "e5m2fnuz": "inf-nan", "e8m0": "inf-nan"}
SOURCES = ["f32", "bf16", "f16", "f64"]


def _ids(casts):
    return [pytest.param(c, id=c.name) for c in casts]


# ---------------------------------------------------------------------------------------------
# inputs


def structured_f32() -> np.ndarray:
    """~9M f32 bit patterns: every sign and exponent field, the top 12 mantissa bits in every
    combination, and the low 11 bits 0 (values and ties of every fp8 format: at most 5
    significant bits), 1 (just above), 0x400 (halfway at bit 10) and 0x7FF (just below the next
    pattern); plus a seeded sample of random f32 patterns and the f32 specials."""
    sign = np.arange(2, dtype=np.uint32)[:, None, None, None] << 31
    exp = np.arange(256, dtype=np.uint32)[None, :, None, None] << 23
    hi = np.arange(1 << 12, dtype=np.uint32)[None, None, :, None] << 11
    lo = np.array([0, 1, 0x400, 0x7FF], dtype=np.uint32)[None, None, None, :]
    grid = (sign | exp | hi | lo).ravel()
    rng = np.random.default_rng(314159)
    rand = rng.integers(0, 1 << 32, size=1 << 20, dtype=np.uint64).astype(np.uint32)
    return np.concatenate([grid, rand, np.array([0x7FC00000, 0xFFC00000, 0x7F800001], dtype=np.uint32)]).view(np.float32)


_CACHE: dict[str, tuple[torch.Tensor, np.ndarray]] = {}


def source(kind: str) -> tuple[torch.Tensor, np.ndarray]:
    """(the input tensor, its exact values as f64 numpy)."""
    if kind not in _CACHE:
        if kind in ("bf16", "f16"):
            b = torch.from_numpy(np.arange(1 << 16, dtype=np.uint16).view(np.int16).copy())
            x = b.view(torch.bfloat16 if kind == "bf16" else torch.float16)
        elif kind == "f32":
            x = torch.from_numpy(structured_f32())
        else:  # f64 values exact in f32: torch's f64 cast (through f32) is then exact on its first step
            x = source("f32")[0].double()
        _CACHE[kind] = (x, x.double().numpy())
    return _CACHE[kind]


def codes(t: torch.Tensor) -> np.ndarray:
    return t.view(torch.uint8).numpy()


def report(label: str, bad: np.ndarray, x: torch.Tensor, got: np.ndarray, want: np.ndarray, limit: int = 8) -> str:
    it = {2: torch.int16, 4: torch.int32, 8: torch.int64}[x.element_size()]
    mask = (1 << (8 * x.element_size())) - 1
    width = 2 * x.element_size()
    xb = x.view(it)
    lines = [f"{label}: {bad.size} of {got.size} differ; first:"]
    for i in bad[:limit]:
        i = int(i)
        lines.append(
            f"  [{i}] input 0x{int(xb[i]) & mask:0{width}x} ({float(x[i])!r}): "
            f"fp8q 0x{int(got[i]):02x}, torch 0x{int(want[i]):02x}"
        )
    return "\n".join(lines)


def assert_codes(label: str, x: torch.Tensor, got: np.ndarray, want: np.ndarray, where: np.ndarray) -> None:
    bad = np.flatnonzero((got != want) & where)
    assert bad.size == 0, report(label, bad, x, got, want)


def e8m0_torch_defect(v: np.ndarray) -> np.ndarray:
    """|x| strictly between 2^-127 and 1.5 * 2^-127: torch gives 2^-126, the nearer is 2^-127."""
    a = np.abs(v)
    return (a > E8M0_MIN) & (a < 1.5 * E8M0_MIN)


# ---------------------------------------------------------------------------------------------
# encoding


@pytest.mark.parametrize("src", SOURCES)
@pytest.mark.parametrize("c", _ids([c for c in CASTS if c.name != "e8m0"]))
def test_cast_to_float8_equals_torch(c: Cast, src: str):
    """torch's x.to(float8) is fp8q.convert(x, rne, TORCH_OVERFLOW) bit for bit (e5m2's NaN: a
    NaN of the same sign)."""
    x, v = source(src)
    want = codes(x.to(c.dtype))
    got = codes(fp8q.convert(x, c.dtype, rounding="rne", overflow=TORCH_OVERFLOW[c.name]))
    nan = np.isnan(v)
    if c.name == "e5m2":
        # torch's NaN is 0x7F/0xFF, fp8q's canonical 0x7E/0xFE: compare NaN-ness and sign
        is_nan_code = lambda k: ((k & 0x7C) == 0x7C) & ((k & 0x03) != 0)  # noqa: E731
        assert is_nan_code(want[nan]).all() and is_nan_code(got[nan]).all()
        assert ((want[nan] >> 7) == (got[nan] >> 7)).all() and ((got[nan] >> 7) == np.signbit(v[nan])).all()
        assert_codes(f"{src} -> {c.name}", x, got, want, ~nan)
    else:
        assert_codes(f"{src} -> {c.name}", x, got, want, np.ones_like(nan))
    assert nan.any() and np.isinf(v).any()
    # the other overflow policy really differs from torch: the inputs reach the overflow region
    other = "inf-nan" if TORCH_OVERFLOW[c.name] == "saturate" else "saturate"
    assert (codes(fp8q.convert(x, c.dtype, overflow=other)) != want)[~nan].any()


@pytest.mark.parametrize("src", SOURCES)
def test_cast_to_e8m0_equals_torch(src: str):
    """torch's x.to(float8_e8m0fnu), case by case (see the module docstring)."""
    dt = torch.float8_e8m0fnu
    x, v = source(src)
    want = codes(x.to(dt))
    inf_nan = codes(fp8q.convert(x, dt, rounding="rne", overflow="inf-nan"))
    sat = codes(fp8q.convert(x, dt, rounding="rne", overflow="saturate"))
    defect = e8m0_torch_defect(v)
    nan, zero = np.isnan(v), v == 0
    pos = ~nan & ~zero & ~np.signbit(v)  # positive, +Inf included
    neg = ~nan & ~zero & np.signbit(v)
    assert defect.any() == (src in ("f32", "bf16", "f64")) and pos.sum() > 1000 and neg.sum() > 1000
    # positive values and +Inf, NaN: inf-nan; the defect interval: 0x00, the nearest
    assert_codes(f"{src} -> e8m0 (x > 0, inf-nan)", x, inf_nan, want, pos & ~defect)
    assert_codes(f"{src} -> e8m0 (NaN)", x, inf_nan, want, nan)
    assert_codes(f"{src} -> e8m0 (2^-127 < x < 1.5*2^-127)", x, inf_nan, np.zeros_like(want), pos & defect)
    # +/-0: saturate (0x00)
    assert_codes(f"{src} -> e8m0 (zero, saturate)", x, sat, want, zero)
    # negative x: torch gives the code of |x|; fp8q's own rule is 0x00 (saturate) / NaN (inf-nan)
    absolute = codes(fp8q.convert(x.abs(), dt, rounding="rne", overflow="inf-nan"))
    assert_codes(f"{src} -> e8m0 (torch(x) = fp8q(|x|) for x < 0)", x, absolute, want, neg & ~defect)
    assert_codes(f"{src} -> e8m0 (2^-127 < |x| < 1.5*2^-127, x < 0)", x, absolute, np.zeros_like(want), neg & defect)
    assert (sat[neg] == 0x00).all() and (inf_nan[neg] == 0xFF).all()


def test_cast_to_float4_e2m1fn_x2():
    """torch has no CPU cast into float4_e2m1fn_x2 (or out of it); if a later torch has one, it
    must agree with fp8q's e2m1 under either overflow policy (fp4 always saturates)."""
    x = torch.tensor([0.0, 0.25, 0.75, 1.25, 2.5, 3.5, 5.0, 7.0, -0.25, -5.0, 1e9, -float("inf")])
    try:
        want = x.to(torch.float4_e2m1fn_x2)
    except (NotImplementedError, RuntimeError) as e:
        pytest.skip(f"torch {torch.__version__} has no CPU cast to float4_e2m1fn_x2: {str(e).splitlines()[0]}")
    got = fp8q.convert(x, "e2m1")
    assert torch.equal(got.view(torch.uint8), want.view(torch.uint8))


# ---------------------------------------------------------------------------------------------
# decoding


DECODE = {
    "f32": (torch.float32, torch.int32),
    "f64": (torch.float64, torch.int64),
    "bf16": (torch.bfloat16, torch.int16),
    "f16": (torch.float16, torch.int16),
}


@pytest.mark.parametrize("to", list(DECODE))
@pytest.mark.parametrize("c", _ids(CASTS))
def test_decode_every_code_equals_torch(c: Cast, to: str):
    """codes.to(to) for all 256 codes = fp8q's decoding (overflow inf-nan): bits for numbers, NaN for NaN."""
    dt, it = DECODE[to]
    k = torch.arange(256, dtype=torch.uint8).view(c.dtype)
    want = k.to(dt)
    got = fp8q.convert(k, dt, overflow="inf-nan")
    wn, gn = torch.isnan(want), torch.isnan(got)
    bad = ((wn != gn) | (~wn & (want.view(it) != got.view(it)))).nonzero().flatten().tolist()
    assert not bad, f"{c.name} -> {to}: codes " + ", ".join(
        f"0x{i:02x} (fp8q {got[i].item()!r}, torch {want[i].item()!r})" for i in bad[:8]
    )
    assert int((~wn).sum()) >= 249


@pytest.mark.parametrize("to", ["f32", "f16"])
@pytest.mark.parametrize("c", _ids(CASTS))
def test_decode_default_saturate(c: Cast, to: str):
    """Under fp8q's default overflow="saturate" decoding keeps Inf codes Inf (the target holds every
    value: exact under both policies); a finite value past the target's range (e8m0 into f16) is
    +/-max of the target."""
    dt, it = DECODE[to]
    k = torch.arange(256, dtype=torch.uint8).view(c.dtype)
    want = k.to(dt)
    tmax = torch.finfo(dt).max
    beyond = torch.isinf(want) & torch.isfinite(k.to(torch.float64))
    want = torch.where(beyond & (want > 0), tmax, torch.where(beyond & (want < 0), -tmax, want)).to(dt)
    got = fp8q.convert(k, dt)
    wn = torch.isnan(want)
    bad = ((wn != torch.isnan(got)) | (~wn & (want.view(it) != got.view(it)))).nonzero().flatten().tolist()
    assert not bad, f"{c.name} -> {to} (saturate): codes " + ", ".join(
        f"0x{i:02x} (fp8q {got[i].item()!r}, expected {want[i].item()!r})" for i in bad[:8]
    )


# ---------------------------------------------------------------------------------------------
# f32 -> bf16 / f16 (fp8q's pattern paths and their AVX2 forms)


def _f32_sweep() -> torch.Tensor:
    """Every sign and exponent with every pattern of the 13 low mantissa bits over random high
    bits, shuffled so that NaN, Inf, overflow, subnormal and ordinary values share vectors."""
    g = torch.Generator().manual_seed(5)
    top = torch.arange(512, dtype=torch.int64) << 23  # sign and exponent
    high = torch.randint(0, 1 << 10, (512, 1), generator=g, dtype=torch.int64) << 13
    bits = (top[:, None] | high | torch.arange(1 << 13, dtype=torch.int64)[None, :]).flatten()
    bits = bits[torch.randperm(bits.numel(), generator=g)]
    return (bits - ((bits >> 31) << 32)).to(torch.int32).view(torch.float32)


@pytest.mark.parametrize("dt,it", [(torch.bfloat16, torch.int16), (torch.float16, torch.int16)])
def test_f32_to_bf16_and_f16_equal_torch(dt: torch.dtype, it: torch.dtype):
    """fp8q.convert(f32, bf16 / f16, overflow="inf-nan") = torch's x.to(dt), bit for bit on every
    non-NaN input (4M patterns: every exponent, subnormals, the overflow boundary, Inf); NaN
    inputs give NaN in both (torch keeps payload bits, fp8q gives its canonical NaN)."""
    x = _f32_sweep()
    want = x.to(dt)
    got = fp8q.convert(x, dt, overflow="inf-nan")
    xn = torch.isnan(x)
    assert torch.isnan(got[xn]).all() and torch.isnan(want[xn]).all()
    bad = (got.view(it) != want.view(it)) & ~xn
    idx = bad.nonzero().flatten()[:8].tolist()
    assert not idx, ", ".join(f"f32 0x{int(x.view(torch.int32)[i]) & 0xFFFFFFFF:08x}: fp8q 0x{int(got.view(it)[i]) & 0xFFFF:04x}, "
                              f"torch 0x{int(want.view(it)[i]) & 0xFFFF:04x}" for i in idx)
