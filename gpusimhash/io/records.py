"""Fields of input records a run needs: lengths, scores, ground-truth labels, annotations.

Each function names the file and document of a bad value (`InputError`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
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
    where: Callable[[int], str],
    row: int,
    number: int,
    duplicate_of: Any,
    similarity: float | None,
) -> dict[str, Any]:
    """Return a record with ``cluster``, ``duplicate_of`` and ``similarity`` added.

    ``number`` is -1 outside clusters; ``duplicate_of`` and ``similarity`` are None for a kept
    document (a similarity that is not finite becomes None). Raises InputError naming the
    record's row (``where(row)``: its file and document) if it has one of those fields already.
    """
    clash = ANNOTATIONS & record.keys()
    if clash:
        raise InputError(
            f"{where(row)}: the record has a field {min(clash)!r}, which annotating would overwrite"
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


def file_rows(path: str | Path) -> Callable[[int], str]:
    """Name the rows of one file in messages: ``"<path>, document <row + 1>"``.

    Examples
    --------
    >>> file_rows("in.jsonl")(1233)
    'in.jsonl, document 1,234'
    """
    return lambda row: f"{path}, document {row + 1:,}"


def record_labels(
    where: Callable[[int], str], batch: Batch, field_name: str, table: dict[Any, int]
) -> np.ndarray:
    """Map the ground-truth labels of a batch's records (hashable JSON scalars) to small integers.

    Parameters
    ----------
    where : callable
        ``where(row)`` names a row of the batch for messages (its file and document number).
    batch : DocumentBatch
        Documents read with their records.
    field_name : str
        The label field.
    table : dict
        The integer of every label seen so far; new labels are added.

    Returns
    -------
    ndarray, shape (len(batch),), dtype int64

    Raises
    ------
    InputError
        A record without the field, or whose label is an object or an array.
    """
    out = np.empty(len(batch), dtype=np.int64)
    for k in range(len(batch)):
        value = record_value(where, batch, k, field_name)
        if isinstance(value, dict | list):
            raise InputError(
                f"{where(int(batch.rows[k]))}: ground-truth label {field_name!r} must be a "
                f"scalar, got {type(value).__name__} {value!r}"
            )
        out[k] = table.setdefault(value, len(table))
    return out


def record_value(where: Callable[[int], str], batch: Batch, k: int, field_name: str) -> Any:
    """Return a field of record ``k`` of a batch, or raise naming its row (``where(row)``)."""
    record = batch.record(k)
    if field_name not in record:
        raise InputError(
            f"{where(int(batch.rows[k]))}: no field {field_name!r} "
            f"(fields: {', '.join(sorted(record))})"
        )
    return record[field_name]


def record_scores(where: Callable[[int], str], batch: Batch, field_name: str) -> np.ndarray:
    """Return the numeric score of every record of a batch (a number, or a string of one).

    Parameters
    ----------
    where : callable
        ``where(row)`` names a row of the batch for messages (its file and document number).
    batch : DocumentBatch
        Documents read with their records.
    field_name : str
        The score field.

    Returns
    -------
    ndarray, shape (len(batch),), dtype float64

    Raises
    ------
    InputError
        A record without the field, or whose score is not a finite number.
    """
    out = np.empty(len(batch))
    for k in range(len(batch)):
        value = record_value(where, batch, k, field_name)
        score = _finite_number(value)
        if score is None:
            raise InputError(
                f"{where(int(batch.rows[k]))}: score field {field_name!r} must be a finite "
                f"number, got {value!r}"
            )
        out[k] = score
    return out


def _finite_number(value: Any) -> float | None:
    """Return a number, or a string of one, as a finite float; None for anything else."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        number = float(value)
    except (ValueError, OverflowError):  # not a number; an int beyond the floats
        return None
    return number if math.isfinite(number) else None
