"""The ids of some rows, held as arrays: 16 bytes a row for integer ids, not a dict's 130.

dedup's write pass collects the id of every document in a cluster, for the duplicates report
and the annotations; a dict of Python ints held 59 MB of a 1M-document run's peak for 455k
clustered documents. `RowIds` keeps each batch's rows as an int64 array and its ids as an int64
array when they are all integers (a list otherwise), and answers lookups by binary search.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["RowIds"]


class RowIds(Mapping[int, Any]):
    """Ids of rows appended in increasing row order; a read-only mapping of row to id.

    Examples
    --------
    >>> ids = RowIds()
    >>> ids.append(np.array([2, 5]), [20, 50])
    >>> ids.append(np.array([9]), ["nine"])
    >>> ids[5], ids.get(3), len(ids), ids.take(np.array([2, 9]))
    (50, None, 3, [20, 'nine'])
    >>> ids = RowIds()
    >>> ids.append(np.array([2, 5]), [20, 50])
    >>> ids.take(np.array([5, 2])).tolist()
    [50, 20]
    """

    def __init__(self) -> None:
        self._rows: list[np.ndarray] = []
        self._ids: list[np.ndarray | list[Any]] = []

    def append(self, rows: np.ndarray, ids: Sequence[Any]) -> None:
        """Add the ids of some rows, all after the rows added so far.

        Parameters
        ----------
        rows : ndarray of int
            Ascending rows, after every row added before.
        ids : sequence
            Their ids.

        Raises
        ------
        ValueError
            Rows not ascending or not after those added, or not one id per row.
        """
        rows = np.asarray(rows, dtype=np.int64).reshape(-1)
        if rows.size != len(ids):
            raise ValueError(f"{rows.size} rows and {len(ids)} ids")
        if rows.size == 0:
            return
        last = int(self._rows[-1][-1]) if self._rows else -1
        if rows[0] <= last or np.any(np.diff(rows) <= 0):
            raise ValueError("rows must be ascending and after the rows added before")
        self._rows.append(rows)
        self._ids.append(_compact(ids))

    def __getitem__(self, row: int) -> Any:
        """Return the id of a row (a Python int for an integer id); KeyError if not added."""
        chunk = bisect.bisect_right(self._rows, row, key=lambda rows: int(rows[0])) - 1
        if chunk >= 0:
            rows = self._rows[chunk]
            k = int(np.searchsorted(rows, row))
            if k < rows.size and rows[k] == row:
                found = self._ids[chunk][k]
                return int(found) if isinstance(found, np.integer) else found
        raise KeyError(row)

    def __iter__(self) -> Iterator[int]:
        """Iterate over the rows added, ascending."""
        for rows in self._rows:
            yield from rows.tolist()

    def __len__(self) -> int:
        """Return the number of rows added."""
        return sum(rows.size for rows in self._rows)

    def take(self, rows: np.ndarray) -> np.ndarray | list[Any]:
        """Return the ids of several rows at once.

        Parameters
        ----------
        rows : ndarray of int
            Rows that were added.

        Returns
        -------
        ndarray of int64 or list
            An array when every id is an integer (``tolist`` gives Python ints), else a list.

        Raises
        ------
        KeyError
            A row that was not added.
        """
        rows = np.asarray(rows, dtype=np.int64).reshape(-1)
        held = np.concatenate(self._rows) if self._rows else np.zeros(0, np.int64)
        at = np.minimum(np.searchsorted(held, rows), max(held.size - 1, 0))
        found = held[at] == rows if held.size else np.zeros(rows.size, dtype=bool)
        if not found.all():
            raise KeyError(int(rows[~found][0]))
        if all(isinstance(ids, np.ndarray) for ids in self._ids):
            every: np.ndarray = np.concatenate(self._ids) if self._ids else held
            return every[at]
        flat = [
            i for ids in self._ids for i in (ids.tolist() if isinstance(ids, np.ndarray) else ids)
        ]
        return [flat[k] for k in at.tolist()]


def _compact(ids: Sequence[Any]) -> np.ndarray | list[Any]:
    """Integer ids as an int64 array; anything else (ints beyond int64 too) as a list."""
    if set(map(type, ids)) <= {int}:
        try:
            return np.array(ids, dtype=np.int64)
        except OverflowError:  # an int beyond int64
            pass
    return list(ids)
