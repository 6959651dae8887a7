"""How many threads the compiled loops run on: the CPUs this process may use, capped.

Imports nothing compiled, so that asking costs nothing.
"""

from __future__ import annotations

import os

__all__ = ["threads"]


def threads() -> int:
    """Return the threads of the compiled loops: the CPUs this process may run on, capped.

    The cap is ``NUMBA_NUM_THREADS`` when set (``gpusimhash --threads N`` sets it).

    Returns
    -------
    int
        At least 1.
    """
    if hasattr(os, "sched_getaffinity"):
        cpus = max(1, len(os.sched_getaffinity(0)))
    else:
        cpus = max(1, os.cpu_count() or 1)
    cap = os.environ.get("NUMBA_NUM_THREADS", "")
    return min(cpus, int(cap)) if cap.isdigit() and int(cap) > 0 else cpus
