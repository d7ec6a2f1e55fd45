"""Assertions for a kernel's tests: bit-equal, or within N ULPs, with a readable diff.

The comparison is the C++ library's (``torch.ops.fp8q.compare``, the rule of ``fp8q compare`` and
of the GoogleTest matchers in ``fp8q/testing/matchers.hpp``; docs/validation.md): the package adds
no numerics of its own. Inputs are torch tensors or numpy arrays, float8 dtypes (torch's or
ml_dtypes') and bfloat16 included.

Example:
    >>> import torch, fp8q.testing
    >>> x = torch.tensor([1.0, 2.0, 3.0])
    >>> fp8q.testing.assert_bitwise_equal(x, x.clone())
    >>> y = torch.nextafter(x, torch.tensor(4.0))  # one ULP up
    >>> fp8q.testing.assert_ulps(y, x, ulps=1)
    >>> fp8q.testing.assert_bitwise_equal(y, x)
    Traceback (most recent call last):
    ...
    AssertionError: 3 of 3 f32 elements differ, max 1 ULP; 3 beyond 0 ULP (bitwise)
      [0]  actual 0x3F800001 (1.0000001192092896)  expected 0x3F800000 (1)  1 ULP
    ...
"""

from __future__ import annotations

from .asserts import Comparison, ElementDiff, assert_bitwise_equal, assert_ulps, compare

__all__ = ["Comparison", "ElementDiff", "assert_bitwise_equal", "assert_ulps", "compare"]
