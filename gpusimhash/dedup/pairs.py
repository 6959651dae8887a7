"""The optional pairs file of a dedup run: every near-duplicate pair, with what decided it.

``pairs.<fmt>`` (``gpusimhash dedup --pairs``) has one record per pair of documents that are
near-duplicates: with verification, every candidate pair whose exact similarity reaches the
threshold (found by verifying every candidate, not only those star clustering needs); without,
every pair within the radius. Each record names both documents (``id_a``, ``id_b``, ``row_a``,
``row_b``, ``row_a < row_b``) and gives their Hamming ``distance`` and exact ``similarity``
(null without verification). Pairs come in row order; the file holds every pair, so it can be
large where documents have many copies (``m`` copies make ``m (m - 1) / 2`` pairs).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from gpusimhash.codes import hamming

__all__ = ["write_pairs"]

CHUNK = 100_000  # records written at a time


def _plain(value: Any) -> Any:
    """Return a NumPy scalar as a Python value (for JSON and Parquet)."""
    return value.item() if isinstance(value, np.generic) else value


def write_pairs(
    folder: Path,
    output_format: str,
    pairs: np.ndarray,
    similarities: np.ndarray | None,
    codes: np.ndarray,
    ids: Sequence[Any] | None,
) -> tuple[str, str]:
    """Write ``pairs.<output_format>`` into ``folder``.

    Parameters
    ----------
    folder : Path
        The run's output folder.
    output_format : {"jsonl", "parquet", "csv"}
        As the run's other outputs.
    pairs : ndarray, shape (m, 2), dtype int64
        Rows of near-duplicate pairs, ``i < j``.
    similarities : ndarray, shape (m,), dtype float64, optional
        Their exact similarities (None: not verified).
    codes : ndarray, shape (n, bits // 8), dtype uint8
        Every document's code.
    ids : sequence, optional
        Every document's id, in row order (None: the rows are the ids).

    Returns
    -------
    name, description : str
        The file's name and what it holds, for the run's list of files.

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> codes = np.array([[0], [1], [0]], dtype=np.uint8)
    >>> pairs = np.array([[0, 1], [0, 2]])
    >>> write_pairs(folder, "jsonl", pairs, np.array([0.9, 1.0]), codes, ["a", "b", "c"])[0]
    'pairs.jsonl'
    >>> print((folder / "pairs.jsonl").read_text().splitlines()[0])
    {"id_a": "a", "id_b": "b", "row_a": 0, "row_b": 1, "distance": 1, "similarity": 0.9}
    """
    from gpusimhash.io.writers import RecordWriter

    path = folder / f"pairs.{output_format}"
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    named = (lambda row: row) if ids is None else ids.__getitem__
    with RecordWriter(path, output_format) as writer:
        for lo in range(0, len(pairs), CHUNK):
            part = pairs[lo : lo + CHUNK]
            distances = hamming(codes[part[:, 0]], codes[part[:, 1]]).tolist()
            values = (
                [None] * len(part)
                if similarities is None
                else similarities[lo : lo + CHUNK].tolist()
            )
            writer.write(
                [
                    {
                        "id_a": _plain(named(a)),
                        "id_b": _plain(named(b)),
                        "row_a": a,
                        "row_b": b,
                        "distance": d,
                        "similarity": s,
                    }
                    for (a, b), d, s in zip(part.tolist(), distances, values, strict=True)
                ]
            )
    what = "verified at the threshold" if similarities is not None else "within the radius"
    return path.name, (
        f"{len(pairs):,} near-duplicate pairs ({what}): both ids and rows, Hamming distance and "
        "exact similarity"
    )
