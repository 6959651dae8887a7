"""Wall-clock seconds this process has spent compiling Numba loops, so throughput can leave it out.

Only the codes' multi-index hashing join is still compiled at run time, by Numba, and cached
(`gpusimhash._cpu._runtime`, which keeps the clock): a first run that joins codes is slower by
that compile time, and a figure in documents per second should not count it. Until that join's
loops are imported, nothing has compiled, and `seconds` is 0 without importing Numba.

Examples
--------
>>> before = seconds()
>>> seconds() - before >= 0.0
True
"""

from __future__ import annotations

import sys

__all__ = ["seconds"]


def seconds() -> float:
    """Return the seconds spent compiling Numba loops in this process so far.

    Returns
    -------
    float
        Read it before and after a piece of work: the difference is its compile time.
    """
    runtime = sys.modules.get("gpusimhash._cpu._runtime")
    return 0.0 if runtime is None else float(runtime.compile_seconds())
