"""The exact feature join as one sparse matrix product: a second plan, in NumPy and SciPy.

The prefix filter of the index join (`gpusimhash._cpu._allpairs_loops` states it), in NumPy and
SciPy: features are ranked once, the most frequent first, and each document's *head*, its
longest run of most frequent features whose share stays below the threshold (of the squared
norm for the cosine, of the feature count for Jaccard, with the same relative margin of
``1e-9``), cannot reach the threshold alone. A pair at or above the threshold therefore shares
a feature in both *tails*: the rarest feature it shares. The candidates are the pairs of
documents whose tails share a feature, the nonzeros above the diagonal of ``T @ T.T`` (``T``
the documents-by-features incidence of the tails), and each is verified with the same exact
similarity as every other verification (`DocumentFeatures.comparer`).

Why a second plan: it is the index join's prefix filter written with whole-array operations,
an independent implementation of the same pairs with the same similarities, which the tests
and `bench/bench_join_plans.py` hold the compiled index to. It compares more candidates (the
index prunes them as it probes) and takes longer on every corpus measured, so
`gpusimhash.verify._feature_join.feature_join` runs it only when asked (``plan="product"``).
`frequency_ranks` serves both plans.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpusimhash._memory import check_memory
from gpusimhash.verify._features import DocumentFeatures

_MARGIN = 1e-9  # as the index join's: heads a little shorter, so rounding never hides a pair
_SHARE_BITS = 40


@dataclass(frozen=True)
class Tails:
    """Each document's tail: the features a pair at the threshold shares in both documents.

    Attributes
    ----------
    documents, features : ndarray, dtype int64
        One entry per tail feature: its document and its feature (its rank, `frequency_ranks`).
    n_docs, n_features : int
        The incidence matrix's shape.
    """

    documents: np.ndarray
    features: np.ndarray
    n_docs: int
    n_features: int

    def work(self) -> int:
        """Multiply-adds of ``T @ T.T``: the pairs of tail entries that share a feature."""
        counts = np.bincount(self.features, minlength=self.n_features).astype(np.int64)
        return int((counts * counts).sum())


def frequency_ranks(states: np.ndarray) -> tuple[np.ndarray, int]:
    """Rank every entry's feature: 0 for the most frequent, ties by state; and the rank count.

    Parameters
    ----------
    states : ndarray, dtype uint32
        The entries' feature states.

    Returns
    -------
    rank : ndarray, shape (states.size,), dtype int32
        Each entry's feature rank.
    n_ranks : int
        Distinct features.

    Examples
    --------
    >>> rank, n_ranks = frequency_ranks(np.array([7, 3, 7, 9, 3, 7], dtype=np.uint32))
    >>> rank.tolist(), n_ranks
    ([0, 1, 0, 2, 1, 0], 3)
    """
    distinct, inverse, frequency = _distinct_states(states)
    rank = np.empty(distinct.size, dtype=np.int32)
    rank[np.lexsort((distinct, -frequency))] = np.arange(distinct.size, dtype=np.int32)
    return rank[inverse], int(distinct.size)


def _distinct_states(states: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return ``np.unique(states, return_inverse=True, return_counts=True)``, sooner.

    The uint32 states are ordered by two stable sorts of their 16-bit halves, low then high:
    NumPy sorts 16-bit keys by radix sort, in linear time, where ``np.unique`` argsorts the
    states themselves: 0.15 s against 0.93 s on 4.3 million states
    (``bench/results/unique_cpu.json``). Other dtypes take ``np.unique``.
    """
    if states.dtype != np.uint32:
        distinct, inverse, counts = np.unique(states, return_inverse=True, return_counts=True)
        return distinct, inverse.reshape(-1), counts
    order = np.argsort((states & 0xFFFF).astype(np.uint16), kind="stable")
    order = order[np.argsort((states[order] >> 16).astype(np.uint16), kind="stable")]
    ordered = states[order]
    fresh = np.ones(states.size, dtype=bool)
    np.not_equal(ordered[1:], ordered[:-1], out=fresh[1:])
    starts = np.flatnonzero(fresh)
    inverse = np.empty(states.size, dtype=np.int64)
    inverse[order] = np.cumsum(fresh) - 1
    return ordered[starts], inverse, np.diff(np.append(starts, states.size))


def tails(features: DocumentFeatures, measure: str, value: float) -> Tails:
    """Split each document into head and tail by the prefix filter (the module's description).

    Parameters
    ----------
    features : DocumentFeatures
        The documents.
    measure : {"cosine", "jaccard"}
        Cosine of the weighted features or Jaccard of the feature sets (checked by the caller).
    value : float
        The threshold, in ``(0, 1]``.

    Returns
    -------
    Tails
    """
    sizes = features.sizes
    document = np.repeat(np.arange(features.n_docs, dtype=np.int64), sizes)
    rank, n_ranks = frequency_ranks(features.states)  # a feature's rank is its column
    order = np.lexsort((rank, document))  # each document's entries, most frequent first
    if measure == "cosine":
        shift = -np.repeat(features.exponents, sizes)
        scaled = np.ldexp(features.weights.astype(np.float64), shift)[order]
        share = scaled * scaled / np.repeat(features.squared_norms, sizes)
        # shares in units of 2**-40, rounded up: a document's running sum is then exact (no
        # cancellation across documents) and never below the true one, so a head is never long
        units = np.ceil(np.ldexp(share, _SHARE_BITS)).astype(np.int64)
        running = np.cumsum(units)
        first = features.offsets[:-1][sizes > 0]
        running -= np.repeat(running[first] - units[first], sizes[sizes > 0])
        in_tail = running >= np.ldexp(value * value * (1.0 - _MARGIN), _SHARE_BITS)
    else:  # Jaccard: the head holds fewer than t * |x| features
        position = np.arange(features.states.size) - np.repeat(features.offsets[:-1], sizes)
        head_size = np.ceil(value * sizes * (1.0 - _MARGIN)).astype(np.int64) - 1
        in_tail = position >= np.repeat(head_size, sizes)
    features_of_tails = rank[order][in_tail].astype(np.int64)
    return Tails(document[in_tail], features_of_tails, features.n_docs, n_ranks)


def product_candidates(found: Tails) -> np.ndarray:
    """Return the pairs of documents whose tails share a feature, each once.

    Parameters
    ----------
    found : Tails
        The documents' tails.

    Returns
    -------
    ndarray, shape (m, 2), dtype int64
        Pairs ``(i, j)``, ``i < j``, by ``i`` (``j`` in no particular order).

    Raises
    ------
    MemoryError
        A product that the memory available cannot hold (12 bytes per multiply-add, at most).
    """
    import scipy.sparse  # about 0.1 s to import: only the product plan needs it

    check_memory(12 * found.work(), f"the tails' product of {found.n_docs:,} documents needs")
    incidence = scipy.sparse.csr_matrix(
        (np.ones(found.documents.size, dtype=np.float32), (found.documents, found.features)),
        shape=(found.n_docs, found.n_features),
    )
    shared = (incidence @ incidence.T).tocsr()  # symmetric: each pair above the diagonal once
    rows = np.repeat(np.arange(found.n_docs, dtype=np.int64), np.diff(shared.indptr))
    above = shared.indices > rows
    return np.stack([rows[above], shared.indices[above].astype(np.int64)], axis=1)
