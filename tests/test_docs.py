"""Run the Examples sections of every module's docstrings."""

import doctest
import importlib
import pkgutil

import gpusimhash

MODULES = sorted(
    f"gpusimhash.{module.name}"
    for module in pkgutil.iter_modules(gpusimhash.__path__)
    if module.name != "__main__"
)


def test_docstring_examples_run():
    attempted, failed = 0, []
    for name in MODULES:
        result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
        attempted += result.attempted
        if result.failed:
            failed.append(name)
    assert failed == []
    assert attempted >= 120  # 131 examples when written: a drop means examples were lost


def test_the_public_api_has_examples():
    for name in ("fingerprint", "SimHashIndex", "near_duplicates", "TextFeaturizer", "hamming"):
        assert ">>>" in getattr(gpusimhash, name).__doc__, name
