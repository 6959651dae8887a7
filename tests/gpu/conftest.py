"""The GPU tests' set-up: the kernels compiled once for the CPU emulation (``cuda_emu``)."""

from __future__ import annotations

import pytest
from cuda_emu import emulator


@pytest.fixture(scope="session")
def emulated_kernels(tmp_path_factory: pytest.TempPathFactory):
    """The kernels compiled by g++ with the CUDA emulation header (once per session)."""
    if emulator.compiler() is None:
        pytest.skip("g++ is not installed")
    return emulator.build(tmp_path_factory.mktemp("cuda_emu"))
