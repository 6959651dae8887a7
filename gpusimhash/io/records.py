"""Fields of input records a run needs: lengths, scores, ground-truth labels, annotations.

Each function names the file and document of a bad value (`InputError`).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from gpusimhash.io.lines import LineBatch
from gpusimhash.io.readers import DocumentBatch as Batch
from gpusimhash.io.readers import InputError

# the fields --annotate adds to every record
ANNOTATIONS = frozenset({"cluster", "duplicate_of", "similarity"})


def annotated(
    record: dict[str, Any],
    source: str,
    row: int,
    number: int,
    duplicate_of: Any,
    similarity: float | None,
) -> dict[str, Any]:
    """Return a record with ``cluster``, ``duplicate_of`` and ``similarity`` added.

    ``number`` is -1 outside clusters; ``duplicate_of`` and ``similarity`` are None for a kept
    document (a similarity that is not finite becomes None). Raises InputError naming the
    source and row if the record has one of those fields already.
    """
    clash = ANNOTATIONS & record.keys()
    if clash:
        raise InputError(
            f"{source}, document {row}: the record has a field {min(clash)!r}, which "
            "annotating would overwrite"
        )
    return {
        **record,
        "cluster": number if number >= 0 else None,
        "duplicate_of": duplicate_of,
        "similarity": similarity if similarity is not None and np.isfinite(similarity) else None,
    }


def texts_with_progress(batches: Iterator[Batch], bar: Any) -> Iterator[str]:
    """Yield every text of a stream of batches, counting them on a progress bar."""
    for batch in batches:
        yield from batch.texts
        bar.update(len(batch))


def text_lengths(batch: Batch | LineBatch) -> np.ndarray:
    """Return each document's length in code points (``len`` of its text)."""
    if isinstance(batch, LineBatch):
        return batch.texts.code_point_counts()
    return np.fromiter(map(len, batch.texts), dtype=np.int64, count=len(batch))


def truth_labels(values: list[Any], table: dict[Any, int], where: str) -> np.ndarray:
    """Map ground-truth labels (any hashable JSON scalar) to small integers."""
    out = np.empty(len(values), dtype=np.int64)
    for k, value in enumerate(values):
        if isinstance(value, dict | list):
            raise InputError(
                f"{where}: ground-truth label must be a scalar, got {type(value).__name__}"
            )
        out[k] = table.setdefault(value, len(table))
    return out


def record_value(path: str | Path, batch: Batch, k: int, field_name: str) -> Any:
    """Return a field of a record, or raise naming the row."""
    record = batch.record(k)
    if field_name not in record:
        raise InputError(
            f"{path}, document {int(batch.rows[k])}: no field {field_name!r} "
            f"(fields: {', '.join(sorted(record))})"
        )
    return record[field_name]


def record_scores(path: str | Path, batch: Batch, field_name: str) -> np.ndarray:
    """Return the numeric score of every record of a batch."""
    out = np.empty(len(batch))
    for k in range(len(batch)):
        value = record_value(path, batch, k, field_name)
        if isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                value = None
        if isinstance(value, bool) or not isinstance(value, int | float) or not np.isfinite(value):
            raise InputError(
                f"{path}, document {int(batch.rows[k])}: score field {field_name!r} must be a "
                f"finite number, got {value!r}"
            )
        out[k] = value
    return out
