r"""Stream documents from JSONL, Parquet, CSV/TSV and plain-text files in batches.

Every reader yields :class:`DocumentBatch` objects of at most ``batch_size`` documents, so a file
of any size is read in bounded memory; :func:`read_json_lines` yields a JSONL file's records as
their lines, parsed only on demand (:class:`JsonLineBatch`). A problem with the file is an
:class:`InputError` whose message names the file, the line (or row) and the field, for example
``docs.jsonl, line 7: no field 'text' (fields: body, title)``.

Formats (``format=``, else from the file name, ``.gz`` allowed for the text formats):

- ``jsonl`` (``.jsonl``, ``.ndjson``, ``.json``): one JSON object per line, blank lines skipped;
- ``parquet`` (``.parquet``, ``.pq``): needs pyarrow (``pip install 'gpusimhash[io]'``);
- ``csv`` / ``tsv`` (``.csv``, ``.tsv``): a header row names the columns;
- ``text`` (``.txt`` and anything else): each line is one document, with no id field.

A document's id is the value of ``id_field`` (an int or a str), or its row number (from 0) when
``id_field`` is None.

Hostile files get the same one-line errors: a line longer than `MAX_LINE_BYTES` (an endless
stream without a newline, such as ``/dev/full``, is refused instead of filling memory), corrupt
compressed data, a JSON string holding a lone surrogate (a ``\ud800`` escape: valid JSON, not
valid Unicode), an unterminated CSV quote, a repeated CSV column name, damaged Parquet pages.
"""

from __future__ import annotations

import contextlib
import csv
import gzip
import io
import json
import os
import re
import stat
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, NoReturn, TypeVar

import numpy as np
import orjson

from gpusimhash._choices import FORMATS
from gpusimhash.io import consumed
from gpusimhash.io._json import loads
from gpusimhash.io._jsonl_blocks import decoded_block, parsed_block
from gpusimhash.io.fields import SEPARATOR, FieldError, TextField
from gpusimhash.io.skipped import Skipped

_SUFFIXES = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "jsonl",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".csv": "csv",
    ".tsv": "tsv",
    ".txt": "text",
}
PYARROW_HINT = "pip install 'gpusimhash[io]' (or pyarrow)"
# Longest line (one document of a text file, one JSON record, one CSV line) read, in bytes.
MAX_LINE_BYTES = 1 << 28
# Bytes read at a time from a line-based file, whose lines are then split in bulk (a progress
# bar of the bytes read moves a block at a time).
_BLOCK_BYTES = 1 << 20
# Bytes of a gzip file decompressed at a time to find the line where its data breaks.
_GZIP_PIECE_BYTES = 1 << 10
# A JSON escape of a UTF-16 surrogate: only then can a decoded string hold a lone surrogate.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


# one document as a reader yields it: its id, its text and the whole record
Row = tuple[Any, str, dict[str, Any]]
_Item = TypeVar("_Item")  # what `_until_error` takes


class InputError(ValueError):
    """A document file that cannot be read as asked; the message names file, line and field."""


@dataclass(frozen=True)
class DocumentBatch:
    """Consecutive documents of one file.

    Attributes
    ----------
    rows : ndarray, shape (n,), dtype int64
        Row number of each document in the file, from 0 (blank JSONL lines are not rows).
    ids : list of int or str
        Each document's id.
    texts : list of str
        Each document's text.
    records : list of dict or None
        The full input records (every field), when asked for; for plain text
        ``{"id": row, "text": line}``.
    table : pyarrow.Table or None
        For a Parquet file read with its records, the same records as Arrow data, with the
        file's schema (what Parquet output writes back; Python values lose some types).
    """

    rows: np.ndarray
    ids: list[Any]
    texts: list[str]
    records: list[dict[str, Any]] | None
    table: Any = None

    def __len__(self) -> int:
        """Return the number of documents."""
        return len(self.texts)

    def record(self, k: int) -> dict[str, Any]:
        """Return the whole record of document ``k`` of the batch.

        Raises
        ------
        ValueError
            The batch was read without its records (``records=False``).
        """
        if self.records is None:
            raise ValueError("this batch was read without its records (records=False)")
        return self.records[k]


@dataclass(frozen=True)
class FileState:
    """A file's identity, size and times: what a second pass over it checks first.

    Rewriting a file changes its modification and status-change times (the latter cannot be set
    back), replacing it changes the inode: comparing states detects a file that changed between
    two reads without reading it again.

    Attributes
    ----------
    device, inode, size, modified_ns, changed_ns : int
        From ``os.stat``.

    Examples
    --------
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "docs.txt")
    >>> _ = open(path, "w").write("a cat")
    >>> state = FileState.of(path)
    >>> state.check(path)
    >>> _ = open(path, "a").write(" and a dog")
    >>> state.check(path)
    Traceback (most recent call last):
    ...
    gpusimhash.io.readers.InputError: ...docs.txt: changed while it was read (5 bytes, then 15)
    """

    device: int
    inode: int
    size: int
    modified_ns: int
    changed_ns: int

    @classmethod
    def of(cls, path: str | Path) -> FileState:
        """Return the state of a regular file.

        Parameters
        ----------
        path : str or Path
            The file.

        Returns
        -------
        FileState

        Raises
        ------
        InputError
            Not a regular file: a pipe or a device cannot be read twice.
        FileNotFoundError, PermissionError
            The file cannot be found or examined.
        """
        status = os.stat(path)
        if not stat.S_ISREG(status.st_mode):
            raise InputError(
                f"{path}: not a regular file (a pipe or a device cannot be read twice; "
                "save it to a file first, or give - to read standard input, which is saved once)"
            )
        return cls(
            status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns, status.st_ctime_ns
        )

    def check(self, path: str | Path) -> None:
        """Raise InputError if the file at ``path`` is no longer in this state.

        Parameters
        ----------
        path : str or Path
            The file this state was taken of.

        Raises
        ------
        InputError
            The file was replaced, resized or rewritten.
        """
        now = FileState.of(path)
        if now != self:
            change = f"{self.size} bytes, then {now.size}" if now.size != self.size else "rewritten"
            raise InputError(f"{path}: changed while it was read ({change})")


def detect_format(path: str | Path) -> str:
    """Guess a file's format from its name.

    Parameters
    ----------
    path : str or Path
        File name; a trailing ``.gz`` is ignored.

    Returns
    -------
    str
        One of ``FORMATS``; ``"text"`` for unknown suffixes.

    Examples
    --------
    >>> detect_format("corpus.jsonl.gz"), detect_format("a.parquet"), detect_format("notes")
    ('jsonl', 'parquet', 'text')
    """
    name = Path(path).name.lower()
    name = name.removesuffix(".gz")
    return _SUFFIXES.get(Path(name).suffix, "text")


def require_pyarrow() -> Any:
    """Import and return ``pyarrow.parquet``, or raise ImportError with the install command.

    Returns
    -------
    module
        ``pyarrow.parquet``.

    Raises
    ------
    ImportError
        pyarrow is not installed.
    """
    try:
        import pyarrow.parquet as pq
    except ImportError as error:
        raise ImportError(f"Parquet files need pyarrow: {PYARROW_HINT}") from error
    return pq


def read_batches(
    path: str | Path,
    *,
    format: str | None = None,
    text_field: str = "text",
    id_field: str | None = None,
    batch_size: int = 10_000,
    records: bool = False,
    skipped: Skipped | None = None,
) -> Iterator[DocumentBatch]:
    """Stream a document file in batches.

    Parameters
    ----------
    path : str or Path
        The file.
    format : str, optional
        One of ``FORMATS``; default: from the file name (:func:`detect_format`).
    text_field : str
        Field (JSONL), column (Parquet, CSV, TSV) holding the text; unused for plain text. A
        dotted path reads a nested field (``meta.text``: JSON objects, Parquet structs), and
        several comma-separated fields are joined with a newline (``title,body``); see
        `gpusimhash.io.fields.TextField`.
    id_field : str, optional
        Field holding each document's id (int or str); default: the row number.
    batch_size : int
        Most documents per batch, >= 1.
    records : bool
        Also return every document's full record (for writing documents back out).
    skipped : Skipped, optional
        Skip an invalid record (bad JSON, invalid UTF-8, a missing or non-text text field, a
        bad id, a CSV row of the wrong length, a null Parquet text) instead of raising, and
        count it here; skipped records are not rows. A damaged file (corrupt compressed data,
        an over-long line, an unterminated CSV quote, bad UTF-8 in a CSV file) still raises.

    Yields
    ------
    DocumentBatch
        Documents in file order.

    Raises
    ------
    InputError
        A missing field or column, a value of the wrong type, a malformed line or file, bytes that
        are not UTF-8; the message names the file and the line or row.
    FileNotFoundError, PermissionError, IsADirectoryError
        The file cannot be opened.
    ImportError
        A Parquet file without pyarrow installed.
    ValueError
        An unknown format or a batch size below 1.

    Examples
    --------
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "docs.jsonl")
    >>> with open(path, "w") as f:
    ...     print('{"text": "a cat"}', '{"text": "a dog"}', sep=chr(10), file=f)
    >>> [b.texts for b in read_batches(path)]
    [['a cat', 'a dog']]
    """
    format = detect_format(path) if format is None else format
    if format not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, got {format!r}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    path = Path(path)
    if format == "parquet":
        yield from _parquet_batches(path, text_field, id_field, batch_size, records, skipped)
        return
    with _open_binary(path) as stream:
        if format == "jsonl" and not records:  # only ids and texts: parsed by orjson alone
            yield from _jsonl_texts(stream, path, text_field, id_field, skipped, batch_size)
            return
        reader = {"jsonl": _jsonl_rows, "csv": _csv_rows, "tsv": _csv_rows, "text": _text_rows}
        rows = reader[format](stream, path, format, text_field, id_field, skipped)
        yield from _batched(rows, batch_size, records)


@dataclass(frozen=True)
class JsonLineBatch:
    """Consecutive records of a JSONL file as their lines: a `DocumentBatch` parsed on demand.

    Writing records back as the lines they were read from (`RecordWriter.write_lines`) parses
    none of them; a record is parsed only when its id or text is asked for (`document`).

    Attributes
    ----------
    rows : ndarray, shape (n,), dtype int64
        Row number of each record in the file, from 0 (blank lines are not rows).
    lines : list of str
        Each record's line, without its line ending (nor a byte order mark on line 1).
    numbers : list of int
        Each record's line number in the file, from 1 (for error messages).
    path : Path
        The file.
    field : TextField
        Where the text is.
    id_field : str or None
        The id field; None: ids are rows.
    """

    rows: np.ndarray
    lines: list[str]
    numbers: list[int]
    path: Path
    field: TextField
    id_field: str | None

    def __len__(self) -> int:
        """Return the number of records."""
        return len(self.lines)

    def document(self, k: int) -> tuple[int | str, str]:
        """Parse record ``k``: its id (its row without an id field) and its text.

        Raises
        ------
        InputError
            The record is not what `read_batches` reads (names the file and line).
        """
        doc_id, text, _ = _parse_json_line(
            self.lines[k], self.path, self.numbers[k], self.field, self.id_field, whole=False
        )
        return (int(self.rows[k]) if doc_id is None else doc_id), text

    def ids(self, ks: list[int]) -> list[int | str]:
        """Return the ids of records ``ks``: their rows without an id field, parsing none.

        Raises
        ------
        InputError
            With an id field, a record that is not what `read_batches` reads (`document`).
        """
        if self.id_field is None:
            return self.rows[ks].tolist()
        return [self.document(k)[0] for k in ks]

    def parsed(self) -> DocumentBatch:
        """Parse every record: the batch `read_batches` reads, with its records.

        Raises
        ------
        InputError
            A record that is not what `read_batches` reads (names the file and line).
        """
        parsed = [self._parse(k) for k in range(len(self))]
        ids = [int(row) if p[0] is None else p[0] for row, p in zip(self.rows, parsed, strict=True)]
        return DocumentBatch(self.rows, ids, [p[1] for p in parsed], [p[2] for p in parsed])

    def _parse(self, k: int) -> tuple[int | str | None, str, dict[str, Any]]:
        """Parse record ``k``: ``(id or None, text, record)``."""
        return _parse_json_line(
            self.lines[k], self.path, self.numbers[k], self.field, self.id_field
        )


def read_json_lines(
    path: str | Path,
    *,
    text_field: str = "text",
    id_field: str | None = None,
    batch_size: int = 10_000,
) -> Iterator[JsonLineBatch]:
    """Stream a JSONL file's records as their lines, in batches; the same rows as `read_batches`.

    Parameters
    ----------
    path : str or Path
        The file (``.gz``: gzip).
    text_field, id_field
        As in `read_batches`: how `JsonLineBatch.document` reads a record.
    batch_size : int
        Most records per batch, >= 1.

    Yields
    ------
    JsonLineBatch
        Records in file order. A line is only decoded here: one that is not a valid record
        raises when `JsonLineBatch.document` parses it.

    Raises
    ------
    InputError
        Bytes that are not UTF-8, an over-long line, unreadable or corrupt data (names the
        file and line).

    Examples
    --------
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "docs.jsonl")
    >>> with open(path, "w") as f:
    ...     print('{"text":"a cat", "n": 1.50}', "", '{"text": "a dog"}', sep=chr(10), file=f)
    >>> (batch,) = read_json_lines(path)
    >>> batch.lines, batch.numbers, batch.document(1)
    (['{"text":"a cat", "n": 1.50}', '{"text": "a dog"}'], [1, 3], (1, 'a dog'))
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    path = Path(path)
    field = TextField.parse(text_field)
    first = 0  # the first row not yet yielded
    lines: list[str] = []
    numbers: list[int] = []
    with _open_binary(path) as stream:
        for start, raw_lines, _ in _line_blocks(stream, path):
            decoded, error = decoded_block(raw_lines, start), None  # every line at once
            if decoded is None:  # line by line, up to a line at fault
                numbered, error = _until_error(
                    (number, content)
                    for number, raw in enumerate(raw_lines, start)
                    if (content := _json_line(raw, path, number)) is not None
                )
                lines.extend(content for _, content in numbered)
                numbers.extend(number for number, _ in numbered)
            else:
                lines.extend(decoded)
                numbers.extend(range(start, start + len(decoded)))
            full = len(lines) - len(lines) % batch_size  # in whole batches
            for k in range(0, full, batch_size):
                rows = np.arange(first + k, first + k + batch_size, dtype=np.int64)
                batch = slice(k, k + batch_size)
                yield JsonLineBatch(rows, lines[batch], numbers[batch], path, field, id_field)
            first, lines, numbers = first + full, lines[full:], numbers[full:]
            if error is not None:  # raised once the batches before its line are yielded
                raise error
    if lines:
        rows = np.arange(first, first + len(lines), dtype=np.int64)
        yield JsonLineBatch(rows, lines, numbers, path, field, id_field)


def _open_binary(path: Path) -> IO[bytes]:
    """Open a file for reading bytes, decompressing ``.gz`` (a 0-byte ``.gz`` is refused).

    The bytes read from disk so far (compressed, for ``.gz``) go to `consumed`'s counter.
    """
    raw = open(path, "rb")  # noqa: SIM115 - the caller closes the returned stream
    status = os.fstat(raw.fileno())
    if stat.S_ISREG(status.st_mode):  # a pipe has no position (nor size)
        size = status.st_size
        consumed.opened(size, lambda: size if raw.closed else raw.tell())
    if not path.name.lower().endswith(".gz"):
        return raw
    if stat.S_ISREG(status.st_mode) and status.st_size == 0:
        raw.close()
        raise InputError(f"{path}: an empty file, not gzip data")
    # a C-level buffer in front: GzipFile's own line iteration is slow Python per line
    return io.BufferedReader(gzip.GzipFile(fileobj=raw, mode="rb"), buffer_size=1 << 20)


def _batched(rows: Iterator[Row], batch_size: int, keep_records: bool) -> Iterator[DocumentBatch]:
    """Group ``(id, text, record)`` triples into batches, numbering rows from 0."""
    first = 0
    ids: list[Any] = []
    texts: list[str] = []
    records: list[dict[str, Any]] = []
    for doc_id, text, record in rows:
        ids.append(doc_id)
        texts.append(text)
        if keep_records:
            records.append(record)
        if len(texts) == batch_size:
            yield _batch(first, ids, texts, records if keep_records else None)
            first, ids, texts, records = first + batch_size, [], [], []
    if texts:
        yield _batch(first, ids, texts, records if keep_records else None)


def _batch(
    first: int,
    ids: list[Any],
    texts: list[str],
    records: list[dict[str, Any]] | None,
    table: Any = None,
) -> DocumentBatch:
    """Build a batch whose first document is row ``first``."""
    rows = np.arange(first, first + len(texts), dtype=np.int64)
    return DocumentBatch(rows, ids, texts, records, table)


def _where(path: Path, line: int) -> str:
    """Format a location: ``file, line n``."""
    return f"{path}, line {line}"


def _check_id(value: Any, path: Path, line: int, field: str) -> int | str:
    """Return an id value (int or str), or raise naming the file, line and field."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise InputError(
            f"{_where(path, line)}: id field {field!r} must be an integer or a string, "
            f"got {_describe(value)}"
        )
    return value


def _describe(value: Any) -> str:
    """Name a value's JSON-ish type for an error message."""
    if value is None:
        return "null"
    return type(value).__name__


def _decode(raw: bytes, path: Path, line: int) -> str:
    """Decode one line as UTF-8 or raise naming it."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InputError(f"{_where(path, line)}: not valid UTF-8 ({error.reason})") from None


def _raw_lines(stream: IO[bytes], path: Path) -> Iterator[tuple[int, bytes]]:
    """Yield ``(line_number, bytes)`` with the line ending, at most `MAX_LINE_BYTES` each.

    Raises InputError as `_line_blocks` does.
    """
    for first, lines, ended in _line_blocks(stream, path):
        ending = b"\n" if ended else b""
        for number, content in enumerate(lines, first):
            yield number, content + ending


def _line_blocks(stream: IO[bytes], path: Path) -> Iterator[tuple[int, list[bytes], bool]]:
    r"""Yield the lines of each block read, without ``\n``, the first's number, and whether ended.

    The lines are split in bulk, `_BLOCK_BYTES` at a time. Every line but a last one that no
    ``\n`` ends comes with ``ended`` true; that last line comes alone. A line holds at most
    `MAX_LINE_BYTES` bytes with its ``\n``: a longer one raises InputError naming it once the
    lines before it are yielded, and so does unreadable or corrupt data, naming the first line
    not yet yielded.
    """
    done = 0  # lines yielded
    pending: list[bytes] = []  # the start of the next line, which no block so far has ended
    pending_bytes = 0
    try:
        while block := stream.read(_BLOCK_BYTES):
            lines = block.split(b"\n")
            start = lines.pop()  # after the last newline: the next line's start
            if lines:
                lines[0] = b"".join([*pending, lines[0]])
                pending, pending_bytes = [], 0
                if max(map(len, lines)) >= MAX_LINE_BYTES:
                    long = next(k for k, line in enumerate(lines) if len(line) >= MAX_LINE_BYTES)
                    yield done + 1, lines[:long], True
                    raise _too_long(path, done + 1 + long)
                yield done + 1, lines, True
                done += len(lines)
            if start:
                pending.append(start)
                pending_bytes += len(start)
                if pending_bytes > MAX_LINE_BYTES:
                    raise _too_long(path, done + 1)
        if pending:
            yield done + 1, [b"".join(pending)], False
    except (OSError, EOFError, zlib.error) as error:
        raise unreadable(path, done + 1, error) from None


def unreadable(path: Path, line: int, error: Exception) -> InputError:
    """Return the error for a file that could not be read past ``line`` (its first line unread).

    Where gzip data is broken, the line is where its readable data ends (`_gzip_end`): the
    reader's block there may have ended far earlier, as it was lost with the error.
    """
    if isinstance(error, EOFError | zlib.error | gzip.BadGzipFile):
        with contextlib.suppress(OSError):
            line = max(line, _gzip_end(path))
    return InputError(f"{_where(path, line)}: cannot read ({error})")


def _gzip_end(path: Path) -> int:
    """Return the line where a gzip file's readable data ends: its newlines before then, plus one.

    The data is decompressed again, member after member, up to its end, to data that is not
    gzip, or to the `_GZIP_PIECE_BYTES` of the file where it is corrupt.
    """
    newlines = 0
    with open(path, "rb") as stream:
        unzip = zlib.decompressobj(wbits=31)
        while block := stream.read(_GZIP_PIECE_BYTES):
            while block:
                try:
                    newlines += unzip.decompress(block).count(b"\n")
                except zlib.error:
                    return newlines + 1
                if not unzip.eof:
                    break
                block, unzip = unzip.unused_data, zlib.decompressobj(wbits=31)
    return newlines + 1


def _too_long(path: Path, line: int) -> InputError:
    """Return the error for a line longer than `MAX_LINE_BYTES`."""
    return InputError(
        f"{_where(path, line)}: longer than {MAX_LINE_BYTES:,} bytes (not a line-based file?)"
    )


def _jsonl_rows(
    stream: IO[bytes],
    path: Path,
    format: str,
    text_field: str,
    id_field: str | None,
    skipped: Skipped | None,
) -> Iterator[Row]:
    """Yield ``(id, text, record)`` from JSON lines, each record as `json.loads` reads it."""
    field = TextField.parse(text_field)
    row = 0
    for first, lines, _ in _line_blocks(stream, path):
        for doc_id, text, record in _jsonl_lines(lines, first, path, field, id_field, skipped):
            yield row if doc_id is None else doc_id, text, record
            row += 1


def _jsonl_texts(
    stream: IO[bytes],
    path: Path,
    text_field: str,
    id_field: str | None,
    skipped: Skipped | None,
    batch_size: int,
) -> Iterator[DocumentBatch]:
    """Yield batches of the ids and texts of JSON lines, each read by orjson where it can be.

    Each block of lines is read at once (`gpusimhash.io._jsonl_blocks.parsed_block`), or line
    by line where some line needs it (`_quick_document`, else `_jsonl_record`, which names the
    problem): the same ids and texts either way.
    """
    field = TextField.parse(text_field)
    first = 0  # the first row not yet yielded
    ids: list[Any] = []
    texts: list[str] = []
    for start, lines, _ in _line_blocks(stream, path):
        parsed, error = parsed_block(lines, field, id_field), None
        if parsed is None:  # line by line, up to a line at fault
            read = _jsonl_lines(lines, start, path, field, id_field, skipped, whole=False)
            rows, error = _until_error((doc_id, text) for doc_id, text, _ in read)
            parsed = [row[0] for row in rows], [row[1] for row in rows]
        # without an id field, ids are rows
        ids.extend(
            parsed[0]
            if id_field is not None
            else range(first + len(texts), first + len(texts) + len(parsed[1]))
        )
        texts.extend(parsed[1])
        full = len(texts) - len(texts) % batch_size  # in whole batches
        for k in range(0, full, batch_size):
            yield _batch(first + k, ids[k : k + batch_size], texts[k : k + batch_size], None)
        first, ids, texts = first + full, ids[full:], texts[full:]
        if error is not None:  # raised once the batches before its line are yielded
            raise error
    if texts:
        yield _batch(first, ids, texts, None)


def _until_error(items: Iterator[_Item]) -> tuple[list[_Item], InputError | None]:
    """Return the items up to the first InputError, and that error (None: none came)."""
    taken: list[_Item] = []
    try:
        for item in items:
            taken.append(item)  # noqa: PERF402 - list() would drop the items before an error
    except InputError as error:
        return taken, error
    return taken, None


def _jsonl_lines(
    lines: list[bytes],
    first: int,
    path: Path,
    field: TextField,
    id_field: str | None,
    skipped: Skipped | None,
    *,
    whole: bool = True,
) -> Iterator[tuple[int | str | None, str, dict[str, Any]]]:
    """Yield ``(id or None, text, record)`` of a block of JSON lines, skipping blank ones.

    ``first`` is the first line's number. Not ``whole``: see `_quick_document`.
    """
    for line, raw in enumerate(lines, first):
        parsed = None if whole else _quick_document(raw, field, id_field)
        if parsed is None:
            try:
                parsed = _jsonl_record(raw, path, line, field, id_field)
            except InputError as error:
                if skipped is None:
                    raise
                skipped.add(error)
                continue
            if parsed is None:  # a blank line
                continue
        yield parsed


def _jsonl_record(
    raw: bytes, path: Path, line: int, field: TextField, id_field: str | None
) -> tuple[int | str | None, str, dict[str, Any]] | None:
    """Parse one JSON line as `json.loads` does: ``(id or None, text, record)``, None if blank."""
    content = _json_line(raw, path, line)
    if content is None:
        return None
    return _parse_json_line(content, path, line, field, id_field)


def _json_line(raw: bytes, path: Path, line: int) -> str | None:
    """Decode one JSONL line without its line ending (nor a byte order mark on line 1).

    Returns None for a blank line (white space only), which is no record.
    """
    content = _decode(raw, path, line).rstrip("\r\n")
    content = content.removeprefix("\ufeff") if line == 1 else content
    return content if content.strip() else None


def _parse_json_line(
    content: str,
    path: Path,
    line: int,
    field: TextField,
    id_field: str | None,
    *,
    whole: bool = True,
) -> tuple[int | str | None, str, dict[str, Any]]:
    """Parse a JSONL record's line (`_json_line`) into ``(id or None, text, record)``.

    Not ``whole``: only the id and the text are `json.loads`'s for sure, the rest of the
    record perhaps not (`_quick_document`); any error is the same.
    """
    if not whole and (quick := _quick_document(content, field, id_field)) is not None:
        return quick
    try:
        record = loads(content)
    except json.JSONDecodeError as error:
        raise InputError(f"{_where(path, line)}: not valid JSON ({error.msg})") from None
    except ValueError as error:  # an integer beyond Python's digit limit
        raise InputError(f"{_where(path, line)}: not readable JSON ({error})") from None
    except RecursionError:
        raise InputError(f"{_where(path, line)}: JSON nested too deeply") from None
    if not isinstance(record, dict):
        raise InputError(f"{_where(path, line)}: expected a JSON object, got {_describe(record)}")
    if _SURROGATE_ESCAPE.search(content):
        _check_unicode(record, path, line)
    try:
        text = field.text(record)
    except FieldError as error:
        raise InputError(f"{_where(path, line)}: {error}") from None
    doc_id: int | str | None = None
    if id_field is not None:
        doc_id = _check_id(_field(record, id_field, path, line), path, line, id_field)
    return doc_id, text, record


def _quick_document(
    content: str | bytes, field: TextField, id_field: str | None
) -> tuple[int | str | None, str, dict[str, Any]] | None:
    """Return ``(id or None, text, record)`` as orjson alone reads a line, or None where it cannot.

    The line is its bytes as read or its decoded text: orjson refuses bytes that are not UTF-8
    and a byte order mark, which `_json_line` then handles.

    Where orjson reads a JSON text, every string it gives is `json.loads`'s, and every integer
    it keeps too (`gpusimhash.io._json`): such a text and such an id need neither the check
    of lone surrogates (orjson refuses their escapes) nor the walk for integers it turned into
    floats, which costs as much as the parse. Another field of the record may hold such a
    float: the record is for reading its id and text, not for writing back. None for a line
    orjson refuses, for a value that is not an object, for a missing or non-string text and
    for an id that is missing or not an integer or a string: `_parse_json_line` then reads
    the line as `json.loads` does, and names what is wrong with it.
    """
    try:
        record = orjson.loads(content)
    except orjson.JSONDecodeError:
        return None
    if type(record) is not dict:
        return None
    try:
        text = field.text(record)
    except FieldError:
        return None
    if id_field is None:
        return None, text, record
    doc_id = record.get(id_field)
    kind = type(doc_id)
    return (doc_id, text, record) if kind is int or kind is str else None


def _check_unicode(record: dict[str, Any], path: Path, line: int) -> None:
    """Raise naming the field when a decoded JSON record holds a lone surrogate."""
    pending: list[tuple[str, Any]] = [("", record)]
    while pending:
        where, value = pending.pop()
        if isinstance(value, dict):
            for key, item in value.items():
                name = f"{where}.{key}" if where else key
                if _SURROGATE.search(key):
                    pending.append((name, key))
                else:
                    pending.append((name, item))
        elif isinstance(value, list):
            pending.extend((f"{where}[{k}]", item) for k, item in enumerate(value))
        elif isinstance(value, str) and (found := _SURROGATE.search(value)):
            raise InputError(
                f"{_where(path, line)}: field {where!r} holds a lone surrogate "
                f"({found.group().encode('unicode_escape').decode()}): valid JSON, "
                "but not valid Unicode text"
            )


def _field(record: dict[str, Any], field: str, path: Path, line: int) -> Any:
    """Return ``record[field]`` or raise naming the fields there are."""
    try:
        return record[field]
    except KeyError:
        fields = ", ".join(sorted(record)) or "none"
        raise InputError(f"{_where(path, line)}: no field {field!r} (fields: {fields})") from None


def _csv_rows(
    stream: IO[bytes],
    path: Path,
    format: str,
    text_field: str,
    id_field: str | None,
    skipped: Skipped | None,
) -> Iterator[Row]:
    """Yield ``(id, text, record)`` from a CSV or TSV file with a header row.

    A record (quoted fields may span lines) holds at most `MAX_LINE_BYTES` bytes, whatever its
    physical lines: reading stops there.
    """
    csv.field_size_limit(MAX_LINE_BYTES)  # characters of one field: never reached first
    lines = _CsvRecordLines(stream, path)
    reader = csv.reader(lines, delimiter="\t" if format == "tsv" else ",", strict=True)
    try:
        try:
            header = next(reader)
        except StopIteration:
            return
        lines.record_read()
        repeated = sorted({name for name in header if header.count(name) > 1})
        if repeated:
            raise InputError(f"{path}: the header repeats column {repeated[0]!r}")
        text_columns = _csv_text_columns(header, text_field, path)
        if id_field is not None and id_field not in header:
            raise InputError(
                f"{path}: no column {id_field!r} in the header (columns: {', '.join(header)})"
            )
        id_column = header.index(id_field) if id_field is not None else None
        row = 0
        for values in reader:
            lines.record_read()
            if len(values) != len(header):
                error = InputError(
                    f"{_where(path, reader.line_num)}: {len(values)} fields, "
                    f"the header has {len(header)}"
                )
                if skipped is None:
                    raise error
                skipped.add(error)
                continue
            doc_id = row if id_column is None else values[id_column]
            text = SEPARATOR.join(values[k] for k in text_columns)
            yield doc_id, text, dict(zip(header, values, strict=True))
            row += 1
    except csv.Error as error:
        reason = "an unterminated quote" if "unexpected end" in str(error) else str(error)
        raise InputError(
            f"{_where(path, reader.line_num)}: malformed {format.upper()} ({reason})"
        ) from None


def _csv_text_columns(header: list[str], text_field: str, path: Path) -> list[int]:
    """Return the columns of the text (one, or several joined); InputError for a missing one."""
    if text_field in header:
        return [header.index(text_field)]
    field = TextField.parse(text_field)
    names = [".".join(p) for p in field.paths]
    missing = [name for name in names if name not in header]
    if missing:
        raise InputError(
            f"{path}: no column {missing[0]!r} in the header (columns: {', '.join(header)})"
        )
    return [header.index(name) for name in names]


class _CsvRecordLines:
    """A CSV file's lines, decoded with their endings, for ``csv.reader``; records bounded.

    A record's lines (quoted fields may span many) hold at most `MAX_LINE_BYTES` bytes: the
    line that would pass that raises InputError naming the line where the record starts. The
    reader calls `record_read` after each record.
    """

    def __init__(self, stream: IO[bytes], path: Path) -> None:
        self._lines = _raw_lines(stream, path)
        self._path = path
        self._bytes = 0  # of the record being read, so far
        self._first: int | None = None  # its first line

    def __iter__(self) -> _CsvRecordLines:
        """Return the lines' iterator: itself."""
        return self

    def __next__(self) -> str:
        """Return the next line, decoded; InputError past a record's limit."""
        line, raw = next(self._lines)
        if self._first is None:
            self._first = line
        self._bytes += len(raw)
        if self._bytes > MAX_LINE_BYTES:
            raise InputError(
                f"{_where(self._path, self._first)}: a record longer than "
                f"{MAX_LINE_BYTES:,} bytes (by line {line:,}: an unterminated quote?)"
            )
        content = _decode(raw, self._path, line)
        return content.removeprefix("\ufeff") if line == 1 else content

    def record_read(self) -> None:
        """Start counting a new record."""
        self._bytes, self._first = 0, None


def _text_rows(
    stream: IO[bytes],
    path: Path,
    format: str,
    text_field: str,
    id_field: str | None,
    skipped: Skipped | None,
) -> Iterator[Row]:
    """Yield ``(row, line, record)``: every line is a document."""
    row = 0
    for line, raw in _raw_lines(stream, path):
        try:
            content = _decode(raw, path, line).rstrip("\r\n")
        except InputError as error:
            if skipped is None:
                raise
            skipped.add(error)
            continue
        content = content.removeprefix("\ufeff") if line == 1 else content
        yield row, content, {"id": row, "text": content}
        row += 1


def _parquet_batches(
    path: Path,
    text_field: str,
    id_field: str | None,
    batch_size: int,
    keep_records: bool,
    skipped: Skipped | None,
) -> Iterator[DocumentBatch]:
    """Yield batches from a Parquet file, column by column through pyarrow."""
    pq = require_pyarrow()
    import pyarrow as pa

    try:
        parquet = pq.ParquetFile(path, page_checksum_verification=True)
    except (pa.ArrowException, OSError) as error:
        if isinstance(error, FileNotFoundError | PermissionError | IsADirectoryError):
            raise
        raise InputError(f"{path}: not a readable Parquet file ({error})") from None
    names = parquet.schema_arrow.names
    spec = TextField.parse(text_field) if text_field not in names else None
    text_columns = [text_field] if spec is None else spec.top_level
    for name in (*text_columns, id_field):
        if name is not None and name not in names:
            raise InputError(f"{path}: no column {name!r} (columns: {', '.join(names)})")
    wanted = [*text_columns, *([id_field] if id_field is not None else [])]
    columns = None if keep_records else list(dict.fromkeys(wanted))
    first = position = 0  # documents so far, rows of the file so far
    size, rows = path.stat().st_size, max(parquet.metadata.num_rows, 1)
    consumed.opened(size, lambda: size * position // rows)  # bytes in proportion to rows
    try:
        for record_batch in parquet.iter_batches(batch_size=batch_size, columns=columns):
            n = record_batch.num_rows
            values = (
                record_batch.column(text_field).to_pylist()
                if spec is None
                else record_batch.select(text_columns).to_pylist()
            )
            raw_ids = record_batch.column(id_field).to_pylist() if id_field else [None] * n
            texts: list[str] = []
            ids: list[int | str] = []
            good: list[int] = []
            for k in range(n):
                try:
                    text = _parquet_text(values[k], spec, text_field, path, position + k)
                    doc_id = _parquet_id(raw_ids[k], id_field, path, position + k)
                except InputError as error:
                    if skipped is None:
                        raise
                    skipped.add(error)
                    continue
                texts.append(text)
                ids.append(first + len(good) if doc_id is None else doc_id)
                good.append(k)
            records = table = None
            if keep_records:
                every = record_batch.to_pylist()
                records = every if len(good) == n else [every[k] for k in good]
                table = pa.Table.from_batches([record_batch])
                if len(good) < n:
                    from gpusimhash.io.parquet_schema import take_rows

                    table = take_rows(table, np.array(good))
            if texts:
                yield _batch(first, ids, texts, records, table)
            first += len(texts)
            position += n
    except (pa.ArrowException, OSError, ValueError) as error:  # damaged pages, bad UTF-8
        if isinstance(error, InputError):
            raise
        raise InputError(f"{path}, row {position}: cannot read Parquet data ({error})") from None


def _parquet_text(value: Any, spec: TextField | None, name: str, path: Path, row: int) -> str:
    """Return a row's text (one column, or nested or several through ``spec``)."""
    if spec is not None:
        try:
            return spec.text(value)
        except FieldError as error:
            raise InputError(f"{path}, row {row}: {error}") from None
    if not isinstance(value, str):
        _raise_row(path, row, name, value, "a string")
    return value


def _parquet_id(value: Any, id_field: str | None, path: Path, row: int) -> int | str | None:
    """Return a row's id (None without an id column)."""
    if id_field is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | str):
        _raise_row(path, row, id_field, value, "an integer or a string")
    return value


def _raise_row(path: Path, row: int, field: str, value: Any, expected: str) -> NoReturn:
    """Raise an InputError for a bad value in a Parquet row."""
    raise InputError(
        f"{path}, row {row}: column {field!r} must be {expected}, got {_describe(value)}"
    )
