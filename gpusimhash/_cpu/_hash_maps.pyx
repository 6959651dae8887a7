# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""`map_fault`: what, if anything, is wrong with one hash table of a saved multi-hash index.

FAISS writes each table of an ``IndexBinaryMultiHash`` as a bit string, least significant bit
first: for each key, the key (``b`` bits), its number of ids and the ids (``id_bits`` bits
each). FAISS reads it back without checking that each id is filed once, under its code's key.
"""

from libc.stdint cimport int64_t, uint8_t, uint64_t

import numpy as np

# what `map_fault` finds
cdef enum:
    NONE = 0
    OVERRUN = 1  # an entry runs past the table's bytes
    OUTSIDE = 2  # an id at or past the number of codes
    REPEATED = 3  # an id filed twice
    MISFILED = 4  # an id filed under another key than its code's
    MISSING = 5  # a code's id filed under no key

FAULTS = {
    NONE: None,
    OVERRUN: "an entry runs past the table",
    OUTSIDE: "an id past the stored codes",
    REPEATED: "an id filed twice",
    MISFILED: "an id filed under another key than its code's",
    MISSING: "a stored code filed under no key",
}


cdef inline uint64_t _read(const uint8_t* data, int64_t at, int nbit) noexcept nogil:
    """Return the ``nbit`` bits (at most 64) from bit ``at`` of ``data``, least significant first."""
    if nbit == 0:
        return 0
    cdef int64_t byte = at >> 3
    cdef int got = 8 - <int>(at & 7)
    cdef uint64_t value = data[byte] >> (at & 7)
    byte += 1
    while got < nbit:
        value |= (<uint64_t>data[byte]) << got
        got += 8
        byte += 1
    if nbit < 64:
        value &= ((<uint64_t>1) << nbit) - 1
    return value


def map_fault(const uint8_t[::1] table, int b, int id_bits, int64_t n_keys,
              const uint8_t[:, ::1] codes, int first_bit):
    """Check one table against the codes; return ``(fault, id)``: `NONE` and -1 where sound.

    Parameters
    ----------
    table : ndarray, dtype uint8
        The table's bytes, as FAISS wrote them.
    b : int
        Bits per key (1 to 64).
    id_bits : int
        Bits per id and per count (0 to 63).
    n_keys : int
        Keys the table holds.
    codes : ndarray, shape (n, code_bytes), dtype uint8
        The stored codes, by id.
    first_bit : int
        The first bit of each code that makes its key in this table.

    Returns
    -------
    fault : int
        `NONE`, or the first fault found (`OVERRUN`, `OUTSIDE`, `REPEATED`, `MISFILED`,
        `MISSING`).
    id : int
        The id at fault (-1 for `NONE` and `OVERRUN`).
    """
    cdef uint8_t[::1] seen = np.zeros(codes.shape[0], dtype=np.uint8)
    cdef int64_t ident = -1
    cdef int fault
    if not (1 <= b <= 64 and 0 <= id_bits <= 63 and 0 <= first_bit
            and first_bit + b <= codes.shape[1] * 8):
        raise ValueError(f"keys of {b} bits from bit {first_bit}, ids of {id_bits} bits")
    cdef const uint8_t* bits = NULL
    if table.shape[0]:
        bits = &table[0]
    with nogil:
        fault = _fault(bits, <int64_t>table.shape[0] * 8, b, id_bits, n_keys, codes, first_bit,
                       seen, &ident)
    return fault, ident


cdef int _fault(const uint8_t* bits, int64_t total_bits, int b, int id_bits, int64_t n_keys,
                const uint8_t[:, ::1] codes, int first_bit, uint8_t[::1] seen,
                int64_t* ident) noexcept nogil:
    """`map_fault` without the GIL: the fault, its id in ``ident``."""
    cdef int64_t n = codes.shape[0]
    cdef int64_t at = 0, entry, j, count, filed = 0
    cdef uint64_t key
    for entry in range(n_keys):
        ident[0] = -1
        if at + b + id_bits > total_bits:
            return OVERRUN
        key = _read(bits, at, b)
        count = <int64_t>_read(bits, at + b, id_bits)
        at += b + id_bits
        if id_bits and count > (total_bits - at) // id_bits:  # no product to overflow
            return OVERRUN  # (ident: -1)
        for j in range(count):
            ident[0] = <int64_t>_read(bits, at, id_bits)
            at += id_bits
            if ident[0] >= n:
                return OUTSIDE
            if seen[ident[0]]:
                return REPEATED
            seen[ident[0]] = 1
            if _read(&codes[ident[0], 0], first_bit, b) != key:
                return MISFILED
        filed += count
    ident[0] = -1
    if filed < n:
        for j in range(n):
            if not seen[j]:
                ident[0] = j
                return MISSING
    return NONE
