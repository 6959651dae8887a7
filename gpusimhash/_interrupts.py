"""Whether a Ctrl-C has reached the command line, and when it may stop it.

A Ctrl-C that lands while a compiled extension is importing can surface as an ``ImportError``
with no ``KeyboardInterrupt`` in its chain (NumPy's "IMPORTANT: PLEASE READ THIS" message, for
one), so the command line records the signal itself.

A Ctrl-C must not stop Numba while it compiles: a ``KeyboardInterrupt`` raised between two of
llvmlite's calls leaves an LLVM module that the garbage collector then frees twice, and the
process dies of a segmentation fault instead of exiting 130. While the main thread holds Numba's
compiler lock the interrupt is held back, and raised as soon as the outermost compilation
releases the lock (a compilation takes a few seconds at most).
"""

from __future__ import annotations

import signal
import sys
import threading
from types import FrameType
from typing import Any

_seen = False
_held = False
_release_listener: Any = None


def install() -> None:
    """Record every SIGINT before raising ``KeyboardInterrupt``, as Python's own handler does."""
    signal.signal(signal.SIGINT, _record)


def _record(signum: int, frame: FrameType | None) -> None:
    """Note the interrupt, then interrupt, unless this thread is compiling: then hold it back."""
    global _seen, _held
    _seen = True
    if _compiling():
        _held = True
        _listen_for_release()
        return
    raise KeyboardInterrupt


def _compiler_lock() -> Any:
    """Numba's global compiler lock, or None while Numba has not been imported."""
    module = sys.modules.get("numba.core.compiler_lock")
    return None if module is None else module.global_compiler_lock


def _compiling() -> bool:
    """Return whether the calling thread is inside a Numba compilation (or a cache load)."""
    lock = _compiler_lock()
    return lock is not None and bool(lock.is_locked())


def _listen_for_release() -> None:
    """Have Numba call `_raise_held` each time a thread releases its compiler lock."""
    global _release_listener
    if _release_listener is not None:
        return
    from numba.core import event

    class _Release(event.Listener):
        def on_start(self, event: Any) -> None:
            """Nothing to do when a compilation takes the lock."""

        def on_end(self, event: Any) -> None:
            """Raise the held interrupt once the outermost compilation is over."""
            _raise_held()

    _release_listener = _Release()
    event.register("numba:compiler_lock", _release_listener)  # type: ignore[no-untyped-call]


def _raise_held() -> None:
    """Raise the interrupt held back during a compilation, once no compilation is left.

    Only in the main thread, where Python delivers signals: a worker thread's release raises
    nothing.
    """
    global _held
    if _held and threading.current_thread() is threading.main_thread() and not _compiling():
        _held = False
        raise KeyboardInterrupt


def seen() -> bool:
    """Return whether a SIGINT has arrived since `install`."""
    return _seen
