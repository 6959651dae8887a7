"""The exact similarity of two merged documents, inline, for the loops that verify pairs.

The walk of ``_verify_loops.pair_similarity`` without the union sums: the same products added
in the same (state) order, so the same bits. Documents are merged ones
(``_verify_loops.merge_documents``); their weights may be narrowed exactly (int8, int16,
float32) and are widened to float64 before any product.
"""

from libc.math cimport NAN, ldexp, sqrt
from libc.stdint cimport int8_t, int16_t, int64_t, uint32_t

from gpusimhash._cpu._minmax cimport py_max, py_min
from gpusimhash._cpu._prefetch cimport prefetch

ctypedef fused weight_t:
    double
    float
    int16_t
    int8_t

cdef enum:
    MEASURE_NONE = 0  # every candidate accepted unverified (similarity NaN)
    MEASURE_COSINE = 1
    MEASURE_JACCARD = 2
    # features per prefetched line: 16 four-byte states fill a 64-byte cache line
    PREFETCH_STRIDE = 16


cdef struct Documents:
    const uint32_t *states
    const int64_t *offsets
    const int64_t *exponents
    const double *squared_norms


cdef inline bint passes(
    Documents documents,
    const weight_t *weights,
    int64_t a,
    int64_t b,
    int measure,
    double value,
    double *similarity,
) noexcept nogil:
    """Whether merged documents ``a`` and ``b`` reach the threshold; their similarity in ``similarity``.

    The similarity is that of ``_verify_loops.pair_similarity``, bit for bit (NaN, never
    passing, when a document is featureless; NaN and passing when ``measure`` verifies nothing).
    """
    cdef int64_t i, i_end, j, j_end, size_a, size_b, shared = 0
    cdef int shift_a, shift_b
    cdef uint32_t state_a, state_b
    cdef double dot = 0.0, wa, wb
    if measure == MEASURE_NONE:
        similarity[0] = NAN
        return True
    i, i_end = documents.offsets[a], documents.offsets[a + 1]
    j, j_end = documents.offsets[b], documents.offsets[b + 1]
    size_a = i_end - i
    size_b = j_end - j
    if size_a == 0 or size_b == 0:
        similarity[0] = NAN
        return False
    shift_a = -documents.exponents[a]
    shift_b = -documents.exponents[b]
    while i < i_end and j < j_end:  # both cursors step without a branch on the order
        state_a = documents.states[i]
        state_b = documents.states[j]
        if state_a == state_b:
            wa = <double>weights[i]
            wb = <double>weights[j]
            dot += ldexp(wa, shift_a) * ldexp(wb, shift_b)
            shared += 1
        i += state_a <= state_b
        j += state_b <= state_a
    if measure == MEASURE_COSINE:
        similarity[0] = py_min(
            1.0,
            py_max(-1.0, dot / sqrt(documents.squared_norms[a] * documents.squared_norms[b])),
        )
    else:
        similarity[0] = <double>shared / <double>(size_a + size_b - shared)
    return similarity[0] >= value


cdef inline void prefetch_document(
    Documents documents, const weight_t *weights, int64_t a
) noexcept nogil:
    """Prefetch every cache line of merged document ``a``'s features (`passes` reads them)."""
    cdef int64_t start = documents.offsets[a], stop = documents.offsets[a + 1], q
    q = start
    while q < stop:
        prefetch(&documents.states[q])
        prefetch(&weights[q])
        prefetch(&weights[q + PREFETCH_STRIDE // 2])  # float64 weights: the line's second half
        q += PREFETCH_STRIDE
    if stop > start:
        prefetch(&documents.states[stop - 1])
        prefetch(&weights[stop - 1])
    prefetch(&documents.exponents[a])
    prefetch(&documents.squared_norms[a])
