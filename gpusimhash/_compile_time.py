"""Wall-clock seconds this process has spent compiling Numba loops, so throughput can leave it out.

Numba compiles a loop the first time it runs with new argument types, unless its on-disk cache
(see `gpusimhash._cpu._runtime`) already holds it: a first run after installing is slower by
that compile time, and a figure in documents per second should not count it. `seconds` reads a
process-wide counter, fed by a listener on Numba's ``numba:compile`` events (installed on
first use); nested compilations (a loop calling another) count once, from the outermost start
to its end, per thread.

Examples
--------
>>> before = seconds()
>>> seconds() - before >= 0.0
True
"""

from __future__ import annotations

import threading
import time
from typing import Any

from numba.core import event

__all__ = ["seconds"]


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


_CLOCK: _CompileClock | None = None
_INSTALL = threading.Lock()


def seconds() -> float:
    """Return the seconds spent compiling Numba loops in this process since the first call.

    Returns
    -------
    float
        Read it before and after a piece of work: the difference is its compile time.
    """
    global _CLOCK
    with _INSTALL:
        if _CLOCK is None:
            _CLOCK = _CompileClock()
            event.register("numba:compile", _CLOCK)  # type: ignore[no-untyped-call]
    return _CLOCK.total
