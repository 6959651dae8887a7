# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Compiled tokenizer over UTF-8 bytes (Cython): no Python string per document.

``utf8_tokens`` decodes a batch of UTF-8 documents, classifies and lower-cases each code point
through the shipped Unicode tables and emits the word tokens in one pass: what
``gpusimhash.text.tokenize`` computes from Python strings, with the token code points compacted
(only word code points are kept) and each token's FNV-1a state computed on the way. Validation is
Python's strict ``"utf-8"`` codec: the first invalid byte stops the pass and is reported.
``utf8_token_parts`` runs it on ranges of documents in threads (it releases the GIL).
"""

from concurrent.futures import ThreadPoolExecutor

cimport cython
from libc.stdint cimport int64_t, uint8_t, uint32_t

import numpy as np

from gpusimhash._cpu._threads import threads

cdef uint32_t _FNV_OFFSET_BASIS = 0x811C9DC5
cdef uint32_t _FNV_PRIME = 0x01000193


cdef inline uint32_t _fnv(uint32_t state, uint32_t code_point) noexcept nogil:
    """FNV-1a over the UTF-16 units of one code point (a surrogate pair above U+FFFF)."""
    cdef uint32_t offset
    if code_point > 0xFFFF:
        offset = code_point - 0x10000
        state = (state ^ (0xD800 + (offset >> 10))) * _FNV_PRIME
        code_point = 0xDC00 + (offset & 0x3FF)
    return (state ^ code_point) * _FNV_PRIME


cdef struct _Progress:
    Py_ssize_t doc  # the next document to tokenize
    Py_ssize_t size  # code points written
    Py_ssize_t count  # tokens written
    Py_ssize_t error  # the first invalid byte, or -1


cdef void _fill(
    const uint8_t[::1] data,
    const int64_t[::1] offsets,
    const uint8_t[::1] word,
    const uint32_t[::1] lower,
    bint lowercase,
    uint32_t[::1] code_points,
    int64_t[::1] starts,
    int64_t[::1] lengths,
    int64_t[::1] docs,
    uint32_t[::1] states,
    _Progress *progress,
) noexcept nogil:
    """Tokenize documents from ``progress.doc`` on while the token arrays surely have room.

    Stops at the end, at a document that might not fit (the caller grows the arrays: a document
    has at most ``(bytes + 1) / 2`` tokens) or at the first invalid byte (``progress.error``).
    """
    cdef Py_ssize_t n_docs = offsets.shape[0] - 1
    cdef Py_ssize_t doc = progress.doc, size = progress.size, count = progress.count
    cdef Py_ssize_t i, end, k
    cdef uint32_t byte, code_point, following, smallest, state = _FNV_OFFSET_BASIS
    cdef int length
    cdef bint in_token
    progress.error = -1
    while doc < n_docs:
        i = offsets[doc]
        end = offsets[doc + 1]
        if count + (end - i + 1) // 2 > starts.shape[0]:
            break
        in_token = False
        state = _FNV_OFFSET_BASIS
        while i < end:
            byte = data[i]
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
                    progress.error = i
                    break
                code_point = byte & (0xFF >> (length + 1))
                for k in range(1, length):
                    following = data[i + k]
                    if (following & 0xC0) != 0x80:
                        progress.error = i
                        break
                    code_point = (code_point << 6) | (following & 0x3F)
                if progress.error >= 0:
                    break
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
                    progress.error = i
                    break
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
        if progress.error >= 0:
            break
        if in_token:
            lengths[count] = size - starts[count]
            states[count] = state
            count += 1
        doc += 1
    progress.doc = doc
    progress.size = size
    progress.count = count


def utf8_tokens(data, const int64_t[::1] offsets, word, const uint32_t[::1] lower, bint lowercase):
    """Word tokens of UTF-8 documents ``data[offsets[d] : offsets[d + 1]]``.

    ``data`` is uint8, ``word`` a bool table per code point, ``lower`` the lower-case code
    point of each. Returns ``(code_points, starts, lengths, doc, states, error)``: the tokens'
    (lower-cased) code points back to back (uint32), each token's start and length in them and
    its document (int64), its FNV-1a state (uint32), and the first invalid byte position (-1
    when the bytes are valid UTF-8).
    """
    cdef const uint8_t[::1] data_view = np.ascontiguousarray(data).view(np.uint8)
    cdef const uint8_t[::1] word_view = np.ascontiguousarray(word).view(np.uint8)
    cdef Py_ssize_t n_docs = offsets.shape[0] - 1
    cdef Py_ssize_t n_bytes = offsets[n_docs] - offsets[0]
    code_points = np.empty(max(n_bytes, 1), dtype=np.uint32)
    capacity = n_bytes // 4 + 16
    starts = np.empty(capacity, dtype=np.int64)
    lengths = np.empty(capacity, dtype=np.int64)
    docs = np.empty(capacity, dtype=np.int64)
    states = np.empty(capacity, dtype=np.uint32)
    cdef _Progress progress
    cdef uint32_t[::1] code_point_view = code_points
    cdef int64_t[::1] start_view, length_view, doc_view
    cdef uint32_t[::1] state_view
    progress.doc = progress.size = progress.count = 0
    progress.error = -1
    while True:
        start_view, length_view, doc_view, state_view = starts, lengths, docs, states
        with nogil:
            _fill(
                data_view, offsets, word_view, lower, lowercase, code_point_view, start_view,
                length_view, doc_view, state_view, &progress,
            )  # fmt: skip
        if progress.error >= 0 or progress.doc >= n_docs:
            break
        needed = progress.count + (offsets[progress.doc + 1] - offsets[progress.doc] + 1) // 2
        capacity = max(2 * starts.size, needed)
        starts = _grown(starts, capacity)
        lengths = _grown(lengths, capacity)
        docs = _grown(docs, capacity)
        states = _grown(states, capacity)
    size, count = progress.size, progress.count
    return (
        code_points[:size],
        starts[:count],
        lengths[:count],
        docs[:count],
        states[:count],
        progress.error,
    )


def _grown(array, size):
    """Return a copy of ``array`` with room for ``size`` elements."""
    bigger = np.empty(size, dtype=array.dtype)
    bigger[: array.size] = array
    return bigger


# Bytes per thread at least: smaller batches are tokenized by one thread.
PART_BYTES = 1 << 20


@cython.wraparound(True)  # Python code: negative indices count from the end
def utf8_token_parts(data, offsets, word, lower, lowercase):
    """Run ``utf8_tokens`` on consecutive ranges of documents, one thread per range.

    Returns
    -------
    list of (code_points, starts, lengths, doc, states, first_doc, error)
        One per range, in order: ``utf8_tokens``' results (token starts and documents counted
        from the range's own beginning), the range's first document, and its error.
    """
    n_docs = offsets.size - 1
    n_bytes = int(offsets[-1] - offsets[0]) if n_docs > 0 else 0
    n_parts = max(1, min(threads(), n_bytes // PART_BYTES, n_docs))
    targets = np.linspace(offsets[0], offsets[-1], n_parts + 1)[1:-1]
    inner = {int(cut) for cut in np.searchsorted(offsets, targets)} - {0, n_docs}
    cuts = [0, *sorted(inner), n_docs]

    def run(first, last):
        result = utf8_tokens(data, offsets[first : last + 1], word, lower, lowercase)
        return (*result[:5], first, result[5])

    if len(cuts) == 2:
        return [run(0, n_docs)]
    with ThreadPoolExecutor(len(cuts) - 1) as pool:
        return list(pool.map(run, cuts[:-1], cuts[1:]))
