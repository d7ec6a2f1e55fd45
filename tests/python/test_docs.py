"""Every example in docs/python.md and in the package's docstrings runs and prints what it says."""

from __future__ import annotations

import doctest
import importlib
import pkgutil
from pathlib import Path

import pytest

import fp8q

ROOT = Path(__file__).resolve().parents[2]
MODULES = ["fp8q"] + [f"fp8q.{m.name}" for m in pkgutil.iter_modules(fp8q.__path__)]
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def test_docs_python_md():
    result = doctest.testfile(str(ROOT / "docs" / "python.md"), module_relative=False, optionflags=FLAGS)
    assert result.attempted > 20 and result.failed == 0


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=FLAGS)
    assert result.failed == 0
