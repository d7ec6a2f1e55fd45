"""fp8q.testing: assert_bitwise_equal / assert_ulps on prepared pairs (equal, 1 ULP, NaN payloads,
signed zeros, a NaN against a number, shape and dtype mismatches) over torch tensors and numpy
arrays (float8 and bfloat16 included), and the same counts as ``fp8q compare`` on a file written
from the same pair (one rule, the library's)."""

from __future__ import annotations

import json
import subprocess

import ml_dtypes
import numpy as np
import pytest
import torch
from safetensors.torch import save_file

import fp8q.testing
from fp8q.testing import assert_bitwise_equal, assert_ulps


def f32(*bits: int) -> torch.Tensor:
    return torch.tensor(list(bits), dtype=torch.int64).to(torch.int32).view(torch.float32)


def test_equal_tensors_and_arrays_pass():
    x = torch.tensor([[1.0, -0.0], [float("nan"), 448.0]])
    assert_bitwise_equal(x, x.clone())
    assert_bitwise_equal(x.numpy(), x.numpy().copy())
    assert_bitwise_equal(x.to(torch.float8_e4m3fn), x.to(torch.float8_e4m3fn))
    assert_ulps(x.to(torch.bfloat16), x.to(torch.bfloat16), ulps=0)
    assert_bitwise_equal(torch.arange(5), torch.arange(5))  # integers: bitwise


def test_one_ulp_fails_bitwise_and_passes_at_one_ulp():
    want = f32(0x3F800000, 0x40400000)
    got = f32(0x3F800000, 0x40400001)
    with pytest.raises(AssertionError) as e:
        assert_bitwise_equal(got, want)
    assert str(e.value).splitlines() == [
        "1 of 2 f32 elements differ, max 1 ULP; 1 beyond 0 ULP (bitwise)",
        "  [1]  actual 0x40400001 (3.0000002384185791)  expected 0x40400000 (3)  1 ULP",
    ]
    assert_ulps(got, want, ulps=1)


def test_signed_zeros_and_nan_payloads_are_not_bit_equal():
    want = f32(0x00000000, 0x7FC00000, 0x3F800000)
    got = f32(0x80000000, 0x7FC00001, 0x3F800000)
    c = fp8q.testing.compare(got, want)
    assert (c.bit_equal, c.differ, c.signed_zero, c.nan_payload, c.max_ulps, c.ok) == (1, 2, 1, 1, 0, False)
    text = c.report()
    assert "[0]  actual 0x80000000 (-0)  expected 0x00000000 (0)  0 ULP (signed zero)" in text
    assert "[1]  actual 0x7FC00001 (nan)  expected 0x7FC00000 (nan)  0 ULP (NaN payload differs)" in text
    assert_ulps(got, want, ulps=1)  # both are 0 ULP apart


def test_a_nan_against_a_number_fails_every_tolerance():
    with pytest.raises(AssertionError, match=r"max inf ULP.*\n.*NaN against a number"):
        assert_ulps(torch.tensor([float("nan")]), torch.tensor([1.0]), ulps=1000)


def test_float8_codes_with_multi_dimensional_indices():
    want = torch.tensor([[1.0, 448.0], [0.0, 2.0]]).to(torch.float8_e4m3fn)
    got = want.view(torch.uint8).clone()
    got[0, 1] = 0x7D  # 416, one step below 448
    got[1, 0] = 0x80  # -0
    got = got.view(torch.float8_e4m3fn)
    c = fp8q.testing.compare(got, want, worst=2)
    assert [(d.index, d.actual_bits, d.expected_bits, d.ulps) for d in c.worst] == [((0, 1), 0x7D, 0x7E, 1),
                                                                                   ((1, 0), 0x80, 0x00, 0)]
    assert "[0, 1]  actual 0x7D (416)  expected 0x7E (448)  1 ULP" in c.report()
    assert_ulps(got, want, ulps=1)


def test_numpy_ml_dtypes_bfloat16_and_float8():
    b = np.array([1.0, 2.0], dtype=ml_dtypes.bfloat16)
    b_next = np.array([1.0078125, 2.0], dtype=ml_dtypes.bfloat16)
    with pytest.raises(AssertionError, match=r"\[0\]  actual 0x3F81 \(1.0078125\)  expected 0x3F80 \(1\)  1 ULP"):
        assert_bitwise_equal(b_next, b)
    assert_ulps(b_next, b, ulps=1)
    e = np.array([240.0, -1.0], dtype=ml_dtypes.float8_e4m3)  # Trainium2's e4m3 (ml_dtypes has it)
    assert fp8q.testing.compare(e, e).format == "e4m3"
    assert_bitwise_equal(e, e.copy())
    # torch and numpy of the same bits agree
    assert_bitwise_equal(torch.from_numpy(b.view(np.int16)).view(torch.bfloat16),
                         torch.tensor([1.0, 2.0], dtype=torch.bfloat16))


def test_uint8_codes_need_their_format_for_ulps():
    a, b = torch.tensor([0x38], dtype=torch.uint8), torch.tensor([0x39], dtype=torch.uint8)
    assert fp8q.testing.compare(a, b).format == "bits"
    with pytest.raises(AssertionError, match="integers differ"):
        assert_ulps(a, b, ulps=5)  # bitwise without a format
    assert_ulps(a, b, ulps=1, format="e4m3")


def test_shape_and_dtype_mismatches_are_named():
    x = torch.zeros(2, 3)
    with pytest.raises(AssertionError, match=r"shape \(2, 3\) against expected \(3, 2\)"):
        assert_bitwise_equal(x, torch.zeros(3, 2))
    with pytest.raises(AssertionError, match=r"dtype torch.float32 against expected torch.bfloat16"):
        assert_bitwise_equal(x, x.to(torch.bfloat16))
    with pytest.raises(TypeError, match="torch.Tensor or a numpy.ndarray"):
        assert_bitwise_equal([1.0], x)
    with pytest.raises(ValueError, match="ulps must be an int >= 0"):
        assert_ulps(x, x, ulps=-1)


PAIRS = {  # name: (actual, expected)
    "equal": (torch.linspace(-3, 3, 7), torch.linspace(-3, 3, 7)),
    "one_ulp": (f32(0x3F800001, 0x40000000, 0xBF7FFFFF), f32(0x3F800000, 0x40000000, 0xBF800000)),
    "nan_payloads": (f32(0x7FC00001, 0xFFC00000, 0x7F800001), f32(0x7FC00000, 0x7FC00000, 0x7FC00000)),
    "signed_zeros": (f32(0x80000000, 0x00000000), f32(0x00000000, 0x80000000)),
    "nan_vs_number": (f32(0x7FC00000, 0x3F800000), f32(0x3F800000, 0x3F800000)),
    "e5m2": (torch.tensor([1.0, 3.0, -0.0]).to(torch.float8_e5m2), torch.tensor([1.25, 3.0, 0.0]).to(torch.float8_e5m2)),
    "bf16": (torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=torch.bfloat16) + torch.tensor([[0.0, 0.0], [0.015625, 0.0]],
             dtype=torch.bfloat16), torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=torch.bfloat16)),
}


@pytest.mark.parametrize("ulps", [0, 1])
def test_the_counts_are_fp8q_compares(cli, tmp_path, ulps):
    names = sorted(PAIRS)
    save_file({n: PAIRS[n][0] for n in names}, str(tmp_path / "actual.safetensors"))
    save_file({n: PAIRS[n][1] for n in names}, str(tmp_path / "expected.safetensors"))
    done = subprocess.run([str(cli), "compare", str(tmp_path / "actual.safetensors"), str(tmp_path / "expected.safetensors"),
                           "--ulps", str(ulps), "--json"], capture_output=True, text=True)
    report = json.loads(done.stdout)
    by_name = {t["name"]: t for t in report["tensors"]}
    for n in names:
        c = fp8q.testing.compare(*PAIRS[n], ulps=ulps)
        t = by_name[n]
        assert (c.count, c.bit_equal, c.differ, c.signed_zero, c.nan_payload, c.beyond, c.max_ulps) == (
            t["count"], t["bit_equal"], t["differ"], t["signed_zero"], t["nan_payload"], t["beyond"], t["max_ulps"]), n
        assert [list(d.index) for d in c.worst] == [w["index"] for w in t["worst"]], n
        assert [d.what for d in c.worst] == [w["what"] for w in t["worst"]], n
    assert done.returncode == (0 if report["ok"] else 1)
    assert not report["ok"]  # nan_vs_number fails at any tolerance
