"""Deduplicate a table in one call: every row back with its cluster and the row kept for it.

A pandas DataFrame or a pyarrow Table goes in, the same rows come out, each with its cluster,
the id of the row kept for it and its similarity to that row.
`annotate_table` runs the whole `gpusimhash.dedup.pipeline` (verification, star clusters, keep
policy) on the table, through a temporary Parquet file, and returns the input with four columns
added: ``cluster``, ``duplicate_of``, ``similarity`` (as ``dedup --annotate`` writes them) and
``kept``.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from gpusimhash import _missing
from gpusimhash._missing import ON_MISSING
from gpusimhash.io.readers import InputError, require_pyarrow

__all__ = ["ON_MISSING", "annotate_table"]

_ADDED = ("cluster", "duplicate_of", "similarity", "kept")


def annotate_table(
    data: Any,
    *,
    text_field: str = "text",
    on_missing: str = "error",
    **options: Any,
) -> Any:
    """Find the near-duplicate rows of a table; return it with the dedup's verdict per row.

    Parameters
    ----------
    data : pandas.DataFrame, pyarrow.Table, or a text column
        The rows. A pyarrow ``Array``/``ChunkedArray`` or a pandas ``Series`` of texts is a
        table of one column, ``text_field``.
    text_field : str
        The text column (``meta.text`` for a struct field, ``title,body`` for several joined,
        as for the ``--text-field`` option).
    on_missing : {"error", "featureless"}
        A missing text (null, None, NaN): an error naming the row, or an empty text (a
        featureless document, kept alone unless ``empty_as_duplicates``).
    **options
        ``bits``, ``seed``, ``featurizer`` and the fields of `DedupOptions` (``id_field``,
        ``min_cosine``, ``keep``...), as for `gpusimhash.dedup.pipeline.dedup_file`.

    Returns
    -------
    pandas.DataFrame or pyarrow.Table
        Of the input's kind (a table for a column), every row in order with ``cluster`` (the
        cluster's number, null alone), ``duplicate_of`` (the id of the row kept for it, null
        when kept; ids are row numbers unless ``id_field``), ``similarity`` (to that row) and
        ``kept`` (bool) added.

    Raises
    ------
    InputError
        A missing text with ``on_missing="error"``, a column that is not text, a table that
        already has one of the added columns.
    ValueError
        An unknown ``on_missing`` or option.
    ImportError
        pyarrow is not installed.

    Examples
    --------
    >>> import pandas as pd
    >>> frame = pd.DataFrame({"text": ["red fox jumps", "blue sky", "red fox jumps", None]})
    >>> out = annotate_table(frame, on_missing="featureless")
    >>> out["kept"].tolist(), out["duplicate_of"].tolist()
    ([True, True, False, True], [<NA>, <NA>, 0, <NA>])
    """
    from gpusimhash.dedup.pipeline import dedup_file

    _missing.check(on_missing)
    require_pyarrow()
    import pyarrow as pa
    import pyarrow.parquet as pq

    pandas = type(data).__module__.split(".")[0] == "pandas"
    table = _as_table(data, text_field, pa)
    clash = [name for name in _ADDED if name in table.column_names]
    if clash:
        raise InputError(f"the table already has a column {clash[0]!r}")
    if text_field in table.column_names:
        column = _missing.resolve(
            table.column(text_field),
            on_missing,
            row="row",
            field=f"column {text_field!r}",
            error=InputError,
        )
        table = table.set_column(table.column_names.index(text_field), text_field, column)
    with tempfile.TemporaryDirectory(prefix="gpusimhash-table-") as folder:
        source = Path(folder) / "table.parquet"
        pq.write_table(table, source)
        result = dedup_file(
            source,
            Path(folder) / "out",
            text_field=text_field,
            annotate=True,
            output_format="parquet",
            **options,
        )
        annotated = pq.read_table(
            Path(folder) / "out" / "annotated.parquet", columns=list(_ADDED[:3])
        )
    kept = pa.array(np.asarray(result.kept, dtype=bool))
    if pandas:
        return _with_frame_columns(data, table, annotated, kept, pa)
    for name in _ADDED[:3]:
        table = table.append_column(name, annotated.column(name))
    return table.append_column("kept", kept)


def _with_frame_columns(data: Any, table: Any, annotated: Any, kept: Any, pa: Any) -> Any:
    """Return the DataFrame (its index kept) with the added columns, nulls as pandas' NA."""
    import pandas as pd  # type: ignore[import-untyped]

    frame = table.to_pandas()
    frame.index = data.index
    nullable = {
        pa.int64(): pd.Int64Dtype(),
        pa.float64(): pd.Float64Dtype(),
        pa.string(): pd.StringDtype(),
        pa.large_string(): pd.StringDtype(),
    }.get
    for name in _ADDED[:3]:  # positionally (the frame keeps the input's index)
        frame[name] = annotated.column(name).to_pandas(types_mapper=nullable).array
    frame["kept"] = kept.to_numpy(zero_copy_only=False)
    return frame


def _as_table(data: Any, text_field: str, pa: Any) -> Any:
    """Return the data as a pyarrow Table (a text column as a table of one column)."""
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    if isinstance(data, pa.Array | pa.ChunkedArray):
        return pa.table({text_field: data})
    kind = type(data).__name__
    if type(data).__module__.split(".")[0] == "pandas" and kind in ("DataFrame", "Series"):
        frame = data.to_frame(name=text_field) if kind == "Series" else data
        return pa.Table.from_pandas(frame, preserve_index=False)
    raise TypeError(
        f"data must be a pandas DataFrame or Series, or a pyarrow Table, RecordBatch, Array "
        f"or ChunkedArray, got {kind}"
    )
