"""Element-by-element copies for compiled loops, cheap to compile.

Assigning an array into a slice (``target[a:b] = source[c:d]``) makes Numba compile the code
that formats its shape-mismatch error (unicode concatenation, ``repr``, ``str``): seconds of a
first run for one line. `copy_run` copies a run of elements in a loop instead.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True, inline="always")
def copy_run(
    target: np.ndarray, at: int, source: np.ndarray, start: int, count: int
) -> None:  # pragma: no cover - compiled
    """Copy ``source[start : start + count]`` into ``target[at : at + count]`` (1-D arrays)."""
    for k in range(count):
        target[at + k] = source[start + k]
