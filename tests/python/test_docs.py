"""Every example in the README, docs/python.md, docs/training.md and the package's docstrings runs
and prints what it says."""

from __future__ import annotations

import doctest
import importlib
import pkgutil
from pathlib import Path

import pytest

import fp8q

ROOT = Path(__file__).resolve().parents[2]
MODULES = ["fp8q"] + [m.name for m in pkgutil.walk_packages(fp8q.__path__, "fp8q.")]
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


@pytest.mark.parametrize("page, examples", [("docs/python.md", 40), ("README.md", 7), ("docs/training.md", 4),
                                             ("docs/validation.md", 10)])
def test_pages(page, examples):
    result = doctest.testfile(str(ROOT / page), module_relative=False, optionflags=FLAGS)
    assert result.attempted >= examples and result.failed == 0


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=FLAGS)
    assert result.failed == 0
