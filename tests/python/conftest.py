"""Shared fixtures: the fp8q tool of this build (for cross-checks) and a fixed seed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def cli() -> Path:
    """The fp8q command-line tool of the build the tests run against."""
    env = os.environ.get("FP8Q_CLI")
    path = Path(env) if env else Path(os.environ.get("FP8Q_BUILD_DIR", ROOT / "build")) / "fp8q"
    if not path.is_file():
        pytest.fail(f"no fp8q tool at {path}: build with scripts/build.sh")
    return path


@pytest.fixture(scope="session")
def loader_models(tmp_path_factory) -> dict[str, Path]:
    """The loader tests' small transformers models (checkpoints.MODELS), saved once."""
    from checkpoints import MODELS, build

    root = tmp_path_factory.mktemp("models")
    for name, (kind, overrides, shard) in MODELS.items():
        build(kind, overrides, root / name, shard)
    return {name: root / name for name in MODELS}
