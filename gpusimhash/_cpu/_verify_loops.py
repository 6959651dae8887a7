"""Compiled verification loops (Numba): exact similarities of candidate pairs from their features.

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

Documents and pairs run in parallel (``prange``); each result depends only on its own
document or pair, summed in state order, so results are identical for any batching, pair
order or thread count. Scaling by a power of two is exact, so the cosine equals
``dot / sqrt(|a|**2 * |b|**2)`` computed on the raw weights, bit for bit, whenever that
formula does not overflow.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from gpusimhash._cpu._sorting import stable_argsort


@njit(cache=True, nogil=True, parallel=True)
def merge_documents(
    states: np.ndarray, offsets: np.ndarray, weights: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:  # pragma: no cover
    """Sorted distinct states per document with summed weights, exponents and scaled norms.

    Returns ``(states, offsets, weights, exponents, squared_norms)`` of the merged documents.
    """
    n_docs = offsets.size - 1
    merged_states = np.empty(states.size, dtype=np.uint32)
    merged_weights = np.empty(states.size, dtype=np.float64)
    counts = np.zeros(n_docs, dtype=np.int64)
    exponents = np.zeros(n_docs, dtype=np.int64)
    squared_norms = np.zeros(n_docs, dtype=np.float64)
    for doc in prange(n_docs):
        lo = offsets[doc]
        size = offsets[doc + 1] - lo
        order = stable_argsort(states[lo : lo + size])
        out = lo
        i = 0
        largest = 0.0
        while i < size:
            state = states[lo + order[i]]
            total = 0.0
            while i < size and states[lo + order[i]] == state:
                total += weights[lo + order[i]]
                i += 1
            if total != 0.0:
                merged_states[out] = state
                merged_weights[out] = total
                largest = max(largest, abs(total))
                out += 1
        counts[doc] = out - lo
        if out > lo:
            exponent = math.frexp(largest)[1]
            exponents[doc] = exponent
            squared = 0.0
            for k in range(lo, out):
                scaled = math.ldexp(merged_weights[k], -exponent)
                squared += scaled * scaled
            squared_norms[doc] = squared
    new_offsets = np.zeros(n_docs + 1, dtype=np.int64)
    for doc in range(n_docs):
        new_offsets[doc + 1] = new_offsets[doc] + counts[doc]
    out_states = np.empty(new_offsets[n_docs], dtype=np.uint32)
    out_weights = np.empty(new_offsets[n_docs], dtype=np.float64)
    for doc in prange(n_docs):
        source = offsets[doc]
        target = new_offsets[doc]
        for k in range(counts[doc]):
            out_states[target + k] = merged_states[source + k]
            out_weights[target + k] = merged_weights[source + k]
    return out_states, new_offsets, out_weights, exponents, squared_norms


@njit(cache=True, nogil=True, parallel=True)
def pair_similarities(
    states: np.ndarray,
    offsets: np.ndarray,
    weights: np.ndarray,
    exponents: np.ndarray,
    squared_norms: np.ndarray,
    left: np.ndarray,
    right: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # pragma: no cover - compiled
    """Cosine, set Jaccard and weighted Jaccard of document pairs ``(left[p], right[p])``.

    The documents are merged ones (``merge_documents``). A pair with a featureless document gets
    NaN for all three.
    """
    m = left.size
    cosine = np.empty(m, dtype=np.float64)
    jaccard = np.empty(m, dtype=np.float64)
    weighted = np.empty(m, dtype=np.float64)
    for p in prange(m):
        cosine[p], jaccard[p], weighted[p] = pair_similarity(
            states, offsets, weights, exponents, squared_norms, left[p], right[p]
        )
    return cosine, jaccard, weighted


@njit(cache=True, nogil=True, inline="always")
def pair_similarity(
    states: np.ndarray,
    offsets: np.ndarray,
    weights: np.ndarray,
    exponents: np.ndarray,
    squared_norms: np.ndarray,
    a: int,
    b: int,
) -> tuple[float, float, float]:  # pragma: no cover - compiled
    """Cosine, set Jaccard and weighted Jaccard of merged documents ``a`` and ``b`` (one merge walk).

    NaN for all three when either document is featureless.
    """
    i, i_end = offsets[a], offsets[a + 1]
    j, j_end = offsets[b], offsets[b + 1]
    size_a = i_end - i
    size_b = j_end - j
    if size_a == 0 or size_b == 0:
        return np.nan, np.nan, np.nan
    shift_a = -exponents[a]
    shift_b = -exponents[b]
    dot = 0.0
    shared = 0
    low = 0.0
    high = 0.0
    while i < i_end or j < j_end:
        if j == j_end or (i < i_end and states[i] < states[j]):
            w = weights[i]
            low += min(w, 0.0)
            high += max(w, 0.0)
            i += 1
        elif i == i_end or states[j] < states[i]:
            w = weights[j]
            low += min(w, 0.0)
            high += max(w, 0.0)
            j += 1
        else:
            wa = weights[i]
            wb = weights[j]
            dot += math.ldexp(wa, shift_a) * math.ldexp(wb, shift_b)
            low += min(wa, wb)
            high += max(wa, wb)
            shared += 1
            i += 1
            j += 1
    value = dot / math.sqrt(squared_norms[a] * squared_norms[b])
    cosine = min(1.0, max(-1.0, value))
    jaccard = shared / (size_a + size_b - shared)
    weighted = low / high if high != 0.0 else np.nan
    return cosine, jaccard, weighted


@njit(cache=True, nogil=True)
def star_assign(
    order: np.ndarray, neighbour_offsets: np.ndarray, neighbours: np.ndarray, similarity: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:  # pragma: no cover - compiled
    """Greedy star clustering: in ``order``, an unassigned node is kept and takes its neighbours.

    Node ``v``'s neighbours are ``neighbours[neighbour_offsets[v] : neighbour_offsets[v + 1]]``,
    and ``similarity`` holds the similarity of each of those edges; the neighbours not yet
    assigned are taken. Returns the kept node of every node (itself when kept) and each node's
    similarity to it (1.0 when kept).
    """
    n = neighbour_offsets.size - 1
    kept_for = np.full(n, -1, dtype=np.int64)
    to_kept = np.ones(n, dtype=np.float64)
    for position in range(order.size):
        node = order[position]
        if kept_for[node] != -1:
            continue
        kept_for[node] = node
        for k in range(neighbour_offsets[node], neighbour_offsets[node + 1]):
            other = neighbours[k]
            if kept_for[other] == -1:
                kept_for[other] = node
                to_kept[other] = similarity[k]
    return kept_for, to_kept


_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


@njit(cache=True, nogil=True)
def _mix(x: np.uint64) -> np.uint64:  # pragma: no cover - compiled
    """splitmix64's finalizer."""
    x = (x ^ (x >> np.uint64(30))) * _MIX1
    x = (x ^ (x >> np.uint64(27))) * _MIX2
    return x ^ (x >> np.uint64(31))


@njit(cache=True, nogil=True, parallel=True)
def feature_hashes(
    states: np.ndarray, offsets: np.ndarray, weights: np.ndarray
) -> np.ndarray:  # pragma: no cover - compiled
    """Hash each merged document's (state, weight bits) sequence to 64 bits.

    Equal documents hash equally; callers confirm equal hashes with ``same_features``.
    """
    n_docs = offsets.size - 1
    out = np.empty(n_docs, dtype=np.uint64)
    bits = weights.view(np.uint64)
    for doc in prange(n_docs):
        h = _mix(np.uint64(offsets[doc + 1] - offsets[doc]) + _GOLDEN)
        for k in range(offsets[doc], offsets[doc + 1]):
            h = _mix(h ^ (np.uint64(states[k]) + _GOLDEN))
            h = _mix(h ^ bits[k])
        out[doc] = h
    return out


@njit(cache=True, nogil=True, parallel=True)
def same_features(
    states: np.ndarray,
    offsets: np.ndarray,
    weights: np.ndarray,
    left: np.ndarray,
    right: np.ndarray,
) -> np.ndarray:  # pragma: no cover - compiled
    """Whether merged documents ``left[p]`` and ``right[p]`` have identical states and weights."""
    m = left.size
    out = np.empty(m, dtype=np.bool_)
    for p in prange(m):
        a = left[p]
        b = right[p]
        size = offsets[a + 1] - offsets[a]
        same = size == offsets[b + 1] - offsets[b]
        k = 0
        while same and k < size:
            i = offsets[a] + k
            j = offsets[b] + k
            same = states[i] == states[j] and weights[i] == weights[j]
            k += 1
        out[p] = same
    return out
