"""Compiled tokenizer over UTF-8 bytes (Numba): no Python string per document.

``utf8_tokens`` decodes a batch of UTF-8 documents, classifies and lower-cases each code point
through the shipped Unicode tables and emits the word tokens in one pass: what
``gpusimhash.text.tokenize`` computes from Python strings, with the token code points compacted
(only word code points are kept) and each token's FNV-1a state computed on the way. Validation is
Python's strict ``"utf-8"`` codec: the first invalid byte stops the pass and is reported.
``utf8_token_parts`` runs it on ranges of documents in threads (it releases the GIL).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np
from numba import njit

from gpusimhash._cpu._copy import copy_run

_FNV_OFFSET_BASIS = np.uint32(0x811C9DC5)
_FNV_PRIME = np.uint32(0x01000193)


@njit(cache=True, nogil=True, inline="always")
def _fnv(state: np.uint32, code_point: np.uint32) -> np.uint32:  # pragma: no cover - compiled
    """FNV-1a over the UTF-16 units of one code point (a surrogate pair above U+FFFF)."""
    if code_point > 0xFFFF:
        offset = code_point - np.uint32(0x10000)
        state = (state ^ (np.uint32(0xD800) + (offset >> np.uint32(10)))) * _FNV_PRIME
        code_point = np.uint32(0xDC00) + (offset & np.uint32(0x3FF))
    return (state ^ code_point) * _FNV_PRIME


@njit(cache=True, nogil=True)
def _grow(array: np.ndarray, size: int) -> np.ndarray:  # pragma: no cover - compiled
    bigger = np.empty(size, dtype=array.dtype)
    copy_run(bigger, 0, array, 0, array.size)
    return bigger


@njit(cache=True, nogil=True)
def _fill(
    data: np.ndarray,
    offsets: np.ndarray,
    doc: int,
    word: np.ndarray,
    lower: np.ndarray,
    lowercase: bool,
    code_points: np.ndarray,
    size: int,
    starts: np.ndarray,
    lengths: np.ndarray,
    docs: np.ndarray,
    states: np.ndarray,
    count: int,
) -> tuple[int, int, int, int]:  # pragma: no cover - compiled
    """Tokenize documents from ``doc`` on while the token arrays surely have room.

    Returns ``(next_doc, size, count, error)``; ``error`` is the first invalid byte or -1.
    """
    n_docs = offsets.size - 1
    while doc < n_docs:
        i = offsets[doc]
        end = offsets[doc + 1]
        if count + (end - i + 1) // 2 > starts.size:
            break  # the caller grows the arrays: a document has at most (bytes + 1) / 2 tokens
        in_token = False
        state = _FNV_OFFSET_BASIS
        while i < end:
            byte = np.uint32(data[i])
            if byte < 0x80:
                code_point = byte
                i += 1
            else:
                if byte < 0xC2:
                    length = 0
                elif byte < 0xE0:
                    length = 2
                elif byte < 0xF0:
                    length = 3
                elif byte < 0xF5:
                    length = 4
                else:
                    length = 0
                if length == 0 or i + length > end:
                    return doc, size, count, i
                code_point = byte & np.uint32(0xFF >> (length + 1))
                for k in range(1, length):
                    following = np.uint32(data[i + k])
                    if (following & 0xC0) != 0x80:
                        return doc, size, count, i
                    code_point = (code_point << np.uint32(6)) | (following & np.uint32(0x3F))
                if length == 2:
                    smallest = 0x80
                elif length == 3:
                    smallest = 0x800
                else:
                    smallest = 0x10000
                if (
                    code_point < smallest
                    or code_point > 0x10FFFF
                    or (code_point >= 0xD800 and code_point <= 0xDFFF)
                ):
                    return doc, size, count, i
                i += length
            if word[code_point]:
                if lowercase:
                    code_point = lower[code_point]
                if not in_token:
                    starts[count] = size
                    docs[count] = doc
                    state = _FNV_OFFSET_BASIS
                    in_token = True
                code_points[size] = code_point
                size += 1
                state = _fnv(state, code_point)
            elif in_token:
                lengths[count] = size - starts[count]
                states[count] = state
                count += 1
                in_token = False
        if in_token:
            lengths[count] = size - starts[count]
            states[count] = state
            count += 1
        doc += 1
    return doc, size, count, -1


@njit(cache=True, nogil=True)
def utf8_tokens(
    data: np.ndarray,
    offsets: np.ndarray,
    word: np.ndarray,
    lower: np.ndarray,
    lowercase: bool,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:  # pragma: no cover
    """Word tokens of UTF-8 documents ``data[offsets[d] : offsets[d + 1]]``.

    Returns ``(code_points, starts, lengths, doc, states, error)``: the tokens' (lower-cased)
    code points back to back, each token's start and length in them, its document, its FNV-1a
    state, and the first invalid byte position (-1 when the bytes are valid UTF-8).
    """
    n_docs = offsets.size - 1
    n_bytes = offsets[-1] - offsets[0]
    code_points = np.empty(max(n_bytes, 1), dtype=np.uint32)
    capacity = n_bytes // 4 + 16
    starts = np.empty(capacity, dtype=np.int64)
    lengths = np.empty(capacity, dtype=np.int64)
    docs = np.empty(capacity, dtype=np.int64)
    states = np.empty(capacity, dtype=np.uint32)
    doc, size, count, error = 0, 0, 0, -1
    while True:
        doc, size, count, error = _fill(
            data, offsets, doc, word, lower, lowercase, code_points, size,
            starts, lengths, docs, states, count,
        )  # fmt: skip
        if error >= 0 or doc >= n_docs:
            break
        needed = count + (offsets[doc + 1] - offsets[doc] + 1) // 2
        capacity = max(2 * starts.size, needed)
        starts = _grow(starts, capacity)
        lengths = _grow(lengths, capacity)
        docs = _grow(docs, capacity)
        states = _grow(states, capacity)
    return code_points[:size], starts[:count], lengths[:count], docs[:count], states[:count], error


# Bytes per thread at least: smaller batches are tokenized by one thread.
PART_BYTES = 1 << 20

Part = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, int, int]


def utf8_token_parts(
    data: np.ndarray, offsets: np.ndarray, word: np.ndarray, lower: np.ndarray, lowercase: bool
) -> list[Part]:
    """Run ``utf8_tokens`` on consecutive ranges of documents, one thread per range.

    Returns
    -------
    list of (code_points, starts, lengths, doc, states, first_doc, error)
        One per range, in order: ``utf8_tokens``' results (token starts and documents counted
        from the range's own beginning), the range's first document, and its error.
    """
    n_docs = offsets.size - 1
    n_bytes = int(offsets[-1] - offsets[0]) if n_docs > 0 else 0
    n_parts = max(1, min(numba.get_num_threads(), n_bytes // PART_BYTES, n_docs))
    targets = np.linspace(offsets[0], offsets[-1], n_parts + 1)[1:-1]
    inner = {int(cut) for cut in np.searchsorted(offsets, targets)} - {0, n_docs}
    cuts = [0, *sorted(inner), n_docs]

    def run(first: int, last: int) -> Part:
        result = utf8_tokens(data, offsets[first : last + 1], word, lower, lowercase)
        return (*result[:5], first, result[5])

    if len(cuts) == 2:
        return [run(0, n_docs)]
    with ThreadPoolExecutor(len(cuts) - 1) as pool:
        return list(pool.map(run, cuts[:-1], cuts[1:]))
