"""Run the Examples sections of every module's docstrings."""

import doctest
import importlib
import pkgutil

import pytest

import gpusimhash

MODULES = sorted(
    f"gpusimhash.{module.name}"
    for module in pkgutil.iter_modules(gpusimhash.__path__)
    if module.name != "__main__"
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


def test_the_public_api_has_examples():
    for name in ("fingerprint", "SimHashIndex", "near_duplicates", "TextFeaturizer", "hamming"):
        assert ">>>" in getattr(gpusimhash, name).__doc__, name
