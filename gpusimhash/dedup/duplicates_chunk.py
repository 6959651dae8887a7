"""The duplicates report's records, a chunk of clusters at a time, on one machine and a cluster.

Each record is a cluster of two or more documents: ``cluster``, ``size``, ``kept_id``,
``kept_row``, then the members' ``ids``, ``rows``, Hamming ``distances`` and exact
``similarities`` to the kept one. A `DuplicatesChunk` holds its clusters by column, and
`write_chunk` appends its records to a file.

To JSONL, the lines are spelled by orjson wherever it spells every value as `json` does (the
bytes `RecordWriter.write` writes): ids that are ints or strings, and similarities that are 0
or at least `PLAIN_FLOAT` in size. `json` writes a float as its ``repr``, which turns to an
exponent below 1e-4 where orjson's does not, and writes NaN where orjson writes null. A chunk
holding any other value is written record by record, as before.
"""

from __future__ import annotations

import contextlib
import gc
import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson

from gpusimhash.io.writers import RecordWriter

__all__ = ["DUPLICATES_CHUNK", "PLAIN_FLOAT", "DuplicatesChunk", "chunk_spans", "write_chunk"]

# clusters per write of the duplicates file (a Parquet file's row group)
DUPLICATES_CHUNK = 10_000
# the least size of a float (but 0) that orjson spells as json does (`float.__repr__`)
PLAIN_FLOAT = 1e-4
# a record's line, its lists' items already spelled and joined
_LINE = (
    b'{"cluster": %d, "size": %d, "kept_id": %b, "kept_row": %d, "ids": [%b], "rows": [%b], '
    b'"distances": [%b], "similarities": [%b]}'
)


@dataclass(frozen=True)
class DuplicatesChunk:
    """Clusters ``first`` onwards of the duplicates report, by column.

    Attributes
    ----------
    first : int
        The first cluster's number.
    bounds : list of int
        Cluster ``first + c``'s members are positions ``bounds[c]:bounds[c + 1]`` of the
        members' columns (``bounds[0]`` is 0).
    kept_ids : list
        Each cluster's kept document's id.
    kept_rows : list of int
        Its row.
    ids : list
        Each member's id.
    rows : list of int
        Its row.
    distances : list of int
        Its Hamming distance to the kept document.
    similarities : list of float
        Its similarity to the kept document.
    """

    first: int
    bounds: list[int]
    kept_ids: list[Any]
    kept_rows: list[int]
    ids: list[Any]
    rows: list[int]
    distances: list[int]
    similarities: list[float]

    def records(self) -> list[dict[str, Any]]:
        """Return the clusters' records.

        Examples
        --------
        >>> chunk = DuplicatesChunk(4, [0, 2], ["a"], [0], ["a", "b"], [0, 3], [0, 5], [1.0, 0.9])
        >>> chunk.records()[0]["ids"], chunk.records()[0]["cluster"]
        (['a', 'b'], 4)
        """
        # a record is 5 new containers: the cyclic collector would otherwise run over the
        # whole heap every few hundred records (measured: 0.75 s of 0.8 s at 2M documents)
        with _collector_paused():
            return [
                {
                    "cluster": self.first + c,
                    "size": b - a,
                    "kept_id": self.kept_ids[c],
                    "kept_row": self.kept_rows[c],
                    "ids": self.ids[a:b],
                    "rows": self.rows[a:b],
                    "distances": self.distances[a:b],
                    "similarities": self.similarities[a:b],
                }
                for c, (a, b) in enumerate(itertools.pairwise(self.bounds))
            ]

    def json_lines(self) -> list[bytes] | None:
        """Return the records' JSON lines as `json` spells them, by orjson; None where it cannot.

        None where an id is neither an int nor a string, an int id is beyond 64 bits, a string
        is not valid Unicode, or a similarity is not finite, or below `PLAIN_FLOAT` in size but
        not 0.

        Examples
        --------
        >>> chunk = DuplicatesChunk(0, [0, 2], [7], [7], [7, 9], [7, 9], [0, 3], [1.0, 0.875])
        >>> print(chunk.json_lines()[0].decode())  # doctest: +NORMALIZE_WHITESPACE
        {"cluster": 0, "size": 2, "kept_id": 7, "kept_row": 7, "ids": [7, 9], "rows": [7, 9],
        "distances": [0, 3], "similarities": [1.0, 0.875]}
        >>> DuplicatesChunk(0, [0, 2], [7], [7], [7, 9], [7, 9], [0, 3], [1.0, 1e-5]).json_lines()
        """
        similarities = np.asarray(self.similarities, dtype=np.float64)
        size = np.abs(similarities)
        if not np.all(np.isfinite(similarities) & ((size == 0) | (size >= PLAIN_FLOAT))):
            return None
        if not {type(i) for i in self.ids} | {type(i) for i in self.kept_ids} <= {int, str}:
            return None
        try:
            ids = [orjson.dumps(i) for i in self.ids]
            kept_ids = [orjson.dumps(i) for i in self.kept_ids]
        except orjson.JSONEncodeError:  # an int beyond 64 bits, a lone surrogate
            return None
        rows, distances, values = (
            _items(column) for column in (self.rows, self.distances, self.similarities)
        )
        return [
            _LINE
            % (
                self.first + c,
                b - a,
                kept_ids[c],
                self.kept_rows[c],
                b", ".join(ids[a:b]),
                b", ".join(rows[a:b]),
                b", ".join(distances[a:b]),
                b", ".join(values[a:b]),
            )
            for c, (a, b) in enumerate(itertools.pairwise(self.bounds))
        ]


def chunk_spans(n: int) -> Iterator[tuple[int, int]]:
    """Yield the clusters of each write of ``n``: `DUPLICATES_CHUNK` at a time, then the rest.

    The rest comes last, perhaps empty: the same writes, and so the same Parquet row groups,
    on one machine and on a cluster.

    Examples
    --------
    >>> list(chunk_spans(2 * DUPLICATES_CHUNK + 5))[-2:]
    [(10000, 20000), (20000, 20005)]
    >>> list(chunk_spans(0))
    [(0, 0)]
    """
    full = n - n % DUPLICATES_CHUNK
    for lo in range(0, full, DUPLICATES_CHUNK):
        yield lo, lo + DUPLICATES_CHUNK
    yield full, n


def write_chunk(writer: RecordWriter, chunk: DuplicatesChunk) -> None:
    """Append a chunk's records: their JSON lines by orjson where it can, else the records."""
    lines = chunk.json_lines() if writer.format == "jsonl" else None
    if lines is None:
        writer.write(chunk.records())
    else:
        writer.write_lines(lines)


def _items(values: list[int] | list[float]) -> list[bytes]:
    """Return each number spelled as orjson spells it (no string: no comma inside an item)."""
    return orjson.dumps(values)[1:-1].split(b",") if values else []


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector (if it runs) inside the block."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
