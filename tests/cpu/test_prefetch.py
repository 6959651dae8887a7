"""The prefetch hint compiles for every array the loops prefetch, and changes no result."""

import numpy as np
import pytest
from numba import njit

from gpusimhash._cpu._prefetch import prefetch


@njit
def _sum_with_hints(values, lookahead):
    total = 0.0
    for i in range(values.size):
        prefetch(values, i + lookahead)  # past the end too: a hint never faults
        total += values[i]
    return total


@pytest.mark.parametrize("dtype", [np.uint32, np.int64, np.float32, np.float64])
def test_prefetch_changes_no_result(dtype):
    values = np.arange(1000).astype(dtype)
    for lookahead in (0, 16, 4096):
        assert _sum_with_hints(values, lookahead) == float(values.sum(dtype=np.float64))
