"""fp8q.testing's comparison: arguments to tensors, the library's counts to a report."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional, Union

import torch

from ..formats import FormatLike, format_of, get, name_of

if TYPE_CHECKING:
    import numpy

ArrayLike = Union[torch.Tensor, "numpy.ndarray"]

# ml_dtypes' names (numpy dtypes) -> fp8q formats; these arrays cross as their bytes
_ML_DTYPES = {
    "bfloat16": "bf16",
    "float8_e4m3fn": "e4m3fn",
    "float8_e4m3": "e4m3",
    "float8_e5m2": "e5m2",
    "float8_e4m3fnuz": "e4m3fnuz",
    "float8_e5m2fnuz": "e5m2fnuz",
    "float8_e3m4": "e3m4",
    "float8_e8m0fnu": "e8m0",
    "float6_e2m3fn": "e2m3",
    "float6_e3m2fn": "e3m2",
    "float4_e2m1fn": "e2m1",
}
_MATCH = ("bit-equal", "signed zero", "NaN payload differs", "differ")


@dataclass(frozen=True)
class ElementDiff:
    """One differing element: its index, both codes and values, and the distance."""

    index: tuple[int, ...]
    actual_bits: int
    expected_bits: int
    actual: float
    expected: float
    ulps: Optional[int]  # None: a NaN against a number, or integers (bitwise only)
    what: str  # "1 ULP", "0 ULP (signed zero)", "0 ULP (NaN payload differs)", ...


@dataclass(frozen=True)
class Comparison:
    """The counts of one comparison (the fields of ``fp8q compare --json``)."""

    format: str  # the element format, or "bits" for integers
    bits: int  # bits per element (the hex digits of the report)
    shape: tuple[int, ...]
    tolerance: int
    count: int
    bit_equal: int
    differ: int
    signed_zero: int
    nan_payload: int
    beyond: int
    max_ulps: Optional[int]  # None: a NaN met a number
    worst: tuple[ElementDiff, ...]

    @property
    def ok(self) -> bool:
        """Whether every element is within the tolerance (0: bit-equal)."""
        return self.beyond == 0

    def report(self) -> str:
        """The diff: counts, then the worst elements with index, hex bits and values."""
        # the words of fp8q compare's report
        kinds = (f" ({self.signed_zero} signed zero{'' if self.signed_zero == 1 else 's'})" if self.signed_zero else "") + (
            f" ({self.nan_payload} NaN payload{' differs' if self.nan_payload == 1 else 's differ'})" if self.nan_payload else "")
        dist = "" if self.format == "bits" else f", max {'inf' if self.max_ulps is None else self.max_ulps} ULP"
        tol = "bitwise" if self.tolerance == 0 else f"tolerance {self.tolerance} ULP"
        lines = [f"{self.differ} of {self.count} {self.format} elements differ{kinds}{dist}; "
                 f"{self.beyond} beyond {self.tolerance} ULP ({tol})"]
        for d in self.worst:
            idx = "[" + ", ".join(map(str, d.index)) + "]"
            lines.append(f"  {idx}  actual {self._code(d.actual_bits, d.actual)}  "
                         f"expected {self._code(d.expected_bits, d.expected)}  {d.what}")
        return "\n".join(lines)

    def _code(self, bits: int, value: float) -> str:
        # as the C++ code_text: hex of the element's width, value to 17 significant digits
        digits = (self.bits + 3) // 4
        if self.format == "bits":
            return f"0x{bits:0{digits}X}"
        return f"0x{bits:0{digits}X} ({value:.17g})"


def _as_tensor(x: ArrayLike, fmt: Optional[str], arg: str) -> tuple[torch.Tensor, str]:
    """x as a contiguous CPU tensor and the format name the op reads ('' for the dtype's own)."""
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().contiguous(), fmt or ""
    try:
        import numpy as np
    except ImportError:  # pragma: no cover - numpy ships with the environment
        raise TypeError(f"{arg} must be a torch.Tensor, not {type(x).__name__}") from None
    if not isinstance(x, np.ndarray):
        raise TypeError(f"{arg} must be a torch.Tensor or a numpy.ndarray, not {type(x).__name__}")
    a = np.ascontiguousarray(x)
    ml = _ML_DTYPES.get(a.dtype.name)
    if ml == "bf16":
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16), fmt or ""
    if ml is not None:
        return torch.from_numpy(a.view(np.uint8)), fmt or ml
    return torch.from_numpy(a), fmt or ""


def compare(
    actual: ArrayLike,
    expected: ArrayLike,
    *,
    ulps: int = 0,
    worst: int = 5,
    format: Optional[FormatLike] = None,
) -> Comparison:
    """Compares two tensors (or arrays) element by element, bitwise and in ULPs.

    ``format`` names the element format of uint8 codes (e4m3, e3m4, fp6); without it, a float
    dtype's own format is used and integer dtypes compare bitwise. Raises ``AssertionError`` when
    dtype or shape differ.

    Example:
        >>> import torch, fp8q.testing
        >>> c = fp8q.testing.compare(torch.tensor([0.0, 1.0]), torch.tensor([-0.0, 1.0]))
        >>> c.ok, c.bit_equal, c.signed_zero, c.max_ulps
        (False, 1, 1, 0)
    """
    if isinstance(ulps, bool) or not isinstance(ulps, int) or ulps < 0:
        raise ValueError(f"ulps must be an int >= 0, not {ulps!r}")
    name = name_of(format)
    a, fa = _as_tensor(actual, name, "actual")
    e, fe = _as_tensor(expected, name, "expected")
    if a.dtype != e.dtype or fa != fe:
        raise AssertionError(f"dtype {a.dtype}{' ' + fa if fa else ''} against expected {e.dtype}{' ' + fe if fe else ''}")
    if a.shape != e.shape:
        raise AssertionError(f"shape {tuple(a.shape)} against expected {tuple(e.shape)}")
    counts, rows, values = torch.ops.fp8q.compare(a, e, fa, ulps, worst)
    count, bit_equal, differ, signed_zero, nan_payload, beyond, max_ulps = counts.tolist()
    fmt = fa or _own_format(a)
    shape = tuple(a.shape)
    if a.dtype == torch.float4_e2m1fn_x2:  # two codes a byte along the last dimension
        shape = shape[:-1] + (2 * shape[-1],)
    bits = 8 * a.element_size() if fmt == "bits" else _format_bits(fmt)
    mask = (1 << bits) - 1  # codes travel as int64 bits
    diffs = []
    for (index, ab, eb, u, match), (av, ev) in zip(rows.tolist(), values.tolist()):
        if index < 0:
            break
        diffs.append(ElementDiff(_unravel(index, shape), ab & mask, eb & mask, av, ev,
                                 None if u < 0 or fmt == "bits" else u, _what(u, match, fmt)))
    return Comparison(fmt, bits, shape, ulps, count, bit_equal, differ, signed_zero, nan_payload, beyond,
                      None if max_ulps < 0 else max_ulps, tuple(diffs))


def assert_bitwise_equal(actual: ArrayLike, expected: ArrayLike, *, format: Optional[FormatLike] = None,
                         worst: int = 5) -> None:
    """Raises ``AssertionError`` with the diff unless every element is bit-equal.

    +0 against -0 and NaNs of different payloads are 0 ULP apart but not bit-equal: they fail.

    Example:
        >>> import torch, fp8q.testing
        >>> q = torch.tensor([448.0, -2.0]).to(torch.float8_e4m3fn)
        >>> fp8q.testing.assert_bitwise_equal(q, q.clone())
    """
    c = compare(actual, expected, worst=worst, format=format)
    if not c.ok:
        raise AssertionError(c.report())


def assert_ulps(actual: ArrayLike, expected: ArrayLike, *, ulps: int, format: Optional[FormatLike] = None,
                worst: int = 5) -> None:
    """Raises ``AssertionError`` with the diff unless every element is within ``ulps`` ULPs.

    A NaN against a number is beyond every tolerance; integers compare bitwise.

    Example:
        >>> import torch, fp8q.testing
        >>> b = torch.tensor([1.0, 2.0], dtype=torch.bfloat16)
        >>> fp8q.testing.assert_ulps(torch.tensor([1.0078125, 2.0], dtype=torch.bfloat16), b, ulps=1)
    """
    c = compare(actual, expected, ulps=ulps, worst=worst, format=format)
    if not c.ok:
        raise AssertionError(c.report())


def _own_format(t: torch.Tensor) -> str:
    try:
        return format_of(t.dtype)
    except ValueError:
        return "bits"  # integers and bool: bitwise, as the op compares them


def _format_bits(name: str) -> int:
    return get(name).bits


def _unravel(i: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    out = []
    for n in reversed(shape):
        out.append(i % n)
        i //= n
    return tuple(reversed(out))


def _what(u: int, match: int, fmt: str) -> str:
    # the C++ distance_text's words
    if match in (1, 2):
        return f"0 ULP ({_MATCH[match]})"
    if fmt == "bits":
        return "integers differ"
    if u < 0:
        return "NaN against a number"
    return f"{u} ULP" if u == 1 else f"{u} ULPs"

