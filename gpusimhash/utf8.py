r"""Documents as UTF-8 bytes plus offsets: text input without a Python string per document.

`Utf8Texts` is the layout of an Arrow ``string``/``large_string`` column (one byte buffer and
``n + 1`` offsets), of a newline-delimited file read as bytes, and what the GPU decodes on the
device. ``fingerprint`` and ``TextFeaturizer.transform`` accept it (and Arrow arrays, converted
without copying the bytes), and give the codes the same documents as ``str`` would get.

Examples
--------
>>> texts = Utf8Texts.from_strings(["the cat", "", "日本"])
>>> len(texts), texts.offsets.tolist()
(3, [0, 7, 7, 13])
>>> Utf8Texts.from_lines(b"one\r\ntwo\n").to_strings()
['one', 'two']
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Utf8Texts", "is_arrow_text"]

_NEWLINE, _CARRIAGE_RETURN = 0x0A, 0x0D
_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class Utf8Texts:
    """A batch of documents as UTF-8 bytes: document ``d`` is ``data[offsets[d]:offsets[d + 1]]``.

    Attributes
    ----------
    data : ndarray, shape (n_bytes,), dtype uint8
        The documents' bytes back to back (a view of Arrow's buffer or a file's bytes is fine).
    offsets : ndarray, shape (n_docs + 1,), dtype int64
        Non-decreasing byte offsets into ``data``; they need not start at 0. A read-only copy
        of the array given.

    Raises
    ------
    TypeError
        ``data`` not uint8 or ``offsets`` not integer.
    ValueError
        Offsets that decrease or leave ``data``.

    Examples
    --------
    >>> import numpy as np
    >>> texts = Utf8Texts(np.frombuffer(b"abcde", np.uint8), np.array([0, 2, 5]))
    >>> texts.to_strings(), texts[1:].to_strings()
    (['ab', 'cde'], ['cde'])
    """

    data: np.ndarray
    offsets: np.ndarray

    def __post_init__(self) -> None:
        """Check dtypes and offsets (int64, non-decreasing, inside ``data``)."""
        data, offsets = np.asarray(self.data), np.asarray(self.offsets)
        if data.dtype != np.uint8 or data.ndim != 1:
            raise TypeError(f"data must be a one-dimensional uint8 array, got {data.dtype}")
        if offsets.dtype.kind not in "iu" or offsets.ndim != 1 or offsets.size < 1:
            raise TypeError(
                f"offsets must be a one-dimensional integer array of n + 1 values, got "
                f"{offsets.dtype} with shape {offsets.shape}"
            )
        # a copy of its own, read-only: the compiled loops read the bytes it names unchecked, so
        # the caller's array, changed after this check, must not reach them
        offsets = np.array(offsets, dtype=np.int64)
        offsets.flags.writeable = False
        if offsets[0] < 0 or offsets[-1] > data.size or bool(np.any(offsets[1:] < offsets[:-1])):
            raise ValueError(
                f"offsets must be non-decreasing and within data ({data.size} bytes), got "
                f"{offsets[0]} .. {offsets[-1]}"
            )
        object.__setattr__(self, "data", data)
        object.__setattr__(self, "offsets", offsets)

    def __len__(self) -> int:
        """Return the number of documents."""
        return int(self.offsets.size - 1)

    def __getitem__(self, index: slice) -> Utf8Texts:
        """Return consecutive documents (a view: no bytes are copied)."""
        if not isinstance(index, slice) or index.step not in (None, 1):
            raise TypeError("Utf8Texts takes slices of consecutive documents only")
        start, stop, _ = index.indices(len(self))
        return Utf8Texts(self.data, self.offsets[start : max(start, stop) + 1])

    @property
    def nbytes(self) -> int:
        """Bytes of text in the batch."""
        return int(self.offsets[-1] - self.offsets[0])

    def compact(self) -> tuple[np.ndarray, np.ndarray]:
        """Return the batch's own bytes and offsets rebased to start at 0 (views, no copy)."""
        first = int(self.offsets[0])
        return self.data[first : int(self.offsets[-1])], self.offsets - first

    def to_strings(self) -> list[str]:
        """Decode every document (strict UTF-8).

        Returns
        -------
        list of str
        """
        data, offsets = self.compact()  # a slice's own bytes, not its whole batch's
        raw = data.tobytes()
        return [raw[a:b].decode("utf-8") for a, b in itertools.pairwise(offsets.tolist())]

    def code_point_counts(self) -> np.ndarray:
        """Return each document's length in code points (``len`` of its string).

        Returns
        -------
        ndarray, shape (n_docs,), dtype int64
        """
        data, offsets = self.compact()
        leads = np.zeros(data.size + 1, dtype=np.int64)
        np.cumsum((data & 0xC0) != 0x80, out=leads[1:])
        return leads[offsets[1:]] - leads[offsets[:-1]]

    @classmethod
    def from_strings(cls, texts: Sequence[str]) -> Utf8Texts:
        """Encode Python strings as UTF-8.

        Parameters
        ----------
        texts : sequence of str

        Returns
        -------
        Utf8Texts

        Raises
        ------
        UnicodeEncodeError
            A string holding a lone surrogate (not encodable as UTF-8).
        """
        encoded = [text.encode("utf-8") for text in texts]
        offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
        np.cumsum(np.fromiter(map(len, encoded), np.int64, len(encoded)), out=offsets[1:])
        return cls(np.frombuffer(b"".join(encoded), dtype=np.uint8), offsets)

    @classmethod
    def from_lines(
        cls, buffer: bytes | bytearray | memoryview | np.ndarray, *, strip_bom: bool = True
    ) -> Utf8Texts:
        r"""Split newline-delimited bytes into documents, one per line.

        Lines end at ``\n``; trailing ``\r`` characters are dropped (as ``rstrip("\r\n")``
        does on each line), and so is a UTF-8 byte order mark at the very start. A last line
        without a newline is a document; an empty buffer has none.

        Parameters
        ----------
        buffer : bytes-like or uint8 ndarray
        strip_bom : bool
            Drop a byte order mark at the start (False for a block from inside a file).

        Returns
        -------
        Utf8Texts
        """
        data = buffer if isinstance(buffer, np.ndarray) else np.frombuffer(buffer, np.uint8)
        skip = 3 if strip_bom and data[:3].tobytes() == _BOM else 0
        newlines = np.flatnonzero(data == _NEWLINE)
        ends = newlines
        if data.size and (newlines.size == 0 or newlines[-1] != data.size - 1):
            ends = np.append(newlines, data.size)
        starts = np.empty(ends.size, dtype=np.int64)
        starts[:1] = skip
        starts[1:] = newlines[: ends.size - 1] + 1
        ends = ends.astype(np.int64)
        keep = np.ones(data.size, dtype=bool)
        keep[:skip] = False
        keep[newlines] = False
        # trailing carriage returns of each line (rare: a loop over the lines having one)
        while True:
            last = np.maximum(ends - 1, 0)
            has = np.flatnonzero((ends > starts) & (data[last] == _CARRIAGE_RETURN))
            if has.size == 0:
                break
            ends[has] -= 1
            keep[ends[has]] = False
        offsets = np.zeros(ends.size + 1, dtype=np.int64)
        np.cumsum(ends - starts, out=offsets[1:])
        if offsets[-1] == data.size - skip:  # nothing to drop between the lines: a view
            return cls(data, offsets + skip)
        return cls(data[keep], offsets)

    @classmethod
    def from_arrow(cls, array: Any) -> Utf8Texts:
        """View a pyarrow ``string`` or ``large_string`` array (its buffers, not copied).

        Parameters
        ----------
        array : pyarrow.Array or pyarrow.ChunkedArray
            Of type ``string`` or ``large_string`` without nulls. A chunked array with more
            than one chunk is combined first (one copy).

        Returns
        -------
        Utf8Texts

        Raises
        ------
        TypeError
            Another Arrow type.
        ValueError
            A null document (the message names the first one).
        """
        import pyarrow as pa

        if isinstance(array, pa.ChunkedArray):
            array = array.combine_chunks() if array.num_chunks != 1 else array.chunk(0)
        if array.type == pa.string():
            offset_type: type[np.signedinteger[Any]] = np.int32
        elif array.type == pa.large_string():
            offset_type = np.int64
        else:
            raise TypeError(
                f"an Arrow text column must be string or large_string, got {array.type}"
            )
        if array.null_count:
            first_null = int(np.flatnonzero(np.asarray(array.is_null()))[0])
            raise ValueError(f"document {first_null}: null (expected text)")
        _, offset_buffer, data_buffer = array.buffers()
        n = len(array)
        if offset_buffer is None:  # an empty array may have no buffers
            return cls(np.zeros(0, np.uint8), np.zeros(1, np.int64))
        offsets = np.frombuffer(offset_buffer, dtype=offset_type)[
            array.offset : array.offset + n + 1
        ]
        data = (
            np.zeros(0, np.uint8) if data_buffer is None else np.frombuffer(data_buffer, np.uint8)
        )
        return cls(data, offsets.astype(np.int64))


def is_arrow_text(value: Any) -> bool:
    """Whether ``value`` is a pyarrow (chunked) array (pyarrow is imported only if loaded)."""
    import sys

    pa = sys.modules.get("pyarrow")
    return pa is not None and isinstance(value, pa.Array | pa.ChunkedArray)
