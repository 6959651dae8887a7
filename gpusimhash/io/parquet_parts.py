"""One schema for the Parquet parts of one output, the one a single file of their records has.

The distributed dedup writes one kept (or annotated) part per input partition. Where the
records' schema is inferred (JSONL, CSV or plain-text input), each part infers its own: a part
that keeps no record has no columns, a column holding only nulls in one part has Arrow's null
type there, and a field that only some records have is a column only in their parts. Readers
of the folder (`pyarrow.parquet.read_table`, `pyarrow.dataset`, pandas) take the first part's
schema, so they drop the other parts' columns or refuse their types. `unified_schema` gives
the schema a single file of every part's records would have
(`gpusimhash.io.writers.RecordWriter`): each column where first met, of the type its values
have in every part, null where a part lacks it; the parts that differ from it are rewritten
under it (`gpusimhash.io.writers.rewrite_parquet`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gpusimhash.io.writers import merged_type

__all__ = ["unified_schema"]


def unified_schema(parts: Sequence[tuple[str, Any]]) -> Any:
    """Return the schema of every part's records, as one file of them all would have it.

    Parameters
    ----------
    parts : sequence of (str, pyarrow.Schema or None)
        Each part's name (for messages) and schema, in order; None for a part without a row
        group written.

    Returns
    -------
    pyarrow.Schema
        Every column in the order first met, its type merged over the parts as a single file
        widens its columns (`gpusimhash.io.writers.merged_type`: nulls typed, int64 and
        uint64 as uint64, ints and doubles as doubles, lists and structs merged within).

    Raises
    ------
    ValueError
        A column of types that do not merge in two parts (ints in one, strings in another):
        the message names the column, both parts and both types, as a single file refuses it.

    Examples
    --------
    >>> import pyarrow as pa
    >>> a = pa.schema([("id", pa.int64()), ("tag", pa.null())])
    >>> b = pa.schema([("id", pa.int64()), ("tag", pa.string()), ("year", pa.int64())])
    >>> unified_schema([("part-0", a), ("part-1", None), ("part-2", b)])
    id: int64
    tag: string
    year: int64
    >>> unified_schema([("part-0", a), ("part-1", pa.schema([("id", pa.string())]))])
    Traceback (most recent call last):
    ...
    ValueError: column 'id' is string in part-1, but int64 in part-0: the records do not fit one Parquet schema; write JSONL instead
    """
    import pyarrow as pa

    fields: dict[str, Any] = {}
    typed_in: dict[str, str] = {}  # the part that gave each column its type
    for name, schema in parts:
        if schema is None:
            continue
        for field in schema:
            known = fields.get(field.name)
            if known is None:
                fields[field.name], typed_in[field.name] = field, name
                continue
            merged_to = merged_type(known.type, field.type)
            if merged_to is None:
                raise ValueError(
                    f"column {field.name!r} is {field.type} in {name}, but {known.type} in "
                    f"{typed_in[field.name]}: the records do not fit one Parquet schema; "
                    "write JSONL instead"
                )
            if known.type == pa.null() and field.type != pa.null():
                typed_in[field.name] = name
            fields[field.name] = known.with_type(merged_to)
    return pa.schema(list(fields.values()))
