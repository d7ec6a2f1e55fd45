"""Loads fp8q's operator library (``torch.ops.fp8q``) once, on import."""

from __future__ import annotations

import os
from pathlib import Path

import torch

MIN_TORCH = (2, 8)
LIBRARY_NAME = "libfp8q_torch.so"


def _torch_version() -> tuple[int, int]:
    parts = torch.__version__.split("+")[0].split(".")
    return int(parts[0]), int(parts[1])


def _library_path() -> Path:
    """The operator library: $FP8Q_TORCH_LIBRARY (a build tree), else the one installed beside the package."""
    env = os.environ.get("FP8Q_TORCH_LIBRARY")
    if env:
        path = Path(env)
        if not path.is_file():
            raise ImportError(f"fp8q: FP8Q_TORCH_LIBRARY={env} is not a file (build it with scripts/build.sh)")
        return path
    path = Path(__file__).resolve().parent / "_lib" / LIBRARY_NAME
    if not path.is_file():
        raise ImportError(
            f"fp8q: no operator library at {path}; install the package with `pip install --no-build-isolation .` "
            "or point FP8Q_TORCH_LIBRARY at a build's torch/libfp8q_torch.so (scripts/python does)"
        )
    return path


def load() -> Path:
    """Loads the library into torch (idempotent) and returns its path."""
    if _torch_version() < MIN_TORCH:
        raise ImportError(
            f"fp8q needs torch >= {MIN_TORCH[0]}.{MIN_TORCH[1]} (float8_e8m0fnu and float4_e2m1fn_x2); "
            f"this is torch {torch.__version__}"
        )
    path = _library_path()
    if not hasattr(torch.ops.fp8q, "convert"):
        torch.ops.load_library(str(path))
    return path
