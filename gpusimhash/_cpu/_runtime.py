"""Numba's set-up for the loops still compiled at run time (`_mih_loops`): cache, compile clock.

The loops are compiled once and cached on disk (``cache=True``) in the package's
``__pycache__`` or, where that is read-only, in the user's cache folder. Where neither can be
written (a read-only installation used by an account without a home folder, a read-only
container image), `ensure_cache_location` points Numba at a private temporary folder for the
process, removed at exit: the loops compile on each start instead of failing at import.
``NUMBA_CACHE_DIR``, when set, always wins. A module of Numba loops calls it before it
defines them.

Numba compiles a loop the first time it runs with new argument types, unless that cache holds
it already: a first run is slower by that compile time, and a figure in documents per second
should not count it. `compile_seconds` reads a process-wide counter, fed by a listener on
Numba's ``numba:compile`` events, registered when this module is imported (so before any loop
of this folder is defined); nested compilations (a loop calling another) count once, from the
outermost start to its end, per thread.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
import threading
import time
from typing import Any

from numba.core import caching, config, event

__all__ = ["compile_seconds", "ensure_cache_location"]


class _CompileClock(event.Listener):
    """Add up the time between the outermost start and end of compile events, per thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._local = threading.local()
        self.total = 0.0

    def on_start(self, event: Any) -> None:
        """Note a compilation's start (only the outermost of nested ones is timed)."""
        depth = getattr(self._local, "depth", 0)
        if depth == 0:
            self._local.start = time.perf_counter()
        self._local.depth = depth + 1

    def on_end(self, event: Any) -> None:
        """Add the outermost compilation's duration when it ends."""
        self._local.depth -= 1
        if self._local.depth == 0:
            with self._lock:
                self.total += time.perf_counter() - self._local.start


_CLOCK = _CompileClock()
event.register("numba:compile", _CLOCK)  # type: ignore[no-untyped-call]


def compile_seconds() -> float:
    """Return the seconds this process has spent compiling Numba loops since this import.

    Returns
    -------
    float
    """
    return _CLOCK.total


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
