"""The Arrow schema of Parquet inputs, the one their records are written back with.

Kept and annotated records of a Parquet corpus are written to Parquet with the input's own
schema (read from the files, never inferred from Python values), so every column keeps its
type: structs, maps, lists, binary, timestamps, float16, decimals, dictionaries. Every input
file must have the same columns of the same types (in any order); otherwise the first
difference is an `InputError` naming both files and the column, raised before any work.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from gpusimhash.io.readers import InputError, detect_format, require_pyarrow
from gpusimhash.io.records import ANNOTATIONS

__all__ = ["annotated_schema", "input_schema", "take_rows"]


def input_schema(paths: Sequence[Path], format: str | None) -> Any:
    """Return the Arrow schema shared by Parquet input files (None unless every input is Parquet).

    Parameters
    ----------
    paths : sequence of Path
        The input files, in reading order.
    format : str, optional
        The format they are read as (None: from each file's name).

    Returns
    -------
    pyarrow.Schema or None
        The first file's schema, a field nullable where it is nullable in any file.

    Raises
    ------
    InputError
        A file that is not Parquet, or a column missing from one file or typed differently;
        the message names both files and the column.

    Examples
    --------
    >>> import tempfile, pathlib, pyarrow as pa, pyarrow.parquet as pq
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> pq.write_table(pa.table({"text": ["a"], "n": pa.array([1], pa.int8())}), folder / "a.pq")
    >>> pq.write_table(pa.table({"text": ["b"], "n": [2]}), folder / "b.pq")
    >>> input_schema([folder / "a.pq"], None).field("n").type
    DataType(int8)
    >>> input_schema([folder / "a.pq", folder / "b.pq"], None)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    gpusimhash.io.readers.InputError: .../b.pq: column 'n' is int64, but int8 in .../a.pq: ...
    """
    if not paths or any((format or detect_format(p)) != "parquet" for p in paths):
        return None
    pq = require_pyarrow()
    import pyarrow as pa

    first_path, schema = paths[0], _read_schema(pq, pa, paths[0])
    for path in paths[1:]:
        other = _read_schema(pq, pa, path)
        for field in schema:
            if field.name not in other.names:
                _differ(f"{path}: no column {field.name!r}, which {first_path} has ({field.type})")
            theirs = other.field(field.name).type
            if not theirs.equals(field.type):
                _differ(
                    f"{path}: column {field.name!r} is {theirs}, but {field.type} in {first_path}"
                )
        for field in other:
            if field.name not in schema.names:
                _differ(f"{path}: column {field.name!r} ({field.type}) is not in {first_path}")
        nullable = [f.with_nullable(f.nullable or other.field(f.name).nullable) for f in schema]
        schema = pa.schema(nullable, metadata=schema.metadata)
    return schema


def annotated_schema(schema: Any, id_field: str | None, source: str) -> Any:
    """Return ``schema`` with the columns ``annotate`` adds: cluster, duplicate_of, similarity.

    Parameters
    ----------
    schema : pyarrow.Schema
        The input's.
    id_field : str, optional
        The column of the ids that ``duplicate_of`` holds (None: row numbers, int64).
    source : str
        The input, for messages.

    Returns
    -------
    pyarrow.Schema

    Raises
    ------
    InputError
        The input has one of those columns already.
    """
    import pyarrow as pa

    clash = sorted(ANNOTATIONS & set(schema.names))
    if clash:
        raise InputError(
            f"{source}: the input has a column {clash[0]!r}, which annotating would overwrite"
        )
    id_type = schema.field(id_field).type if id_field in schema.names else pa.int64()
    added = [
        pa.field("cluster", pa.int64()),
        pa.field("duplicate_of", id_type),
        pa.field("similarity", pa.float64()),
    ]
    return pa.schema([*schema, *added], metadata=schema.metadata)


def take_rows(table: Any, rows: np.ndarray) -> Any:
    """Return some rows of an Arrow table, for every column type.

    Slices of runs of consecutive rows, not ``take``: Arrow's ``take`` and ``filter`` have no
    kernel for some types (``string_view``).

    Parameters
    ----------
    table : pyarrow.Table
        The records.
    rows : ndarray, dtype int64
        Increasing row numbers within the table.

    Returns
    -------
    pyarrow.Table
        Those rows, in order, with the table's schema.

    Examples
    --------
    >>> import pyarrow as pa
    >>> table = pa.table({"s": pa.array(list("abcde"), pa.string_view())})
    >>> take_rows(table, np.array([0, 1, 3])).column("s").to_pylist()
    ['a', 'b', 'd']
    """
    import pyarrow as pa

    rows = np.asarray(rows, dtype=np.int64)
    starts = np.flatnonzero(np.diff(rows, prepend=-2) != 1)
    lengths = np.diff(np.append(starts, rows.size))
    pieces = [table.slice(int(rows[s]), int(n)) for s, n in zip(starts, lengths, strict=True)]
    return pa.concat_tables(pieces) if pieces else table.slice(0, 0)


def _read_schema(pq: Any, pa: Any, path: Path) -> Any:
    """Read a Parquet file's Arrow schema (its footer only)."""
    try:
        return pq.read_schema(path)
    except (pa.ArrowException, OSError) as error:
        if isinstance(error, FileNotFoundError | PermissionError | IsADirectoryError):
            raise
        raise InputError(f"{path}: not a readable Parquet file ({error})") from None


def _differ(difference: str) -> None:
    """Raise InputError for a column of one input file that differs from the first file's."""
    raise InputError(
        f"{difference}: Parquet output keeps the input's schema, so every input file needs "
        "the same columns of the same types (or give --output-format jsonl)"
    )
