"""The duplicates report's records, a chunk of clusters at a time, on one machine and a cluster.

Each record is a cluster of two or more documents: ``cluster``, ``size``, ``kept_id``,
``kept_row``, then the members' ``ids``, ``rows``, Hamming ``distances`` and exact
``similarities`` to the kept one. A `DuplicatesChunk` holds its clusters by column, and
`write_chunk` appends its records to a file.

To JSONL, the lines are spelled by orjson wherever it spells every value as `json` does
(`gpusimhash.io.json_spelling`: the bytes `RecordWriter.write` writes); a chunk holding any
other value is written record by record.
"""

from __future__ import annotations

import contextlib
import gc
import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from gpusimhash.io.json_spelling import spelled_floats, spelled_ids, spelled_ints
from gpusimhash.io.writers import RecordWriter

__all__ = ["DUPLICATES_CHUNK", "DuplicatesChunk", "chunk_spans", "write_chunk"]

# clusters per write of the duplicates file (a Parquet file's row group)
DUPLICATES_CHUNK = 10_000
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

        None where an id or a similarity is a value orjson spells otherwise
        (`gpusimhash.io.json_spelling`).

        Examples
        --------
        >>> chunk = DuplicatesChunk(0, [0, 2], [7], [7], [7, 9], [7, 9], [0, 3], [1.0, 0.875])
        >>> print(chunk.json_lines()[0].decode())  # doctest: +NORMALIZE_WHITESPACE
        {"cluster": 0, "size": 2, "kept_id": 7, "kept_row": 7, "ids": [7, 9], "rows": [7, 9],
        "distances": [0, 3], "similarities": [1.0, 0.875]}
        >>> DuplicatesChunk(0, [0, 2], [7], [7], [7, 9], [7, 9], [0, 3], [1.0, 1e-5]).json_lines()
        """
        values = spelled_floats(self.similarities)
        ids, kept_ids = spelled_ids(self.ids), spelled_ids(self.kept_ids)
        if values is None or ids is None or kept_ids is None:
            return None
        rows, distances = spelled_ints(self.rows), spelled_ints(self.distances)
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
