"""Write records to JSONL, Parquet or CSV files atomically, in batches.

A writer fills a temporary file in the destination's folder and, when closed without an error,
flushes it to disk (fsync) and renames it over the destination (``os.replace``): a reader never
sees a half-written file, and a failed run leaves the previous file as it was.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
import sys
from pathlib import Path
from types import TracebackType
from typing import IO, Any

import numpy as np

from gpusimhash._choices import OUTPUT_FORMATS
from gpusimhash.io._atomic import atomic_path, commit, temporary_beside
from gpusimhash.io.readers import detect_format, require_pyarrow
from gpusimhash.utf8 import Utf8Texts

# One encoder for every record: json.dumps with options would build a new one per call.
_encode_record = json.JSONEncoder(ensure_ascii=False, default=str).encode
# The string encoder that encoder uses for every str (without ensure_ascii)
_encode_string = json.encoder.encode_basestring
# the bytes besides control characters that a JSON string escapes
_QUOTE, _BACKSLASH = ord('"'), ord("\\")


def write_json(path: str | Path, payload: Any) -> None:
    """Write a JSON document atomically (temporary file, fsync, rename).

    Parameters
    ----------
    path : str or Path
        Destination.
    payload : Any
        JSON-serializable data (other values are written with ``str``).

    Examples
    --------
    >>> import tempfile, os, json
    >>> path = os.path.join(tempfile.mkdtemp(), "a.json")
    >>> write_json(path, {"n": 1})
    >>> json.load(open(path))
    {'n': 1}
    """
    with atomic_path(path) as name, open(name, "w", encoding="utf-8") as stream:
        json.dump(payload, stream, indent=2, ensure_ascii=False, default=str)
        stream.write("\n")


class RecordWriter:
    """Write batches of records (dicts) to a JSONL, Parquet or CSV file, atomically.

    Use as a context manager: the file appears at ``path`` when the ``with`` block ends without an
    exception; after an exception the temporary file is removed and ``path`` is untouched.

    Parameters
    ----------
    path : str or Path
        Destination. ``.gz`` compresses JSONL and CSV.
    format : str, optional
        ``"jsonl"``, ``"parquet"`` or ``"csv"``; default: from the name (anything but Parquet
        or CSV is JSONL).
    schema : pyarrow.Schema, optional
        Parquet only: the file's schema, fixed from the start (for example an input's own):
        records are converted to it and Arrow data (`write_table`) must have its columns;
        default: inferred from the records, batch by batch.

    Raises
    ------
    ValueError
        An unknown format.
    ImportError
        Parquet without pyarrow.
    FileNotFoundError, PermissionError
        The destination folder does not exist or is not writable.

    Examples
    --------
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "out.jsonl")
    >>> with RecordWriter(path) as writer:
    ...     writer.write([{"id": 1, "text": "a cat"}])
    >>> open(path).read().splitlines()
    ['{"id": 1, "text": "a cat"}']
    """

    def __init__(self, path: str | Path, format: str | None = None, *, schema: Any = None) -> None:
        self.path = Path(path)
        if format is None:
            detected = detect_format(self.path)
            format = detected if detected in ("parquet", "csv") else "jsonl"
        if format not in OUTPUT_FORMATS:
            raise ValueError(
                f"output format must be one of {', '.join(OUTPUT_FORMATS)}, got {format!r}"
            )
        if schema is not None and format != "parquet":
            raise ValueError(f"a schema is for Parquet output, not {format}")
        self.format = format
        self._schema = schema
        self._gzip = format != "parquet" and self.path.name.lower().endswith(".gz")
        self._pq: Any = require_pyarrow() if format == "parquet" else None
        self._parquet: Any = None  # a pyarrow ParquetWriter once the first batch is written
        self._columns: list[str] | None = None  # a CSV file's header, from the first batch
        self.count = 0
        handle, self._temp = temporary_beside(self.path)
        try:
            self._raw: IO[bytes] = os.fdopen(handle, "wb")
            self._stream: IO[bytes] | gzip.GzipFile = self._compressing(self._raw)
            if schema is not None and self._pq is not None:  # Parquet, checked above
                self._parquet = self._pq.ParquetWriter(self._raw, schema)
        except BaseException:  # an interrupt included: no temporary file may stay behind
            self._temp.unlink(missing_ok=True)
            raise

    def _compressing(self, raw: IO[bytes]) -> IO[bytes] | gzip.GzipFile:
        """Return the stream that writes into ``raw``: gzip for a ``.gz`` JSONL or CSV file."""
        if self._gzip:
            return gzip.GzipFile(self.path.name, "wb", fileobj=raw, mtime=0)
        return raw

    def _reading_text(self) -> IO[str]:
        """Open the temporary file written so far (closed first) as text for csv.reader."""
        if self._gzip:
            return gzip.open(self._temp, "rt", encoding="utf-8", newline="")
        return open(self._temp, encoding="utf-8", newline="")

    @property
    def csv_header(self) -> list[str] | None:
        """The CSV file's columns so far: None before a first record or header (or not CSV)."""
        return None if self._columns is None else list(self._columns)

    @property
    def parquet_schema(self) -> Any:
        """The Arrow schema of the Parquet file so far: None before a first batch (or not Parquet).

        A writer made with a schema has it from the start.
        """
        return None if self._parquet is None else self._parquet.schema

    def write(self, records: list[dict[str, Any]]) -> None:
        """Append records.

        Parameters
        ----------
        records : list of dict
            JSON-serializable values (others are written with ``str``) for JSONL; for Parquet,
            every field seen in any record is a column (in first-seen order), null where a
            record lacks it: a field first seen in a later batch widens the file written so far.
            For CSV, the fields in first-seen order are the header (the input's columns, for a
            CSV input), as for Parquet: a field first seen in a later batch widens the file
            written so far (empty in the earlier rows); strings are written as they are, null
            as an empty cell, other values as JSON.

        Raises
        ------
        ValueError
            A field whose values do not fit one Parquet column (for example ints and strings).
        """
        if not records:
            return
        if self.format == "jsonl":
            lines = "".join(_encode_record(r) + "\n" for r in records)
            self._stream.write(lines.encode("utf-8"))
        elif self.format == "csv":
            self._write_csv(records)
        else:
            self._write_parquet(records)
        self.count += len(records)

    def write_text_lines(self, rows: list[int], texts: Utf8Texts, lines: np.ndarray) -> None:
        r"""Append the records ``{"id": row, "text": text}`` of plain-text lines (JSONL only).

        The bytes are those `write` gives the same records, without building them: a line
        with nothing JSON escapes (no ``"``, ``\`` or control character) is copied as its
        bytes, the others are decoded and escaped.

        Parameters
        ----------
        rows : list of int
            Each written line's row, its id.
        texts : Utf8Texts
            A batch of lines, without their line endings.
        lines : ndarray of int
            The lines of ``texts`` to write, one per row.

        Raises
        ------
        ValueError
            The file is not JSONL, or not one line per row.
        UnicodeDecodeError
            A line that is not valid UTF-8.

        Examples
        --------
        >>> import tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "out.jsonl")
        >>> batch = Utf8Texts.from_strings(['a "cat"', "bird", "dog"])
        >>> with RecordWriter(path) as writer:
        ...     writer.write_text_lines([3, 5], batch, np.array([0, 2]))
        >>> open(path).read().splitlines()
        ['{"id": 3, "text": "a \\"cat\\""}', '{"id": 5, "text": "dog"}']
        """
        if self.format != "jsonl":
            raise ValueError(f"text lines are written to JSONL, not {self.format}")
        if len(rows) != len(lines):
            raise ValueError(f"{len(rows)} rows and {len(lines)} lines")
        data, offsets = texts.compact()
        raw = data.tobytes()
        raw.decode("utf-8")  # strict, as every other reading of the text
        escaped = (data < 0x20) | (data == _QUOTE) | (data == _BACKSLASH)
        marks = np.zeros(data.size + 1, dtype=np.int64)
        np.cumsum(escaped, out=marks[1:])
        chosen = np.asarray(lines, dtype=np.int64)
        starts, ends = offsets[chosen], offsets[chosen + 1]
        plain = (marks[ends] == marks[starts]).tolist()
        encoded = b"".join(
            [
                b'{"id": %d, "text": "%b"}\n' % (row, raw[a:b])
                if as_is
                else f'{{"id": {row}, "text": {_encode_string(raw[a:b].decode())}}}\n'.encode()
                for row, a, b, as_is in zip(
                    rows, starts.tolist(), ends.tolist(), plain, strict=True
                )
            ]
        )
        self._stream.write(encoded)
        self.count += len(rows)

    def write_lines(self, lines: list[str] | list[bytes]) -> None:
        r"""Append records given as their JSON lines, written as they are (JSONL only).

        What `gpusimhash.io.readers.read_json_lines` read comes back byte for byte: the same
        fields in the same order, spelled the same way.

        Parameters
        ----------
        lines : list of str, or list of bytes
            One JSON object each, without a line ending; bytes are UTF-8, written as they are.

        Raises
        ------
        ValueError
            The file is not JSONL.

        Examples
        --------
        >>> import tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "out.jsonl")
        >>> with RecordWriter(path) as writer:
        ...     writer.write_lines(['{"text":"a cat","n":1.50}'])
        ...     writer.write_lines([b'{"n": 2}'])
        >>> open(path).read().splitlines()
        ['{"text":"a cat","n":1.50}', '{"n": 2}']
        """
        if self.format != "jsonl":
            raise ValueError(f"JSON lines are written to JSONL, not {self.format}")
        if lines:
            joined = (
                b"\n".join(lines)
                if isinstance(lines[0], bytes)
                else "\n".join(lines).encode("utf-8")
            )
            self._stream.write(joined + b"\n")
        self.count += len(lines)

    def write_header(self, names: list[str]) -> None:
        """Give a CSV file that has no header yet this one (a file of no records then has one).

        Records written later widen it as usual.

        Parameters
        ----------
        names : list of str
            The columns.

        Raises
        ------
        ValueError
            Not a CSV file.
        """
        if self.format != "csv":
            raise ValueError(f"a header is for CSV output, not {self.format}")
        if self._columns is None:
            self._write_csv_rows([list(names)])
            self._columns = list(names)

    def _write_csv(self, records: list[dict[str, Any]]) -> None:
        """Append CSV rows; the fields in first-seen order are the header, widened as they come."""
        names = list(dict.fromkeys([*(self._columns or ()), *(k for r in records for k in r)]))
        rows: list[list[str]] = []
        if self._columns is None:
            rows.append(names)
        elif len(names) > len(self._columns):
            self._widen_csv(names)
        self._columns = names
        rows.extend([_csv_cell(record.get(name)) for name in names] for record in records)
        self._write_csv_rows(rows)

    def _write_csv_rows(self, rows: list[list[str]]) -> None:
        """Append rows of CSV cells."""
        buffer = io.StringIO()
        csv.writer(buffer).writerows(rows)
        self._stream.write(buffer.getvalue().encode("utf-8"))

    def _widen_csv(self, names: list[str]) -> None:
        """Rewrite the CSV written so far under a header with more columns, empty in its rows.

        The rows are streamed from the temporary file into a new one (memory bounded by one
        row, time by the file so far): the file ends as if every field had been known at the
        start.
        """
        if self._stream is not self._raw:
            self._stream.close()
        self._raw.close()
        padding = [""] * (len(names) - len(self._columns or ()))
        csv.field_size_limit(min(sys.maxsize, 2**31 - 1))  # a long text is one cell
        handle, temporary = temporary_beside(self.path)
        try:
            raw: IO[bytes] = os.fdopen(handle, "wb")
            stream = self._compressing(raw)
            text = io.TextIOWrapper(stream, encoding="utf-8", newline="")
            with self._reading_text() as old:
                rows = csv.reader(old)
                next(rows)  # the old header
                writer = csv.writer(text)
                writer.writerow(names)
                writer.writerows(row + padding for row in rows)
            text.flush()
            text.detach()  # the stream stays open for the next batches
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise
        self._temp.unlink(missing_ok=True)
        self._raw, self._stream, self._temp = raw, stream, temporary

    def write_table(self, table: Any) -> None:
        """Append Arrow data as one Parquet row group (a writer made with a ``schema``).

        Parameters
        ----------
        table : pyarrow.Table or pyarrow.RecordBatch
            The schema's columns, in any order, of the schema's types (nullability may differ).

        Raises
        ------
        ValueError
            A column missing or of another type.
        """
        import pyarrow as pa

        if self._schema is None:
            raise ValueError("write_table needs a writer made with a schema")
        if isinstance(table, pa.RecordBatch):
            table = pa.Table.from_batches([table])
        try:
            table = table.select(self._schema.names).cast(self._schema)
        except (pa.ArrowException, KeyError, ValueError) as error:
            raise ValueError(
                f"{self.path}: data does not fit the file's schema ({error})"
            ) from None
        self._parquet.write_table(table)
        self.count += table.num_rows

    def _write_parquet(self, records: list[dict[str, Any]]) -> None:
        """Append records as one Parquet row group, widening the columns when they must grow."""
        import pyarrow as pa

        if self._schema is not None:
            try:
                table = pa.Table.from_pylist(records, schema=self._schema)
            except (pa.ArrowException, TypeError, ValueError) as error:
                raise ValueError(
                    f"{self.path}: records do not fit the file's schema ({error})"
                ) from None
            self._parquet.write_table(table)
            return
        schema = self._parquet.schema if self._parquet is not None else pa.schema([])
        names = list(dict.fromkeys([*schema.names, *(k for r in records for k in r)]))
        columns = {}
        for name in names:
            values = [record.get(name) for record in records]
            known = schema.field(name).type if name in schema.names else pa.null()
            try:  # the values' own type, merged with the column's so far (`merged_type`)
                columns[name] = _column(values, known)
            except (pa.ArrowException, TypeError, ValueError, OverflowError) as error:
                raise ValueError(
                    f"{self.path}: records do not fit the Parquet columns (field {name!r}: "
                    f"{error}); write JSONL instead"
                ) from None
        table = pa.table(columns)
        if self._parquet is None:
            self._parquet = self._pq.ParquetWriter(self._raw, table.schema)
        elif table.schema != schema:
            self._widen(table.schema)
        self._parquet.write_table(table)

    def _widen(self, schema: Any) -> None:
        """Rewrite the row groups written so far under a schema with more or typed columns.

        A field first seen after the first batch adds a column (null in the earlier rows), as a
        column of nulls takes the type of its first values: the written rows are copied, one row
        group at a time, into a new temporary file (`_copy_under`).
        """
        self._parquet.close()
        self._raw.close()
        handle, temporary = temporary_beside(self.path)
        try:
            raw: IO[bytes] = os.fdopen(handle, "wb")
            writer = self._pq.ParquetWriter(raw, schema)
            _copy_under(self._pq, self._temp, writer, schema, self.path)
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise
        self._temp.unlink(missing_ok=True)
        self._raw, self._stream, self._temp, self._parquet = raw, raw, temporary, writer

    def close(self) -> None:
        """Finish the file and move it into place (on any failure, drop it)."""
        try:
            if self.format == "parquet" and self._parquet is None:
                import pyarrow as pa

                self._parquet = self._pq.ParquetWriter(self._raw, pa.schema([]))
            if self._parquet is not None:
                self._parquet.close()
            if self._stream is not self._raw:
                self._stream.close()
            self._raw.close()
            commit(self._temp, self.path)
        finally:
            self._temp.unlink(missing_ok=True)

    def abort(self) -> None:
        """Drop the temporary file; the destination stays as it was."""
        try:
            if self._parquet is not None:
                self._parquet.close()
            self._raw.close()
        finally:
            self._temp.unlink(missing_ok=True)

    def __enter__(self) -> RecordWriter:  # noqa: PYI034
        """Return the writer."""
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """Close on success, abort on an exception."""
        if exc_type is None:
            self.close()
        else:
            self.abort()


def rewrite_parquet(path: str | Path, schema: Any) -> None:
    """Rewrite a Parquet file under a schema with more or typed columns, atomically.

    What `RecordWriter` does to its own file when a later batch widens its columns, done to a
    finished file: each column cast to its new type (a column of nulls typed, int64 made
    uint64), a column the file lacks added as nulls, in the schema's order, one row group at a
    time. The file is replaced only once the whole of it is written.

    Parameters
    ----------
    path : str or Path
        The file, rewritten in place.
    schema : pyarrow.Schema
        Its new schema: every column of the file, of a type its values cast to.

    Raises
    ------
    ValueError
        A column the schema lacks, or values that do not cast (names the file and the error).

    Examples
    --------
    >>> import tempfile, os, pyarrow as pa, pyarrow.parquet as pq
    >>> path = os.path.join(tempfile.mkdtemp(), "part.parquet")
    >>> pq.write_table(pa.table({"a": pa.nulls(2)}), path)
    >>> rewrite_parquet(path, pa.schema([("a", pa.string()), ("b", pa.int64())]))
    >>> pq.read_table(path).to_pylist()
    [{'a': None, 'b': None}, {'a': None, 'b': None}]
    """
    path = Path(path)
    pq = require_pyarrow()
    missing = sorted(set(pq.read_schema(path).names) - set(schema.names))
    if missing:
        raise ValueError(f"{path}: column {missing[0]!r} is not in the schema to write it with")
    handle, temporary = temporary_beside(path)
    try:
        with os.fdopen(handle, "wb") as raw:
            writer = pq.ParquetWriter(raw, schema)
            try:
                _copy_under(pq, path, writer, schema, path)
            finally:
                writer.close()
        commit(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def rewrite_csv(path: str | Path, names: list[str]) -> None:
    r"""Rewrite a CSV file under a header with more columns, or its columns in another order.

    What `RecordWriter` does to its own file when a later batch has new fields, done to a
    finished file: each row's cells moved to their column's place, empty in a column the file
    lacks; the cells themselves are kept as they were. The file is replaced only once the
    whole of it is written; one without a header (no record) gets ``names`` alone.

    Parameters
    ----------
    path : str or Path
        A CSV file (not compressed) with a header row, rewritten in place.
    names : list of str
        The new header: every column of the file's.

    Raises
    ------
    ValueError
        A column of the file that ``names`` lacks.

    Examples
    --------
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "part.csv")
    >>> _ = open(path, "w").write("text,b\nred fox,2\n")
    >>> rewrite_csv(path, ["text", "a", "b"])
    >>> open(path).read().splitlines()
    ['text,a,b', 'red fox,,2']
    """
    path = Path(path)
    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))  # a long text is one cell
    with open(path, encoding="utf-8", newline="") as old:
        rows = csv.reader(old)
        header = next(rows, [])
        missing = [name for name in header if name not in names]
        if missing:
            raise ValueError(f"{path}: column {missing[0]!r} is not in the header to write it with")
        at = [header.index(name) if name in header else -1 for name in names]
        with atomic_path(path) as name, open(name, "w", encoding="utf-8", newline="") as new:
            writer = csv.writer(new)
            writer.writerow(names)
            writer.writerows([row[k] if k >= 0 else "" for k in at] for row in rows)


def _copy_under(pq: Any, source: Path, writer: Any, schema: Any, name: Path) -> None:
    """Copy a Parquet file's row groups into ``writer``, columns cast to ``schema``'s.

    Columns the file lacks are nulls. ``name`` is the file the messages name.

    Raises
    ------
    ValueError
        Values that do not cast (int64 values below 0 where the column became uint64).
    """
    import pyarrow as pa

    with pq.ParquetFile(source) as written:
        for group in range(written.num_row_groups):
            old = written.read_row_group(group)
            try:
                arrays = [
                    old.column(f.name).cast(f.type)
                    if f.name in old.column_names
                    else pa.nulls(old.num_rows, f.type)
                    for f in schema
                ]
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as error:
                raise ValueError(
                    f"{name}: records do not fit the Parquet columns ({error}); write JSONL instead"
                ) from None
            writer.write_table(pa.Table.from_arrays(arrays, schema=schema))


def _csv_cell(value: Any) -> str:
    """Return a CSV cell: a string as it is, null as empty, anything else as JSON."""
    if isinstance(value, str):
        return value
    return "" if value is None else _encode_record(value)


def _column(values: list[Any], known: Any) -> Any:
    """Return the Arrow array of one column's values, of their type merged with ``known``'s.

    The values' type is inferred from them alone, then merged with the type the column has so
    far (`merged_type`), so no value is converted to a narrower type: a double after ints
    makes the column double, a struct key first seen adds a field. Integers past int64 (ids of
    unsigned 64-bit integers), alone or in lists and structs, make the column's int64 uint64;
    past uint64, OverflowError.

    Raises
    ------
    ValueError
        Values of a type that does not merge with the column's (strings after ints).
    """
    import pyarrow as pa

    try:
        array = pa.array(values)
    except OverflowError:
        shape = pa.array([_zeroed(v) for v in values]).type
        array = pa.array(values, type=_unsigned(shape))
    merged = merged_type(known, array.type)
    if merged is None:
        raise ValueError(f"{array.type} values in a column of {known}")
    return array if merged == array.type else array.cast(merged)


def merged_type(earlier: Any, later: Any) -> Any:
    """Return the type of a column of values of type ``earlier``, then of type ``later``.

    How a Parquet file of records widens a column: nulls take the other type; int64 and
    uint64 are uint64 (integers past int64); ints and doubles are doubles; lists merge their
    items, structs their fields by name (the earlier ones first, the later ones' new fields
    after them).

    Parameters
    ----------
    earlier, later : pyarrow.DataType
        The column's types.

    Returns
    -------
    pyarrow.DataType or None
        None where the types do not merge (ints and strings, say).

    Examples
    --------
    >>> import pyarrow as pa
    >>> merged_type(pa.int64(), pa.float64()), merged_type(pa.null(), pa.string())
    (DataType(double), DataType(string))
    >>> merged_type(pa.struct([("a", pa.int64())]), pa.struct([("b", pa.string())]))
    StructType(struct<a: int64, b: string>)
    >>> merged_type(pa.int64(), pa.string()) is None
    True
    """
    import pyarrow as pa

    if earlier == later or later == pa.null():
        return earlier
    if earlier == pa.null():
        return later
    numbers = {earlier, later}
    if numbers == {pa.int64(), pa.uint64()}:
        return pa.uint64()
    if numbers <= {pa.int64(), pa.uint64(), pa.float64()}:
        return pa.float64()
    for is_list, make in ((pa.types.is_list, pa.list_), (pa.types.is_large_list, pa.large_list)):
        if is_list(earlier) and is_list(later):
            item = merged_type(earlier.value_type, later.value_type)
            return None if item is None else make(item)
    if pa.types.is_struct(earlier) and pa.types.is_struct(later):
        fields = {f.name: f.type for f in earlier}
        for field in later:
            merged = merged_type(fields.get(field.name, pa.null()), field.type)
            if merged is None:
                return None
            fields[field.name] = merged
        return pa.struct(list(fields.items()))
    return None


def _zeroed(value: Any) -> Any:
    """Return ``value`` with every integer in it 0 (to infer a column's type without overflow)."""
    if isinstance(value, bool) or not isinstance(value, int | list | tuple | dict):
        return value
    if isinstance(value, int):
        return 0
    if isinstance(value, dict):
        return {k: _zeroed(v) for k, v in value.items()}
    return [_zeroed(v) for v in value]


def _unsigned(type_: Any) -> Any:
    """Return an Arrow type with every int64 in it (in lists and structs too) made uint64."""
    import pyarrow as pa

    if type_ == pa.int64():
        return pa.uint64()
    if pa.types.is_large_list(type_):
        return pa.large_list(_unsigned(type_.value_type))
    if pa.types.is_list(type_):
        return pa.list_(_unsigned(type_.value_type))
    if pa.types.is_struct(type_):
        return pa.struct([f.with_type(_unsigned(f.type)) for f in type_])
    return type_
