"""fp8q's conversions against ml_dtypes, an independent implementation of the same formats.

ml_dtypes (0.5.4 here) has every narrow format of fp8q: float8_e4m3fn, float8_e4m3 (IEEE-style,
max 240, Inf = 0x78: Trainium2's e4m3, checked below), float8_e5m2, float8_e4m3fnuz,
float8_e5m2fnuz, float8_e3m4, float8_e8m0fnu, float6_e2m3fn, float6_e3m2fn, float4_e2m1fn
(fp6 / fp4 codes one a byte, in the low bits, like fp8q's uint8 codes).

What ml_dtypes computes, found by reading its source (include/float8.h ``ConvertImpl``,
include/mxfloat.h, _src/custom_float.h ``NPyCast``) and checked empirically by these tests:

* Every cast rounds to nearest-even. The float8 casts (and e8m0) do NOT saturate: a rounded
  magnitude above max finite, and +/-Inf, give Inf where the format has it (e4m3, e5m2, e3m4)
  and NaN where it has not (e4m3fn 0x7F/0xFF, fnuz 0x80, e8m0 0xFF): fp8q's
  ``overflow="inf-nan"``. fp8q's ``overflow="saturate"`` is compared with ml_dtypes' result
  clipped to +/-max finite (derivation at ``saturated_oracle``).
* fp6 / fp4 have neither Inf nor NaN and ml_dtypes saturates them (its ``infinity()`` is max
  finite): fp8q's result under either overflow policy.
* NaN gives the canonical NaN with the sign kept (e4m3fn 0x7F/0xFF, e4m3 0x7C/0xFC, e5m2
  0x7E/0xFE, e3m4 0x78/0xF8), fnuz 0x80, e8m0 0xFF: as fp8q.
* e8m0 (no zero, no sign): zero, negative values and -Inf give NaN (0xFF), as fp8q's inf-nan;
  a tie 1.5 * 2^k rounds up; a positive value below 2^-127 gives 0x00.

Where ml_dtypes and fp8q define different results, the tests compare where they define the
same one and check the rest against the definition in docs/numerics.md:

* ml_dtypes casts every numpy source through float32 (``NPyCast``: ``To(float(from))``), so
  bf16 and f16 (exact in f32) compare directly, but f64 is rounded twice (464.0000001 ->
  f32 464 -> e4m3fn 448, where fp8q's single rounding gives 480, i.e. NaN under inf-nan).
  f64 inputs are compared (a) where they are exact in f32 and (b) in general against
  ml_dtypes applied to the f64 value rounded to f32 by round-to-odd, which makes the second
  rounding correct (Boldo and Melquiond, "When double rounding is odd", 2005; f32 has more than
  p + 2 bits for every target here).
* e8m0 from a float32 subnormal: ml_dtypes 0.5.4 rounds every value strictly between 2^-127
  and 1.5 * 2^-127 (f32 bits 0x00400001..0x005FFFFF, bf16 0x0041..0x005F) UP to 2^-126 (code
  0x01), although 2^-127 (code 0x00) is the nearer; fp8q gives 0x00. These inputs are checked
  against 0x00, the nearest e8m0 value, instead of ml_dtypes (a defect of ml_dtypes).
* NaN into fp6 / fp4: ml_dtypes' ``quiet_NaN()`` is -0 and it applies the NaN's sign to it,
  so +NaN gives -0 and -NaN gives +0. fp8q raises ValueError (``nan="error"``) or gives zero
  with the NaN's own sign (``nan="zero"``); NaN inputs are checked against that definition.
* Decoding: ml_dtypes decodes the fnuz NaN 0x80 as a NaN with the sign bit set (0x80 has it),
  fp8q as the positive default NaN (fnuz NaN has no sign); elsewhere the NaN signs agree.
  Decoding into a format that holds every value is exact under both overflow policies (Inf
  kept); e8m0 past f16's range saturates under the default ``overflow="saturate"``, so the
  bit-exact decode tests use ``overflow="inf-nan"``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pytest
import torch

import fp8q
from fp8q.formats import FORMATS, unpack_fp4

ml_dtypes = pytest.importorskip("ml_dtypes")

# numpy warns when it casts NaNs and overflows between its float types; those are inputs here
pytestmark = [
    pytest.mark.filterwarnings("ignore:invalid value encountered in cast:RuntimeWarning"),
    pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning"),
]

F32_MIN_NORMAL = float(np.finfo(np.float32).tiny)  # 2^-126
E8M0_MIN = 2.0**-127


@dataclass(frozen=True)
class Target:
    name: str  # fp8q's format name
    ml_name: str  # ml_dtypes' attribute
    bits: int

    @property
    def ml(self):
        return getattr(ml_dtypes, self.ml_name)

    @property
    def has_nan(self) -> bool:
        return self.name not in ("e2m3", "e3m2", "e2m1")


TARGETS = [
    Target("e4m3fn", "float8_e4m3fn", 8),
    Target("e4m3", "float8_e4m3", 8),
    Target("e5m2", "float8_e5m2", 8),
    Target("e4m3fnuz", "float8_e4m3fnuz", 8),
    Target("e5m2fnuz", "float8_e5m2fnuz", 8),
    Target("e3m4", "float8_e3m4", 8),
    Target("e8m0", "float8_e8m0fnu", 8),
    Target("e2m3", "float6_e2m3fn", 6),
    Target("e3m2", "float6_e3m2fn", 6),
    Target("e2m1", "float4_e2m1fn", 4),
]
NAN_TARGETS = [t for t in TARGETS if t.has_nan]  # float8 and e8m0: ml_dtypes does not saturate
FINITE_TARGETS = [t for t in TARGETS if not t.has_nan]  # fp6 / fp4: ml_dtypes saturates


def _param(targets):
    return [pytest.param(t, id=t.name) for t in targets]


@pytest.fixture(autouse=True)
def _have_format(request):
    t = getattr(getattr(request.node, "callspec", None), "params", {}).get("t")
    if t is not None and not hasattr(ml_dtypes, t.ml_name):
        pytest.skip(f"ml_dtypes {ml_dtypes.__version__} has no {t.ml_name}")


# ---------------------------------------------------------------------------------------------
# helpers


def ml_encode(x: np.ndarray, t: Target) -> np.ndarray:
    """ml_dtypes' cast of x (any numpy float dtype, or ml_dtypes.bfloat16) to t, as uint8 codes."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # "invalid value encountered in cast"
        codes = x.astype(t.ml).view(np.uint8)
    assert int(codes.max(initial=0)) >> t.bits == 0, f"ml_dtypes gave a {t.name} code above {t.bits} bits"
    return codes


def ml_decode(codes: np.ndarray, t: Target, dtype) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return codes.view(t.ml).astype(dtype)


def fp8q_encode(x: torch.Tensor, t: Target, **kw) -> np.ndarray:
    """fp8q.convert(x, t) as uint8 codes one a byte (e2m1 unpacked)."""
    n = x.numel()
    if t.name == "e2m1" and n % 2:
        x = torch.cat((x, torch.zeros(1, dtype=x.dtype)))
    out = fp8q.convert(x, t.name, rounding="rne", **kw)
    codes = unpack_fp4(out) if t.name == "e2m1" else out.view(torch.uint8)
    return codes.numpy()[:n]


def max_code(t: Target, negative: bool) -> int:
    """The code of +/-max finite, from ml_dtypes' own finfo."""
    m = float(ml_dtypes.finfo(t.ml).max)
    return int(ml_encode(np.array([-m if negative else m], dtype=np.float32), t)[0])


def bits_of(x: np.ndarray) -> np.ndarray:
    return x.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[x.dtype.itemsize])


def report(label: str, bad: np.ndarray, x: np.ndarray, got: np.ndarray, want: np.ndarray, limit: int = 8) -> str:
    width = 2 * x.dtype.itemsize
    xb = bits_of(x)
    lines = [f"{label}: {bad.size} of {got.size} differ; first:"]
    for i in bad[:limit]:
        lines.append(
            f"  [{i}] input 0x{int(xb[i]):0{width}x} ({float(x[i].astype(np.float64))!r}): "
            f"fp8q 0x{int(got[i]):02x}, expected 0x{int(want[i]):02x}"
        )
    return "\n".join(lines)


def assert_codes(label: str, x: np.ndarray, got: np.ndarray, want: np.ndarray, where: np.ndarray | None = None) -> None:
    assert got.shape == want.shape == x.shape
    differ = got != want
    if where is not None:
        differ &= where
    bad = np.flatnonzero(differ)
    assert bad.size == 0, report(label, bad, x, got, want)


def e8m0_ml_defect(value: np.ndarray) -> np.ndarray:
    """Inputs strictly between 2^-127 and 1.5 * 2^-127, where ml_dtypes 0.5.4 gives 2^-126."""
    v = value.astype(np.float64)
    return (v > E8M0_MIN) & (v < 1.5 * E8M0_MIN)


def native_oracle(x: np.ndarray, t: Target, ml_codes: np.ndarray) -> np.ndarray:
    """ml_dtypes' codes, corrected where ml_dtypes is known wrong (e8m0 near 2^-127, above)."""
    want = ml_codes.copy()
    if t.name == "e8m0":
        want[e8m0_ml_defect(x)] = 0x00  # 2^-127 is the nearest e8m0 value: |x - 2^-127| < 2^-128
    return want


def saturated_oracle(x: np.ndarray, t: Target, ml_codes: np.ndarray) -> np.ndarray:
    """fp8q's overflow="saturate" result, derived from ml_dtypes' non-saturating cast.

    Both round the same way (nearest-even on the grid extended past max finite); they differ only
    where the rounded magnitude exceeds max finite or the input is +/-Inf: ml_dtypes gives
    Inf / NaN there, saturate gives max finite with the input's sign. So for every non-NaN input
    whose ml_dtypes result is not finite, the expectation is +/-max (by the input's sign; fnuz's
    overflow NaN 0x80 has lost it). NaN inputs keep ml_dtypes' NaN.
    e8m0 (no zero, unsigned): zero and negative inputs (-0, -Inf included) give 0x00, the
    smallest value 2^-127, and a positive overflow or +Inf gives 0xFE (2^127).
    """
    want = native_oracle(x, t, ml_codes)
    xv = x.astype(np.float32)
    is_nan = np.isnan(xv)
    neg = np.signbit(xv)
    overflow = ~is_nan & ~np.isfinite(ml_decode(ml_codes, t, np.float32))
    if t.name == "e8m0":
        nonpositive = ~is_nan & (neg | (xv == 0))
        want[nonpositive] = 0x00
        want[overflow & ~nonpositive] = max_code(t, False)
    else:
        want[overflow & ~neg] = max_code(t, False)
        want[overflow & neg] = max_code(t, True)
    return want


def all16(kind: str) -> tuple[np.ndarray, torch.Tensor]:
    """Every bf16 or f16 bit pattern: as numpy (ml_dtypes.bfloat16 / float16) and as a tensor."""
    b = np.arange(1 << 16, dtype=np.uint16)
    x = b.view(ml_dtypes.bfloat16 if kind == "bf16" else np.float16)
    xt = torch.from_numpy(b.view(np.int16).copy()).view(torch.bfloat16 if kind == "bf16" else torch.float16)
    return x, xt


def grid(t: Target) -> np.ndarray:
    """The non-negative finite values of t (ml_dtypes' decode), ascending, as f64."""
    codes = np.arange(1 << t.bits, dtype=np.uint8)
    v = ml_decode(codes, t, np.float64)
    v = np.abs(v[np.isfinite(v)])
    return np.unique(v)


def structured_f32(t: Target) -> np.ndarray:
    """f32 inputs at every place t's rounding decides something (both signs).

    Every value of t; every midpoint between neighbours (ties; exact in f32); the midpoint and
    the next grid point past max finite (the overflow boundary); ties below the smallest value;
    one and two f32 ulps on either side of each of these; every power of two of f32 and its
    neighbours (f32 subnormals included); f32 specials; and a seeded sample of random f32 bit
    patterns and random f32 subnormals.
    """
    g = grid(t)
    pts = [g, (g[:-1] + g[1:]) / 2]
    top, below_top = g[-1], g[-2]
    if t.name == "e8m0":  # powers of two only: past 2^127 comes 2^128, the tie is 1.5 * 2^127
        pts.append(np.array([1.5 * top, 0.75 * E8M0_MIN, 0.5 * E8M0_MIN, 1.25 * E8M0_MIN, 1.5 * E8M0_MIN]))
    else:
        ulp = top - below_top
        pts.append(top + ulp * np.array([0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 4.0]))
        tiny = g[1]  # the smallest positive value
        pts.append(tiny * np.array([0.25, 0.5, 0.75, 1.5]))
    p64 = np.concatenate(pts)
    p64 = p64[p64 <= float(np.finfo(np.float32).max)]
    p = p64.astype(np.float32)
    assert np.all(p.astype(np.float64) == p64)  # every point is exact in f32

    e = np.arange(-149, 128, dtype=np.float64)
    pow2 = np.exp2(e).astype(np.float32)
    specials = np.array(
        [0.0, np.inf, np.nan, np.finfo(np.float32).max, np.finfo(np.float32).tiny, np.float32(2.0**-149)],
        dtype=np.float32,
    )
    base = np.concatenate([p, pow2])
    inf32, ninf32 = np.float32(np.inf), np.float32(-np.inf)
    up1 = np.nextafter(base, inf32)
    dn1 = np.nextafter(base, ninf32)
    near = [base, up1, dn1, np.nextafter(up1, inf32), np.nextafter(dn1, ninf32)]
    rng = np.random.default_rng(20240611)
    rand = rng.integers(0, 1 << 32, size=1 << 18, dtype=np.uint64).astype(np.uint32).view(np.float32)
    sub = rng.integers(1, 1 << 23, size=1 << 14, dtype=np.uint32).view(np.float32)
    pos = np.concatenate(near + [specials, sub])
    x = np.concatenate([pos, -pos, rand, np.float32(-np.nan)[None]]).astype(np.float32)
    return x


def round_to_odd_f32(x: np.ndarray) -> np.ndarray:
    """f64 -> f32 rounded to odd: truncate toward zero, and set the last bit if inexact."""
    r = x.astype(np.float32)  # nearest-even, overflow to Inf
    with np.errstate(invalid="ignore"):
        inexact = np.isfinite(x) & (r.astype(np.float64) != x)
    even = (r.view(np.uint32) & 1) == 0
    fix = inexact & even
    r = r.copy()
    toward = np.where(x[fix] > r[fix].astype(np.float64), np.inf, -np.inf).astype(np.float32)
    r[fix] = np.nextafter(r[fix], toward)  # the odd neighbour on x's side
    return r


def f64_near_ties(t: Target) -> np.ndarray:
    """f64 inputs a tiny bit (below f32's resolution) off t's ties and values, both signs."""
    g = grid(t)
    if t.name == "e8m0":
        mids = 1.5 * g
    else:
        mids = np.concatenate([(g[:-1] + g[1:]) / 2, [g[-1] + (g[-1] - g[-2]) / 2]])
    base = np.concatenate([mids, g[g > 0]])
    rel = np.array([2.0**-40, 2.0**-30, 2.0**-26, -(2.0**-40), -(2.0**-30), -(2.0**-26), 0.0])
    x = (base[:, None] * (1.0 + rel[None, :])).ravel()
    rng = np.random.default_rng(7)
    span = np.exp2(rng.uniform(-140.0, 130.0, size=1 << 14)) * rng.uniform(1.0, 2.0, size=1 << 14)
    x = np.concatenate([x, span, [1e300, 2.0**-200, 0.0]])
    return np.concatenate([x, -x])


# ---------------------------------------------------------------------------------------------
# the formats are the same formats


@pytest.mark.parametrize("t", _param(TARGETS))
def test_ml_dtypes_format_is_fp8q_format(t: Target):
    """max finite, min normal and min subnormal of ml_dtypes' type equal fp8q's descriptor."""
    fi = ml_dtypes.finfo(t.ml)
    f = FORMATS[t.name]
    assert fi.bits == f.bits == t.bits
    assert float(fi.max) == f.max_finite
    assert float(fi.smallest_normal) == f.min_normal
    assert float(fi.smallest_subnormal) == f.denorm_min
    if t.name == "e4m3":  # IEEE-style e4m3: max 240 = 0x77, +/-Inf 0x78 / 0xF8, NaN above
        assert float(fi.max) == 240.0
        v = ml_decode(np.array([0x77, 0x78, 0xF8, 0x79, 0x7C, 0x7F], dtype=np.uint8), t, np.float32)
        assert v[0] == 240.0 and v[1] == np.inf and v[2] == -np.inf and np.isnan(v[3:]).all()


# ---------------------------------------------------------------------------------------------
# decoding: every code


DECODE_TARGETS = {
    "f32": (torch.float32, np.float32, torch.int32),
    "f64": (torch.float64, np.float64, torch.int64),
    "bf16": (torch.bfloat16, None, torch.int16),
    "f16": (torch.float16, np.float16, torch.int16),
}


def _decode(t: Target, to: str, overflow: str):
    codes = np.arange(1 << t.bits, dtype=np.uint8)
    tdt, ndt, idt = DECODE_TARGETS[to]
    got_t = fp8q.convert(torch.from_numpy(codes.copy()), tdt, from_format=t.name, overflow=overflow)
    want = ml_decode(codes, t, ndt or ml_dtypes.bfloat16)
    got = got_t.view(idt).numpy().view(bits_of(want).dtype)
    return codes, got, want, got_t.double().numpy()


@pytest.mark.parametrize("to", list(DECODE_TARGETS))
@pytest.mark.parametrize("t", _param(TARGETS))
def test_decode_every_code(t: Target, to: str):
    """code -> f32/f64/bf16/f16 (overflow inf-nan): ml_dtypes' bits; NaN for NaN, same sign."""
    codes, got, want, got_v = _decode(t, to, "inf-nan")
    want_v = want.astype(np.float64)
    wb = bits_of(want)
    got_nan, want_nan = np.isnan(got_v), np.isnan(want_v)
    sign = np.uint64(8 * wb.itemsize - 1)
    differ = (got_nan != want_nan) | (~want_nan & (got != wb))
    if not t.name.endswith("fnuz"):  # fnuz's NaN 0x80 has no sign; ml_dtypes gives -NaN, fp8q +NaN
        differ |= want_nan & ((got.astype(np.uint64) >> sign) != (wb.astype(np.uint64) >> sign))
    else:
        assert want_nan.sum() == 1 and got_nan[0x80]
    bad = np.flatnonzero(differ)
    assert bad.size == 0, "\n".join(
        [f"{t.name} -> {to}: {bad.size} codes differ; first:"]
        + [f"  code 0x{c:02x}: fp8q 0x{int(got[c]):x} ({float(got_v[c])!r}), ml_dtypes 0x{int(wb[c]):x} ({float(want_v[c])!r})" for c in bad[:8]]
    )


@pytest.mark.parametrize("to", ["f32", "f16"])
@pytest.mark.parametrize("t", _param(TARGETS))
def test_decode_default_saturate(t: Target, to: str):
    """Under the default overflow="saturate" decoding is exact where the target holds every value
    (docs/numerics.md, "Widening conversions are exact": Inf codes stay Inf); only a finite value
    past the target's range (e8m0 into f16) becomes +/-max. Otherwise as ml_dtypes decodes."""
    codes, got, want, got_v = _decode(t, to, "saturate")
    want_v = want.astype(np.float64)
    tmax = float(np.finfo(DECODE_TARGETS[to][1]).max)
    beyond = np.isinf(want_v) & np.isfinite(ml_decode(codes, t, np.float64).astype(np.float64))
    expect_v = np.where(beyond, np.copysign(tmax, want_v), want_v)
    nan = np.isnan(want_v)
    bad = np.flatnonzero((np.isnan(got_v) != nan) | (~nan & (np.signbit(got_v) != np.signbit(expect_v))) | (~nan & (got_v != expect_v)))
    assert bad.size == 0, "\n".join(
        [f"{t.name} -> {to} (saturate): {bad.size} codes differ; first:"]
        + [f"  code 0x{c:02x}: fp8q {float(got_v[c])!r}, expected {float(expect_v[c])!r}" for c in bad[:8]]
    )


# ---------------------------------------------------------------------------------------------
# encoding: ml_dtypes' own policy


INPUT_SETS = ["bf16_all", "f16_all", "f32_structured", "f64_exact_in_f32"]


def _inputs(kind: str, t: Target) -> tuple[np.ndarray, torch.Tensor, np.ndarray]:
    """(x as numpy, x as a tensor, the numpy array ml_dtypes casts)."""
    if kind == "bf16_all":
        x, xt = all16("bf16")
        return x, xt, x
    if kind == "f16_all":
        x, xt = all16("f16")
        return x, xt, x
    x = structured_f32(t)
    if kind == "f32_structured":
        return x, torch.from_numpy(x.copy()), x
    # f64 values exact in f32: ml_dtypes' f64 cast (via f32) is then exact on its first step
    x64 = x.astype(np.float64)
    return x64, torch.from_numpy(x64.copy()), x64


@pytest.mark.parametrize("kind", INPUT_SETS)
@pytest.mark.parametrize("t", _param(NAN_TARGETS))
def test_encode_inf_nan_equals_ml_dtypes(t: Target, kind: str):
    """rne + overflow="inf-nan" is ml_dtypes' float8 / e8m0 cast, bit for bit (NaN included)."""
    x, xt, xm = _inputs(kind, t)
    ml = ml_encode(xm, t)
    got = fp8q_encode(xt, t, overflow="inf-nan")
    assert_codes(f"{kind} -> {t.name} (rne, inf-nan)", x, got, native_oracle(x, t, ml))
    assert x.size >= 60000


@pytest.mark.parametrize("kind", INPUT_SETS)
@pytest.mark.parametrize("t", _param(NAN_TARGETS))
def test_encode_saturate_equals_clipped_ml_dtypes(t: Target, kind: str):
    """rne + overflow="saturate" is ml_dtypes' result with overflows clipped to +/-max."""
    x, xt, xm = _inputs(kind, t)
    ml = ml_encode(xm, t)
    want = saturated_oracle(x, t, ml)
    got = fp8q_encode(xt, t, overflow="saturate")
    assert_codes(f"{kind} -> {t.name} (rne, saturate)", x, got, want)
    # the set reaches the overflow region: some inputs really are clipped
    assert int((want != native_oracle(x, t, ml)).sum()) > 0


@pytest.mark.parametrize("overflow", ["saturate", "inf-nan"])
@pytest.mark.parametrize("kind", INPUT_SETS)
@pytest.mark.parametrize("t", _param(FINITE_TARGETS))
def test_encode_fp6_fp4_equals_ml_dtypes(t: Target, kind: str, overflow: str):
    """fp6 / fp4 saturate under either policy, as ml_dtypes; NaN inputs are left to the NaN test
    (ml_dtypes turns +NaN into -0, fp8q keeps the NaN's sign or raises)."""
    x, xt, xm = _inputs(kind, t)
    nan = np.isnan(x.astype(np.float32))
    ml = ml_encode(xm[~nan], t)
    got = fp8q_encode(xt[torch.from_numpy(~nan)], t, overflow=overflow)
    assert_codes(f"{kind} -> {t.name} (rne, {overflow})", x[~nan], got, ml)
    assert int((~nan).sum()) >= 60000


@pytest.mark.parametrize("t", _param(TARGETS))
def test_encode_f64_against_ml_dtypes_after_round_to_odd(t: Target):
    """f64 inputs off ties by less than an f32 ulp, where ml_dtypes' own f64 cast double-rounds.
    Rounding f64 to f32 by round-to-odd first makes ml_dtypes' f32 -> t rounding the correctly
    rounded f64 -> t result, which fp8q (no intermediate format) must give."""
    x = f64_near_ties(t)
    if not t.has_nan:
        overflow = "saturate"
    else:
        overflow = "inf-nan"
    ml = ml_encode(round_to_odd_f32(x), t)
    want = native_oracle(x, t, ml)
    got = fp8q_encode(torch.from_numpy(x.copy()), t, overflow=overflow)
    assert_codes(f"f64 -> {t.name} (rne, {overflow})", x, got, want)
    # the set holds inputs where ml_dtypes' plain f64 cast (double rounding) is wrong
    assert int((ml_encode(x, t) != ml).sum()) > 0


# ---------------------------------------------------------------------------------------------
# NaN into formats without NaN (fp6, fp4): fp8q's definition; ml_dtypes differs


@pytest.mark.parametrize("kind", ["bf16_all", "f16_all", "f32_structured"])
@pytest.mark.parametrize("t", _param(FINITE_TARGETS))
def test_nan_into_fp6_fp4(t: Target, kind: str):
    x, xt, xm = _inputs(kind, t)
    nan = np.isnan(x.astype(np.float32))
    assert nan.sum() >= 2
    nan_t = xt[torch.from_numpy(nan)]
    with pytest.raises(ValueError, match="NaN"):
        fp8q.convert(nan_t, t.name)  # nan="error" is the default
    got = fp8q_encode(nan_t, t, nan="zero")
    want = np.signbit(x[nan].astype(np.float32)).astype(np.uint8) << (t.bits - 1)  # +/-0, the NaN's sign
    assert_codes(f"NaN {kind} -> {t.name} (nan=zero)", x[nan], got, want)
    # the rest of the tensor converts as ml_dtypes does, with the NaNs zeroed
    all_got = fp8q_encode(xt, t, nan="zero")
    ml = ml_encode(xm, t)
    assert_codes(f"{kind} -> {t.name} (nan=zero, non-NaN)", x, all_got, ml, where=~nan)
