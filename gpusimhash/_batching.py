"""Splitting any iterable into bounded lists, so inputs stream in bounded memory."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import TypeVar

Item = TypeVar("Item")


def chunks(items: Iterable[Item], size: int) -> Iterator[list[Item]]:
    """Yield consecutive lists of at most ``size`` items.

    Parameters
    ----------
    items : iterable
        Consumed lazily, once.
    size : int
        Largest list to yield, at least 1.

    Yields
    ------
    list
        The next items, never empty.

    Examples
    --------
    >>> list(chunks(range(5), 2))
    [[0, 1], [2, 3], [4]]
    """
    if isinstance(items, Sequence):
        for start in range(0, len(items), size):
            yield list(items[start : start + size])
        return
    chunk: list[Item] = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk
