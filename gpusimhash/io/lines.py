r"""Newline-delimited text files read as bytes: batches of `Utf8Texts`, no string per line.

The documents are the lines ``read_batches(path, format="text")`` yields (line endings and a
leading byte order mark dropped, ``.gz`` decompressed), but they stay UTF-8 bytes: a file is read
in large blocks and split on ``\n`` with whole-array operations. ``fingerprint`` (CPU or GPU)
takes the batches as they are; bytes that are not valid UTF-8 raise there, naming the document
(its row, from 0).
"""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from pathlib import Path

from gpusimhash.io.readers import InputError, _open_binary, detect_format
from gpusimhash.utf8 import Utf8Texts

BLOCK_BYTES = 16 << 20


def read_line_batches(
    path: str | Path, *, batch_size: int = 10_000, block_bytes: int = BLOCK_BYTES
) -> Iterator[Utf8Texts]:
    r"""Yield the lines of a text file as `Utf8Texts` batches of at most ``batch_size``.

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
        The file cannot be read (the message names it).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "lines.txt"
    >>> _ = path.write_bytes(b"one\r\ntwo\nthree")
    >>> [batch.to_strings() for batch in read_line_batches(path, batch_size=2)]
    [['one', 'two'], ['three']]
    """
    path = Path(path)
    carry = b""
    first = True
    try:
        with _open_binary(path) as stream:
            while True:
                block = stream.read(block_bytes)
                data = carry + block
                if not block:  # the end: a last line without its newline
                    if data:
                        yield from _batches(Utf8Texts.from_lines(data, strip_bom=first), batch_size)
                    return
                cut = data.rfind(b"\n") + 1
                carry = data[cut:]
                if cut:
                    texts = Utf8Texts.from_lines(memoryview(data)[:cut], strip_bom=first)
                    first = False
                    yield from _batches(texts, batch_size)
    except (OSError, EOFError, gzip.BadGzipFile) as error:
        raise InputError(f"{path}: cannot read ({error})") from None


def plain_text_batches(
    path: str | Path, *, format: str | None = None, batch_size: int = 10_000
) -> Iterator[Utf8Texts] | None:
    """`read_line_batches` for a plain-text file (``format``, else guessed from the name).

    Parameters
    ----------
    path : str or Path
        The input file.
    format : str, optional
        As for ``read_batches``.
    batch_size : int
        Most documents per batch.

    Returns
    -------
    iterator of Utf8Texts, or None
        None when the file is not plain text (JSONL, CSV, Parquet carry fields to parse).
    """
    if (format or detect_format(path)) != "text":
        return None
    return read_line_batches(path, batch_size=batch_size)


def _batches(texts: Utf8Texts, batch_size: int) -> Iterator[Utf8Texts]:
    for start in range(0, len(texts), batch_size):
        yield texts[start : start + batch_size]
