"""Whether a Ctrl-C has reached the command line, however an import or a library reported it.

A Ctrl-C that lands while a compiled extension is importing can surface as an ``ImportError``
with no ``KeyboardInterrupt`` in its chain (NumPy's "IMPORTANT: PLEASE READ THIS" message, for
one), so the command line records the signal itself.
"""

from __future__ import annotations

import signal
from types import FrameType

_seen = False


def install() -> None:
    """Record every SIGINT before raising ``KeyboardInterrupt``, as Python's own handler does."""
    signal.signal(signal.SIGINT, _record)


def _record(signum: int, frame: FrameType | None) -> None:
    """Note the interrupt, then interrupt."""
    global _seen
    _seen = True
    raise KeyboardInterrupt


def seen() -> bool:
    """Return whether a SIGINT has arrived since `install`."""
    return _seen
