# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Compiled CPU loops (Cython): the places where a per-element loop beats whole-array NumPy.

* ``fnv1a_spans``: FNV-1a is a sequential state machine, so hashing many short strings is one
  tight loop over their code units.
* ``word_runs``: token boundaries in one pass over the word mask.
* ``accumulate_codes``: each entry's sign words are drawn and its weight added to the ``bits``
  slots of its document in int64; documents run in parallel, each slot sum is exact, and the
  order of entries cannot change it.
* ``accumulate_unit_codes``: the same for unit weights, with bit-sliced counters.

They mirror ``kernels/common.cuh`` and ``kernels/simhash.cu`` step for step.
"""

from cython.parallel cimport parallel, prange, threadid
from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc

import numpy as np

from gpusimhash._cpu._threads import threads

cdef extern from "_signs.h":
    void gpusimhash_add_signs(
        int64_t *slots, const uint32_t *hashes, const int64_t *weights, int64_t n, int bits
    ) nogil

cdef uint64_t _MASK32 = 0xFFFFFFFF
cdef uint64_t _FNV_PRIME = 0x01000193


def fnv1a_spans(
    const uint32_t[::1] states,
    const uint32_t[::1] code_points,
    const int64_t[::1] starts,
    const int64_t[::1] lengths,
):
    """Continue FNV-1a from ``states[k]`` over the UTF-16 units of a span of code points.

    The span is ``code_points[starts[k] : starts[k] + lengths[k]]``; a code point above U+FFFF
    is hashed as its surrogate pair, so UTF-16 units themselves (all below U+10000) pass
    through unchanged. Returns the states, uint32.
    """
    out = np.empty(states.shape[0], dtype=np.uint32)
    cdef uint32_t[::1] result = out
    cdef Py_ssize_t k, position
    cdef uint64_t h, unit, offset, high
    with nogil:
        for k in range(states.shape[0]):
            h = states[k]
            for position in range(starts[k], starts[k] + lengths[k]):
                unit = code_points[position]
                if unit > 0xFFFF:
                    offset = unit - 0x10000
                    high = 0xD800 + (offset >> 10)
                    h = ((h ^ high) * _FNV_PRIME) & _MASK32
                    unit = 0xDC00 + (offset & 0x3FF)
                h = ((h ^ unit) * _FNV_PRIME) & _MASK32
            result[k] = <uint32_t>h
    return out


def word_runs(is_word, const int64_t[::1] doc_starts):
    """Maximal runs of word code points: their starts, lengths and documents (int64 each).

    ``is_word`` is a bool array; ``doc_starts`` are the documents' first positions, ascending.
    The text between documents is a non-word separator, so no run crosses a document boundary.
    """
    cdef const uint8_t[::1] word = np.ascontiguousarray(is_word).view(np.uint8)
    cdef Py_ssize_t size = word.shape[0]
    starts_out = np.empty(size // 2 + 1, dtype=np.int64)
    lengths_out = np.empty(size // 2 + 1, dtype=np.int64)
    docs_out = np.empty(size // 2 + 1, dtype=np.int64)
    cdef int64_t[::1] starts = starts_out
    cdef int64_t[::1] lengths = lengths_out
    cdef int64_t[::1] docs = docs_out
    cdef Py_ssize_t count = 0, doc = 0, position = 0, start
    with nogil:
        while position < size:
            if not word[position]:
                position += 1
                continue
            start = position
            while position < size and word[position]:
                position += 1
            while doc + 1 < doc_starts.shape[0] and doc_starts[doc + 1] <= start:
                doc += 1
            starts[count] = start
            lengths[count] = position - start
            docs[count] = doc
            count += 1
    return starts_out[:count].copy(), lengths_out[:count].copy(), docs_out[:count].copy()


cdef inline uint64_t _xorshift32(uint64_t state) noexcept nogil:
    """One xorshift32 step on a state held in 64 bits (kept below 2**32)."""
    state ^= (state << 13) & _MASK32
    state ^= state >> 17
    state ^= (state << 5) & _MASK32
    return state


cdef inline void _weighted_document(
    int64_t *slots,
    const uint32_t *hashes,
    const int64_t *weights,
    int64_t n_entries,
    int bits,
    uint8_t *code,
) noexcept nogil:
    """Sum one document's weighted signs in ``slots`` and pack the positive ones into ``code``.

    Pointers, not memoryviews: a memoryview passed per document would count its references
    atomically, from every thread at once.
    """
    cdef int bit, byte
    cdef uint8_t packed
    for bit in range(bits):
        slots[bit] = 0
    gpusimhash_add_signs(slots, hashes, weights, n_entries, bits)
    for byte in range(bits // 8):  # no branch per slot: the signs are coin flips
        packed = 0
        for bit in range(8):
            packed = packed | ((slots[8 * byte + bit] > 0) << bit)
        code[byte] = packed


def accumulate_codes(
    const uint32_t[::1] hashes, const int64_t[::1] offsets, const int64_t[::1] weights, int bits
):
    """Sum each document's weighted signs and pack the positive slots, LSB first.

    ``hashes`` are final feature hashes (seed suffix applied), ``weights`` int64 fixed point.
    Returns the codes, shape ``(n_docs, bits // 8)``, uint8.
    """
    cdef Py_ssize_t n_docs = offsets.shape[0] - 1
    codes_out = np.zeros((n_docs, bits // 8), dtype=np.uint8)
    cdef uint8_t[:, ::1] codes = codes_out
    cdef int n_threads = threads()
    failed_out = np.zeros(n_threads, dtype=np.uint8)
    cdef uint8_t[::1] failed = failed_out
    cdef Py_ssize_t doc
    cdef const uint32_t *hashes_at = &hashes[0]
    cdef const int64_t *weights_at = &weights[0]
    cdef int64_t *slots = NULL
    with nogil, parallel(num_threads=n_threads):
        # each thread's own slots from its own heap: rows of one shared array ran half as fast
        slots = <int64_t *> malloc(bits * sizeof(int64_t))
        if slots == NULL:
            failed[threadid()] = 1
        for doc in prange(n_docs, schedule="static"):
            if slots != NULL:
                _weighted_document(
                    slots, hashes_at + offsets[doc], weights_at + offsets[doc],
                    offsets[doc + 1] - offsets[doc], bits, &codes[doc, 0],
                )  # fmt: skip
        free(slots)
    if failed_out.any():
        raise MemoryError(f"accumulate_codes: no memory for {bits} slots")
    return codes_out


cdef void _unit_document(
    const uint32_t *hashes,
    Py_ssize_t n,
    int n_words,
    uint64_t *planes,
    uint8_t *code,
    int n_bytes,
) noexcept nogil:
    """Count the set sign bits of one document's ``n`` features in ``planes``; pack the majority.

    ``planes`` holds 64 planes per word (``planes[64 * word + k]``); ``code`` gets ``n_bytes``.
    """
    cdef Py_ssize_t entry
    cdef int n_planes = 1, word, half, k, byte
    cdef uint64_t state, word_bits, carry, following, greater, equal, plane, packed
    cdef Py_ssize_t threshold
    while (<Py_ssize_t>1 << n_planes) <= n:
        n_planes += 1
    for word in range(n_words):
        for k in range(n_planes):
            planes[64 * word + k] = 0
    for entry in range(n):
        state = hashes[entry]
        if state == 0:
            state = 1
        for word in range(n_words):
            word_bits = 0
            for half in range(2):
                state = _xorshift32(state)
                word_bits |= state << (32 * half)
            carry = word_bits
            k = 0
            while carry != 0:  # a ripple-carry add of one to each set slot's count
                following = planes[64 * word + k] & carry
                planes[64 * word + k] ^= carry
                carry = following
                k += 1
    threshold = n // 2 + 1
    for word in range(n_words):
        greater = 0
        equal = ~(<uint64_t>0)
        for k in range(n_planes - 1, -1, -1):
            plane = planes[64 * word + k]
            if (threshold >> k) & 1:
                equal &= plane
            else:
                greater |= equal & plane
                equal &= ~plane
        packed = greater | equal
        for byte in range(min(8, n_bytes - 8 * word)):
            code[8 * word + byte] = <uint8_t>((packed >> (8 * byte)) & 0xFF)


def accumulate_unit_codes(const uint32_t[::1] hashes, const int64_t[::1] offsets, int bits):
    """``accumulate_codes`` for unit weights, with bit-sliced counters (as ``simhash.cu``).

    Each 64-bit word of sign bits is counted in planes (plane k holds bit k of all 64 slots'
    counts of set bits); slot i is set exactly when its count exceeds half the document's
    entries, which a most-significant-first comparison of the planes with n // 2 + 1 decides
    for all 64 slots at once. Same bits as the int64 sums of equal weights.
    """
    cdef Py_ssize_t n_docs = offsets.shape[0] - 1
    codes_out = np.zeros((n_docs, bits // 8), dtype=np.uint8)
    cdef uint8_t[:, ::1] codes = codes_out
    cdef int n_words = (bits + 63) // 64
    cdef int n_threads = threads()
    failed_out = np.zeros(n_threads, dtype=np.uint8)
    cdef uint8_t[::1] failed = failed_out
    cdef const uint32_t *hashes_at = &hashes[0]
    cdef Py_ssize_t doc
    cdef uint64_t *planes = NULL
    with nogil, parallel(num_threads=n_threads):
        # each thread's counters (64 planes per word) from its own heap
        planes = <uint64_t *> malloc(n_words * 64 * sizeof(uint64_t))
        if planes == NULL:
            failed[threadid()] = 1
        for doc in prange(n_docs, schedule="static", chunksize=256):
            if planes != NULL and offsets[doc + 1] > offsets[doc]:
                _unit_document(
                    hashes_at + offsets[doc], offsets[doc + 1] - offsets[doc], n_words, planes,
                    &codes[doc, 0], bits // 8,
                )  # fmt: skip
        free(planes)
    if failed_out.any():
        raise MemoryError(f"accumulate_unit_codes: no memory for {bits} counters")
    return codes_out
