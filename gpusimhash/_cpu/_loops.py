"""Compiled CPU loops (Numba): the places where a per-element loop beats whole-array NumPy.

* ``fnv1a_spans``: FNV-1a is a sequential state machine, so hashing many short strings is one
  tight loop over their code units.
* ``word_runs``: token boundaries in one pass over the word mask.
* ``accumulate_codes``: each entry's sign words are drawn and its weight added to the ``bits``
  slots of its document in int64; documents run in parallel, each slot sum is exact, and the
  order of entries cannot change it.

Both mirror ``kernels/common.cuh`` and ``kernels/simhash.cu`` step for step.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

_MASK32 = np.uint64(0xFFFFFFFF)
_FNV_PRIME = np.uint64(0x01000193)


@njit(cache=True, nogil=True)
def fnv1a_spans(
    states: np.ndarray, code_points: np.ndarray, starts: np.ndarray, lengths: np.ndarray
) -> np.ndarray:  # pragma: no cover - compiled
    """Continue FNV-1a from ``states[k]`` over the UTF-16 units of a span of code points.

    The span is ``code_points[starts[k] : starts[k] + lengths[k]]``; a code point above U+FFFF
    is hashed as its surrogate pair, so UTF-16 units themselves (all below U+10000) pass
    through unchanged.
    """
    out = np.empty(states.size, dtype=np.uint32)
    for k in range(states.size):
        h = np.uint64(states[k])
        for position in range(starts[k], starts[k] + lengths[k]):
            unit = np.uint64(code_points[position])
            if unit > 0xFFFF:
                offset = unit - np.uint64(0x10000)
                high = np.uint64(0xD800) + (offset >> np.uint64(10))
                h = ((h ^ high) * _FNV_PRIME) & _MASK32
                unit = np.uint64(0xDC00) + (offset & np.uint64(0x3FF))
            h = ((h ^ unit) * _FNV_PRIME) & _MASK32
        out[k] = np.uint32(h)
    return out


@njit(cache=True, nogil=True)
def word_runs(
    is_word: np.ndarray, doc_starts: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # pragma: no cover - compiled
    """Maximal runs of word code points: their starts, lengths and documents.

    ``doc_starts`` are the documents' first positions, ascending; the text between documents is
    a non-word separator, so no run crosses a document boundary.
    """
    size = is_word.size
    starts = np.empty(size // 2 + 1, dtype=np.int64)
    lengths = np.empty(size // 2 + 1, dtype=np.int64)
    docs = np.empty(size // 2 + 1, dtype=np.int64)
    count = 0
    doc = 0
    position = 0
    while position < size:
        if not is_word[position]:
            position += 1
            continue
        start = position
        while position < size and is_word[position]:
            position += 1
        while doc + 1 < doc_starts.size and doc_starts[doc + 1] <= start:
            doc += 1
        starts[count] = start
        lengths[count] = position - start
        docs[count] = doc
        count += 1
    return starts[:count].copy(), lengths[:count].copy(), docs[:count].copy()


@njit(cache=True, nogil=True, parallel=True)
def accumulate_codes(
    hashes: np.ndarray, offsets: np.ndarray, weights: np.ndarray, bits: int
) -> np.ndarray:  # pragma: no cover - compiled
    """Sum each document's weighted signs and pack the positive slots, LSB first.

    ``hashes`` are final feature hashes (seed suffix applied), ``weights`` int64 fixed point.
    """
    n_docs = offsets.size - 1
    codes = np.zeros((n_docs, bits // 8), dtype=np.uint8)
    n_words = (bits + 31) // 32
    for doc in prange(n_docs):
        slots = np.zeros(bits, dtype=np.int64)
        for entry in range(offsets[doc], offsets[doc + 1]):
            weight = weights[entry]
            state = np.uint64(hashes[entry])
            if state == 0:
                state = np.uint64(1)
            for word in range(n_words):
                state ^= (state << np.uint64(13)) & _MASK32
                state ^= state >> np.uint64(17)
                state ^= (state << np.uint64(5)) & _MASK32
                base = 32 * word
                for bit in range(min(32, bits - base)):
                    sign = np.int64((state >> np.uint64(bit)) & np.uint64(1)) * 2 - 1
                    slots[base + bit] += sign * weight
        for bit in range(bits):
            if slots[bit] > 0:
                codes[doc, bit >> 3] |= np.uint8(1 << (bit & 7))
    return codes


@njit(cache=True, nogil=True)
def _unit_document(
    hashes: np.ndarray, start: int, stop: int, n_words: int, planes: np.ndarray, code: np.ndarray
) -> None:  # pragma: no cover - compiled
    """Count one document's set sign bits in ``planes`` and pack the majority into ``code``."""
    n = stop - start
    n_planes = 1
    while (1 << n_planes) <= n:
        n_planes += 1
    planes[:, :n_planes] = 0
    for entry in range(start, stop):
        state = np.uint64(hashes[entry])
        if state == 0:
            state = np.uint64(1)
        for word in range(n_words):
            word_bits = np.uint64(0)
            for half in range(2):
                state ^= (state << np.uint64(13)) & _MASK32
                state ^= state >> np.uint64(17)
                state ^= (state << np.uint64(5)) & _MASK32
                word_bits |= state << np.uint64(32 * half)
            carry = word_bits
            k = 0
            while carry != 0:  # a ripple-carry add of one to each set slot's count
                following = planes[word, k] & carry
                planes[word, k] ^= carry
                carry = following
                k += 1
    threshold = n // 2 + 1
    for word in range(n_words):
        greater = np.uint64(0)
        equal = ~np.uint64(0)
        for k in range(n_planes - 1, -1, -1):
            plane = planes[word, k]
            if (threshold >> k) & 1:
                equal &= plane
            else:
                greater |= equal & plane
                equal &= ~plane
        packed = greater | equal
        for byte in range(min(8, code.size - 8 * word)):
            code[8 * word + byte] = np.uint8((packed >> np.uint64(8 * byte)) & np.uint64(0xFF))


@njit(cache=True, nogil=True, parallel=True)
def accumulate_unit_codes(
    hashes: np.ndarray, offsets: np.ndarray, bits: int
) -> np.ndarray:  # pragma: no cover - compiled
    """``accumulate_codes`` for unit weights, with bit-sliced counters (as ``simhash.cu``).

    Each 64-bit word of sign bits is counted in planes (plane k holds bit k of all 64 slots'
    counts of set bits); slot i is set exactly when its count exceeds half the document's
    entries, which a most-significant-first comparison of the planes with n // 2 + 1 decides
    for all 64 slots at once. Same bits as the int64 sums of equal weights. Documents go in
    chunks, each chunk reusing one counter buffer.
    """
    n_docs = offsets.size - 1
    codes = np.zeros((n_docs, bits // 8), dtype=np.uint8)
    n_words = (bits + 63) // 64
    chunk = 256
    for first in prange((n_docs + chunk - 1) // chunk):
        planes = np.empty((n_words, 64), dtype=np.uint64)
        for doc in range(first * chunk, min(n_docs, first * chunk + chunk)):
            if offsets[doc + 1] > offsets[doc]:
                _unit_document(hashes, offsets[doc], offsets[doc + 1], n_words, planes, codes[doc])
    return codes
