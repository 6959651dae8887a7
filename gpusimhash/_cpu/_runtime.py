"""Numba set-up shared by the compiled loops: a cache location that works, thread-safe calls.

* Cache: the loops are compiled once and cached on disk (``cache=True``) in the package's
  ``__pycache__`` or, where that is read-only, in the user's cache folder. Where neither can be
  written (a read-only installation used by an account without a home folder, a read-only
  container image), `ensure_cache_location` points Numba at a private temporary folder for the
  process, removed at exit: the loops compile on each start instead of failing at import.
  ``NUMBA_CACHE_DIR``, when set, always wins.
* Threads: Numba's ``workqueue`` threading layer, the fallback where neither TBB nor the GNU
  OpenMP runtime is installed, aborts the process when two threads run ``parallel=True`` code
  at once. `parallel_call` runs such a function one call at a time under that layer (and for
  the first call, which chooses the layer) and concurrently under TBB and OpenMP.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from numba.core import caching, config
from numba.np.ufunc.parallel import threading_layer

__all__ = ["ensure_cache_location", "parallel_call"]

Result = TypeVar("Result")

_SERIAL = threading.Lock()
_THREADSAFE_LAYERS = ("tbb", "omp")


def _probe() -> None:
    """Stand in for the compiled loops of this folder when asking Numba where it caches."""


def ensure_cache_location() -> str | None:
    """Give Numba a writable cache folder for this package's loops when it has none.

    Returns
    -------
    str or None
        The private temporary folder now used, or None when Numba's own choice works.
    """
    if config.CACHE_DIR:  # type: ignore[attr-defined]
        return None
    try:
        caching.FunctionCache(_probe)  # type: ignore[no-untyped-call]  # what cache=True runs
    except RuntimeError:
        folder = tempfile.mkdtemp(prefix="gpusimhash-numba-")
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        config.CACHE_DIR = folder  # type: ignore[attr-defined]
        return folder
    return None


def parallel_call(function: Callable[..., Result], *args: Any) -> Result:
    """Call a compiled ``parallel=True`` function, serialized unless the layer is thread-safe.

    Parameters
    ----------
    function : callable
        The compiled function.
    *args
        Its arguments.

    Returns
    -------
    object
        What ``function`` returns.
    """
    try:
        threadsafe = threading_layer() in _THREADSAFE_LAYERS  # type: ignore[no-untyped-call]
    except ValueError:  # no parallel code has run yet: this call picks the layer
        threadsafe = False
    if threadsafe:
        return function(*args)
    with _SERIAL:
        return function(*args)


def threads() -> int:
    """Return the worker threads of a join: the CPUs this process may run on, capped.

    The cap is ``NUMBA_NUM_THREADS`` when set (``gpusimhash --threads N`` sets it).
    """
    if hasattr(os, "sched_getaffinity"):
        cpus = max(1, len(os.sched_getaffinity(0)))
    else:
        cpus = max(1, os.cpu_count() or 1)
    cap = os.environ.get("NUMBA_NUM_THREADS", "")
    return min(cpus, int(cap)) if cap.isdigit() and int(cap) > 0 else cpus
