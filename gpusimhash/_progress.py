"""Progress of long loops deep inside a stage, reported to the stage's bar without passing it down.

A stage (`gpusimhash.dedup.pipeline.StageTimer`) makes its bar current with `reporting`; a loop
far below it (the join's blocks, for example) announces its work with `expect` and reports each
part with `advance`. Without a current bar both do nothing, so library calls outside a dedup run
pay nothing. The bar is held in a context variable: each thread (and each asyncio task) sees its
own, and work that a loop farms out to worker threads is reported by the loop itself.

Examples
--------
>>> import io
>>> from tqdm import tqdm
>>> bar = tqdm(file=io.StringIO())
>>> with reporting(bar):
...     expect(3)
...     for part in range(3):
...         advance()
>>> bar.total, bar.n
(3, 3)
>>> bar.close()
>>> advance()  # no current bar: nothing happens
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

__all__ = ["advance", "expect", "reporting"]

_BAR: ContextVar[Any] = ContextVar("gpusimhash_progress_bar", default=None)


@contextlib.contextmanager
def reporting(bar: Any) -> Iterator[None]:
    """Make ``bar`` (tqdm-like: ``total``, ``update``, ``refresh``) the current bar in the block."""
    token = _BAR.set(bar)
    try:
        yield
    finally:
        _BAR.reset(token)


def expect(parts: int) -> None:
    """Add ``parts`` to the current bar's total (its ETA counts them)."""
    bar = _BAR.get()
    if bar is not None:
        bar.total = (bar.total or 0) + parts
        bar.refresh()


def advance(parts: int = 1) -> None:
    """Report ``parts`` done on the current bar."""
    bar = _BAR.get()
    if bar is not None:
        bar.update(parts)
