r"""Newline-delimited text files read as bytes: batches of `Utf8Texts`, no string per line.

The documents are the lines ``read_batches(path, format="text")`` yields (line endings and a
leading byte order mark dropped, ``.gz`` decompressed), but they stay UTF-8 bytes: a file is read
in large blocks and split on ``\n`` with whole-array operations. ``fingerprint`` (CPU or GPU)
takes the batches as they are. The same problems are refused as by ``read_batches``, with the
same one-line `InputError` naming file and line: invalid UTF-8, a line longer than
``readers.MAX_LINE_BYTES`` (in bounded memory: an endless stream without a newline stops there),
corrupt or empty compressed data.
"""

from __future__ import annotations

import codecs
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gpusimhash.io import readers
from gpusimhash.io.readers import (
    DocumentBatch,
    InputError,
    _open_binary,
    _too_long,
    detect_format,
    read_batches,
    unreadable,
)
from gpusimhash.io.skipped import Skipped
from gpusimhash.utf8 import Utf8Texts

BLOCK_BYTES = 16 << 20


def read_line_batches(
    path: str | Path, *, batch_size: int = 10_000, block_bytes: int = BLOCK_BYTES
) -> Iterator[Utf8Texts]:
    r"""Yield the lines of a text file as `Utf8Texts` batches of at most ``batch_size``.

    The lines are checked as ``read_batches`` checks them: valid UTF-8, and at most
    ``readers.MAX_LINE_BYTES`` bytes each (a stream without a newline, such as ``/dev/full``,
    is refused once its first line passes the limit, in bounded memory).

    Parameters
    ----------
    path : str or Path
        A text file, one document per line; ``.gz`` is decompressed.
    batch_size : int
        Most documents per batch (a batch never spans two blocks of the file).
    block_bytes : int
        Bytes read at a time.

    Yields
    ------
    Utf8Texts
        Consecutive lines, in file order.

    Raises
    ------
    InputError
        The file cannot be read, its compressed data is corrupt (a 0-byte ``.gz`` included), a
        line is longer than the limit or not valid UTF-8; the message names the file and line.
    FileNotFoundError, PermissionError, IsADirectoryError
        The file cannot be opened.
    ValueError
        A batch size or block size below 1.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "lines.txt"
    >>> _ = path.write_bytes(b"one\r\ntwo\nthree")
    >>> [batch.to_strings() for batch in read_line_batches(path, batch_size=2)]
    [['one', 'two'], ['three']]
    """
    if batch_size < 1 or block_bytes < 1:
        raise ValueError(
            f"batch_size and block_bytes must be at least 1, got {batch_size} and {block_bytes}"
        )
    path = Path(path)
    lines = 0  # lines read whole so far
    carry = b""
    with _open_binary(path) as stream:
        while True:
            try:
                block = stream.read(block_bytes)
            except (OSError, EOFError, zlib.error) as error:
                raise unreadable(path, lines + 1, error) from None
            data = carry + block if carry else block
            cut = data.rfind(b"\n") + 1 if block else len(data)  # no block: the last line
            carry = data[cut:]
            if len(carry) > readers.MAX_LINE_BYTES:
                raise _too_long(path, lines + 1)
            if cut:
                texts = _checked_lines(memoryview(data)[:cut], path, lines)
                yield from _batches(texts, batch_size)
                lines += len(texts)
            if not block:
                return


def _checked_lines(chunk: memoryview, path: Path, lines_before: int) -> Utf8Texts:
    """Split whole lines into documents; refuse invalid UTF-8 and over-long lines by line."""
    try:
        codecs.utf_8_decode(chunk, "strict", True)
    except UnicodeDecodeError as error:
        line = lines_before + chunk[: error.start].tobytes().count(b"\n") + 1
        raise InputError(f"{path}, line {line}: not valid UTF-8 ({error.reason})") from None
    texts = Utf8Texts.from_lines(chunk, strip_bom=lines_before == 0)
    # a line's bytes, its newline included (trailing carriage returns are not counted)
    too_long = np.flatnonzero(np.diff(texts.offsets) >= readers.MAX_LINE_BYTES)
    if too_long.size:
        raise _too_long(path, lines_before + int(too_long[0]) + 1)
    return texts


@dataclass(frozen=True)
class LineBatch:
    """Consecutive lines of a plain-text file, as UTF-8 bytes: a `DocumentBatch` without strings.

    Attributes
    ----------
    rows : ndarray, shape (n,), dtype int64
        Row number (line number less one) of each document.
    texts : Utf8Texts
        The lines, without their line endings.
    """

    rows: np.ndarray
    texts: Utf8Texts

    def __len__(self) -> int:
        """Return the number of documents."""
        return len(self.texts)

    @property
    def ids(self) -> list[int]:
        """Each document's id: its row number, as ``read_batches`` gives it for plain text."""
        ids: list[int] = self.rows.tolist()
        return ids


def document_batches(
    path: str | Path,
    *,
    format: str | None = None,
    text_field: str = "text",
    id_field: str | None = None,
    batch_size: int = 10_000,
    skipped: Skipped | None = None,
) -> Iterator[DocumentBatch | LineBatch]:
    r"""Read a document file for fingerprinting: plain text as UTF-8 bytes, the rest as text.

    A plain-text file (``format``, else guessed from the name) gives `LineBatch` batches
    (`read_line_batches`: no Python string per line); JSONL, CSV and Parquet give
    ``read_batches``' `DocumentBatch` (without records). Both have ``rows``, ``ids`` and
    ``texts``, which ``fingerprint`` and ``TextFeaturizer.transform`` take as they are, with
    the same codes.

    Parameters
    ----------
    path : str or Path
        The input file.
    format, text_field, id_field, batch_size, skipped
        As for ``read_batches`` (plain text has no fields: its ids are row numbers; lines that
        are skipped when invalid are read as ``str``, through ``read_batches``).

    Yields
    ------
    DocumentBatch or LineBatch
        Documents in file order.

    Raises
    ------
    InputError, FileNotFoundError, ImportError, ValueError
        As ``read_batches`` raises them.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "lines.txt"
    >>> _ = path.write_text("a cat\na dog\n")
    >>> [(b.ids, b.texts.to_strings()) for b in document_batches(path)]
    [([0, 1], ['a cat', 'a dog'])]
    """
    if (format or detect_format(path)) != "text" or skipped is not None:
        yield from read_batches(
            path,
            format=format,
            text_field=text_field,
            id_field=id_field,
            batch_size=batch_size,
            skipped=skipped,
        )
        return
    first = 0
    for texts in read_line_batches(path, batch_size=batch_size):
        yield LineBatch(np.arange(first, first + len(texts), dtype=np.int64), texts)
        first += len(texts)


def _batches(texts: Utf8Texts, batch_size: int) -> Iterator[Utf8Texts]:
    for start in range(0, len(texts), batch_size):
        yield texts[start : start + batch_size]
