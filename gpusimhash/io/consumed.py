"""Bytes of the input files consumed so far, for a progress bar in bytes with an ETA.

`counting` makes a `Consumed` counter current for a block; the readers announce each file they
open with `opened`, giving its size and a function that tells how far into it they are: the
bytes read from disk (compressed bytes for ``.gz``), or for Parquet the file's size times the
share of its rows read. A file counts whole once the next one is opened. Without a current
counter `opened` does nothing. The counter is held in a context variable, so a generator that
reads (``read_batches``) reports to the counter of the code that iterates it.

Examples
--------
>>> import os, tempfile
>>> from gpusimhash.io.readers import read_batches
>>> path = os.path.join(tempfile.mkdtemp(), "docs.txt")
>>> with open(path, "w") as f:
...     _ = f.write("a cat" + chr(10) + "a dog" + chr(10))
>>> with counting() as consumed:
...     batches = list(read_batches(path))
>>> consumed.bytes, os.path.getsize(path)
(12, 12)
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextvars import ContextVar

__all__ = ["Consumed", "counting", "opened"]


class Consumed:
    """Bytes consumed of the files opened so far (the earlier ones whole)."""

    def __init__(self) -> None:
        self._finished = 0  # bytes of the files before the current one
        self._size = 0
        self._position: Callable[[], int] | None = None

    def opened(self, size: int, position: Callable[[], int]) -> None:
        """Count the current file whole; follow a new one of ``size`` bytes."""
        self._finished += self._size
        self._size, self._position = size, position

    @property
    def bytes(self) -> int:
        """Bytes consumed so far: the earlier files whole, the current one up to its position."""
        current = 0 if self._position is None else min(max(self._position(), 0), self._size)
        return self._finished + current


_CURRENT: ContextVar[Consumed | None] = ContextVar("gpusimhash_consumed", default=None)


@contextlib.contextmanager
def counting() -> Iterator[Consumed]:
    """Count the bytes of the files the readers open inside the block."""
    consumed = Consumed()
    token = _CURRENT.set(consumed)
    try:
        yield consumed
    finally:
        _CURRENT.reset(token)


def opened(size: int, position: Callable[[], int]) -> None:
    """Announce a file of ``size`` bytes to the current counter (nothing without one)."""
    consumed = _CURRENT.get()
    if consumed is not None:
        consumed.opened(size, position)
