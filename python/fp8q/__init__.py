"""fp8q: FP8 and MX numerics for AWS Trainium, bit-exact, in PyTorch.

The package is a typed layer over the ``torch.ops.fp8q`` operators of fp8q's C++ library; it adds
no numerics of its own, so Python, C++ (``fp8q/torch/ops.hpp``) and the ``fp8q`` tool give the
same bits. Importing it needs no GPU and no network.

Example:
    >>> import torch, fp8q
    >>> q = fp8q.quantize(torch.tensor([[1.0, -2.0], [0.5, 4.0]]), "e4m3fn", granularity="row")
    >>> q.dequantize().tolist()
    [[1.0, -2.0], [0.5, 4.0]]
"""

from __future__ import annotations

from . import _library

_library.load()

from . import calib, formats, testing, trn  # noqa: E402
from .conversion import amax, cast_transpose, convert, hadamard16, scale_from_amax  # noqa: E402
from .matmul import linear, matmul  # noqa: E402
from .quantized import QuantizedTensor, dequantize, from_codes, quantize  # noqa: E402

__version__ = "0.1.0"
__all__ = [
    "QuantizedTensor",
    "amax",
    "calib",
    "cast_transpose",
    "convert",
    "dequantize",
    "formats",
    "from_codes",
    "hadamard16",
    "linear",
    "matmul",
    "quantize",
    "scale_from_amax",
    "testing",
    "trn",
]
