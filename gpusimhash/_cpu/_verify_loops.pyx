# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Compiled verification loops (Cython): exact similarities of candidate pairs from their features.

* ``merge_documents``: each document's (state, weight) entries are sorted by state (a stable
  sort, so equal states keep their entry order), equal states are merged by summing their
  weights in that order, and zero sums are dropped. Each document also gets the power of two
  ``e`` with ``max |w| = m * 2**e``, ``0.5 <= m < 1``, and its squared norm computed in units of
  ``2**e`` (``sum (w * 2**-e)**2``, never above the feature count, so it cannot overflow).
* ``pair_similarities``: one merge walk over the two sorted lists of a pair gives the dot
  product (scaled by the same powers of two), the shared feature count and the sums of the
  element-wise minimum and maximum over the union of features.
* ``feature_hashes`` and ``same_features``: documents with identical merged features are found
  by a 64-bit hash and confirmed entry by entry.
* ``star_assign``: the sequential greedy pass of star clustering.

Documents and pairs run in parallel (OpenMP); each result depends only on its own document or
pair, summed in state order, so results are identical for any batching, pair order or thread
count. Scaling by a power of two is exact, so the cosine equals ``dot / sqrt(|a|**2 * |b|**2)``
computed on the raw weights, bit for bit, whenever that formula does not overflow.
"""

from cython.parallel cimport parallel, prange, threadid
from libc.math cimport NAN, fabs, frexp, ldexp, sqrt
from libc.stdint cimport int8_t, int16_t, int64_t, uint32_t, uint64_t
from libc.string cimport memcpy

import numpy as np

from gpusimhash._cpu._minmax cimport py_max, py_min
from gpusimhash._cpu._sorting cimport SortScratch, stable_order, thread_scratch

from gpusimhash._cpu._sorting import sort_scratch
from gpusimhash._cpu._threads import threads

ctypedef fused state_t:
    uint32_t
    uint64_t

ctypedef fused weight_t:
    double
    float
    int16_t
    int8_t


def merge_documents(
    const uint32_t[::1] states, const int64_t[::1] offsets, const double[::1] weights
):
    """Sorted distinct states per document with summed weights, exponents and scaled norms.

    Returns ``(states, offsets, weights, exponents, squared_norms)`` of the merged documents
    (uint32, int64, float64, int64, float64).
    """
    cdef Py_ssize_t n_docs = offsets.shape[0] - 1
    cdef Py_ssize_t n_entries = states.shape[0]
    merged_states_out = np.empty(n_entries, dtype=np.uint32)
    merged_weights_out = np.empty(n_entries, dtype=np.float64)
    counts_out = np.zeros(n_docs, dtype=np.int64)
    exponents_out = np.zeros(n_docs, dtype=np.int64)
    squared_norms_out = np.zeros(n_docs, dtype=np.float64)
    cdef uint32_t[::1] merged_states = merged_states_out
    cdef double[::1] merged_weights = merged_weights_out
    cdef int64_t[::1] counts = counts_out
    cdef int64_t[::1] exponents = exponents_out
    cdef double[::1] squared_norms = squared_norms_out
    cdef Py_ssize_t longest = 0, doc
    for doc in range(n_docs):
        longest = max(longest, offsets[doc + 1] - offsets[doc])
    cdef int n_threads = threads()
    indices, keys = sort_scratch(n_threads, longest)
    cdef int64_t[:, ::1] index_rows = indices
    cdef uint32_t[:, ::1] key_rows = keys
    cdef Py_ssize_t lo, size, out, i, k
    cdef uint32_t state
    cdef double total, largest, squared, scaled
    cdef int exponent
    cdef SortScratch scratch
    with nogil, parallel(num_threads=n_threads):
        scratch = thread_scratch(index_rows, key_rows, threadid())
        for doc in prange(n_docs, schedule="static"):
            lo = offsets[doc]
            size = offsets[doc + 1] - lo
            if size > 0:
                stable_order(
                    &states[lo], size, scratch.order, scratch.ordered_keys, scratch.target_keys,
                    scratch.target,
                )  # fmt: skip
            out = lo
            i = 0
            largest = 0.0
            while i < size:
                state = states[lo + scratch.order[i]]
                total = 0.0
                while i < size and states[lo + scratch.order[i]] == state:
                    total = total + weights[lo + scratch.order[i]]
                    i = i + 1
                if total != 0.0:
                    merged_states[out] = state
                    merged_weights[out] = total
                    largest = py_max(largest, fabs(total))
                    out = out + 1
            counts[doc] = out - lo
            if out > lo:
                exponent = _binary_exponent(largest)
                exponents[doc] = exponent
                squared = 0.0
                for k in range(lo, out):
                    scaled = ldexp(merged_weights[k], -exponent)
                    squared = squared + scaled * scaled
                squared_norms[doc] = squared
    new_offsets = np.zeros(n_docs + 1, dtype=np.int64)
    np.cumsum(counts_out, out=new_offsets[1:])
    keep = np.repeat(np.asarray(offsets[:n_docs]) - new_offsets[:n_docs], counts_out)
    keep += np.arange(keep.size)
    return (
        merged_states_out[keep],
        new_offsets,
        merged_weights_out[keep],
        exponents_out,
        squared_norms_out,
    )


cdef inline int _binary_exponent(double value) noexcept nogil:
    """Return ``e`` with ``value = m * 2**e``, ``0.5 <= |m| < 1`` (``math.frexp(value)[1]``)."""
    cdef int exponent
    frexp(value, &exponent)
    return exponent


cdef inline void pair_similarity(
    const state_t[::1] states,
    const int64_t[::1] offsets,
    const double[::1] weights,
    const int64_t[::1] exponents,
    const double[::1] squared_norms,
    Py_ssize_t a,
    Py_ssize_t b,
    double *cosine,
    double *jaccard,
    double *weighted,
) noexcept nogil:
    """Cosine, set Jaccard and weighted Jaccard of merged documents ``a`` and ``b`` (one merge walk).

    NaN for all three when either document is featureless.
    """
    cdef Py_ssize_t i = offsets[a], i_end = offsets[a + 1]
    cdef Py_ssize_t j = offsets[b], j_end = offsets[b + 1]
    cdef Py_ssize_t size_a = i_end - i, size_b = j_end - j, shared = 0
    cdef int shift_a, shift_b
    cdef double dot = 0.0, low = 0.0, high = 0.0, w, wa, wb, value
    if size_a == 0 or size_b == 0:
        cosine[0] = jaccard[0] = weighted[0] = NAN
        return
    shift_a = -exponents[a]
    shift_b = -exponents[b]
    while i < i_end or j < j_end:
        if j == j_end or (i < i_end and states[i] < states[j]):
            w = weights[i]
            low += py_min(w, 0.0)
            high += py_max(w, 0.0)
            i += 1
        elif i == i_end or states[j] < states[i]:
            w = weights[j]
            low += py_min(w, 0.0)
            high += py_max(w, 0.0)
            j += 1
        else:
            wa = weights[i]
            wb = weights[j]
            dot += ldexp(wa, shift_a) * ldexp(wb, shift_b)
            low += py_min(wa, wb)
            high += py_max(wa, wb)
            shared += 1
            i += 1
            j += 1
    value = dot / sqrt(squared_norms[a] * squared_norms[b])
    cosine[0] = py_min(1.0, py_max(-1.0, value))
    jaccard[0] = <double>shared / <double>(size_a + size_b - shared)
    weighted[0] = low / high if high != 0.0 else NAN


def pair_similarities(
    const state_t[::1] states,
    const int64_t[::1] offsets,
    const double[::1] weights,
    const int64_t[::1] exponents,
    const double[::1] squared_norms,
    const int64_t[::1] left,
    const int64_t[::1] right,
):
    """Cosine, set Jaccard and weighted Jaccard of document pairs ``(left[p], right[p])``.

    The documents are merged ones (``merge_documents``). A pair with a featureless document gets
    NaN for all three. Returns three float64 arrays.
    """
    cdef Py_ssize_t m = left.shape[0], p
    cosine_out = np.empty(m, dtype=np.float64)
    jaccard_out = np.empty(m, dtype=np.float64)
    weighted_out = np.empty(m, dtype=np.float64)
    cdef double[::1] cosine = cosine_out
    cdef double[::1] jaccard = jaccard_out
    cdef double[::1] weighted = weighted_out
    cdef int n_threads = threads()
    for p in prange(m, nogil=True, schedule="static", num_threads=n_threads):
        pair_similarity(
            states, offsets, weights, exponents, squared_norms, left[p], right[p],
            &cosine[p], &jaccard[p], &weighted[p],
        )  # fmt: skip
    return cosine_out, jaccard_out, weighted_out


def star_assign(
    const int64_t[::1] order,
    const int64_t[::1] neighbour_offsets,
    const int64_t[::1] neighbours,
    const double[::1] similarity,
):
    """Greedy star clustering: in ``order``, an unassigned node is kept and takes its neighbours.

    Node ``v``'s neighbours are ``neighbours[neighbour_offsets[v] : neighbour_offsets[v + 1]]``,
    and ``similarity`` holds the similarity of each of those edges; the neighbours not yet
    assigned are taken. Returns the kept node of every node (itself when kept, int64) and each
    node's similarity to it (1.0 when kept, float64).
    """
    cdef Py_ssize_t n = neighbour_offsets.shape[0] - 1
    kept_for_out = np.full(n, -1, dtype=np.int64)
    to_kept_out = np.ones(n, dtype=np.float64)
    cdef int64_t[::1] kept_for = kept_for_out
    cdef double[::1] to_kept = to_kept_out
    cdef Py_ssize_t position, k
    cdef int64_t node, other
    with nogil:
        for position in range(order.shape[0]):
            node = order[position]
            if kept_for[node] != -1:
                continue
            kept_for[node] = node
            for k in range(neighbour_offsets[node], neighbour_offsets[node + 1]):
                other = neighbours[k]
                if kept_for[other] == -1:
                    kept_for[other] = node
                    to_kept[other] = similarity[k]
    return kept_for_out, to_kept_out


cdef uint64_t _GOLDEN = 0x9E3779B97F4A7C15
cdef uint64_t _MIX1 = 0xBF58476D1CE4E5B9
cdef uint64_t _MIX2 = 0x94D049BB133111EB


cdef inline uint64_t _mix(uint64_t x) noexcept nogil:
    """splitmix64's finalizer."""
    x = (x ^ (x >> 30)) * _MIX1
    x = (x ^ (x >> 27)) * _MIX2
    return x ^ (x >> 31)


def feature_hashes(
    const uint32_t[::1] states, const int64_t[::1] offsets, const double[::1] weights
):
    """Hash each merged document's (state, weight bits) sequence to 64 bits (uint64).

    Equal documents hash equally; callers confirm equal hashes with ``same_features``.
    """
    cdef Py_ssize_t n_docs = offsets.shape[0] - 1, doc, k
    out_array = np.empty(n_docs, dtype=np.uint64)
    cdef uint64_t[::1] out = out_array
    cdef uint64_t h, bits
    cdef int n_threads = threads()
    for doc in prange(n_docs, nogil=True, schedule="static", num_threads=n_threads):
        h = _mix(<uint64_t>(offsets[doc + 1] - offsets[doc]) + _GOLDEN)
        for k in range(offsets[doc], offsets[doc + 1]):
            h = _mix(h ^ (<uint64_t>states[k] + _GOLDEN))
            memcpy(&bits, &weights[k], sizeof(uint64_t))
            h = _mix(h ^ bits)
        out[doc] = h
    return out_array


def same_features(
    const uint32_t[::1] states,
    const int64_t[::1] offsets,
    const weight_t[::1] weights,
    const int64_t[::1] left,
    const int64_t[::1] right,
):
    """Whether merged documents ``left[p]`` and ``right[p]`` have identical states and weights."""
    cdef Py_ssize_t m = left.shape[0], p, size, k, i, j
    out_array = np.empty(m, dtype=np.bool_)
    cdef unsigned char[::1] out = out_array.view(np.uint8)
    cdef int64_t a, b
    cdef bint same
    cdef int n_threads = threads()
    for p in prange(m, nogil=True, schedule="static", num_threads=n_threads):
        a = left[p]
        b = right[p]
        size = offsets[a + 1] - offsets[a]
        same = size == offsets[b + 1] - offsets[b]
        k = 0
        while same and k < size:
            i = offsets[a] + k
            j = offsets[b] + k
            same = states[i] == states[j] and weights[i] == weights[j]
            k = k + 1
        out[p] = same
    return out_array
