"""Shared test setup: hypothesis profiles, and GPU tests skipped where no device answers."""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

from gpusimhash import _backend

# Compiled loops make a test's first example slower than the rest: no per-example deadline.
# CI runs the same examples every time (a property that fails there is found again here with
# the default, random profile, and fixed with its example).
settings.register_profile("gpusimhash", deadline=None)
settings.register_profile("ci", deadline=None, derandomize=True)
settings.load_profile("ci" if os.environ.get("CI") else "gpusimhash")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip ``gpu``-marked tests cleanly when CuPy or a CUDA device is missing."""
    if _backend.gpu_available():
        return
    skip = pytest.mark.skip(reason="needs CuPy and a CUDA device")
    for item in items:
        if item.get_closest_marker("gpu") is not None:
            item.add_marker(skip)
