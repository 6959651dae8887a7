"""Run the Examples sections of every module's docstrings, subpackages included."""

import doctest
import importlib
import pkgutil

import gpusimhash

MODULES = sorted(
    module.name
    for module in pkgutil.walk_packages(gpusimhash.__path__, prefix="gpusimhash.")
    if not module.name.endswith("__main__")
)


def test_every_subpackage_is_walked():
    packages = ("_cpu", "_gpu", "cli", "cluster", "datasets", "dedup", "index", "io", "join")
    for package in (*packages, "verify", "distributed"):
        assert any(name.startswith(f"gpusimhash.{package}.") for name in MODULES), package


def test_docstring_examples_run():
    attempted, failed = 0, []
    for name in MODULES:
        result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
        attempted += result.attempted
        if result.failed:
            failed.append(name)
    assert failed == []
    assert attempted >= 250  # 263 examples today: a drop means examples were lost


def test_the_public_api_has_examples():
    for name in ("fingerprint", "SimHashIndex", "near_duplicates", "TextFeaturizer", "hamming"):
        assert ">>>" in getattr(gpusimhash, name).__doc__, name


def test_every_public_name_loads_lazily_and_is_listed():
    assert sorted(gpusimhash._PUBLIC) == sorted(set(gpusimhash.__all__) - {"__version__"})
    for name in gpusimhash.__all__:
        assert getattr(gpusimhash, name) is not None, name
