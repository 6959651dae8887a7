"""Run the Examples sections of the public modules' docstrings."""

import doctest
import importlib

import pytest

MODULES = [
    "gpusimhash._backend",
    "gpusimhash._batching",
    "gpusimhash.codes",
    "gpusimhash.distributed",
    "gpusimhash.features",
    "gpusimhash.fingerprint",
    "gpusimhash.fixedpoint",
    "gpusimhash.hashing",
    "gpusimhash.text",
    "gpusimhash.unicode_tables",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0, f"{name} has no examples"
    assert result.failed == 0
