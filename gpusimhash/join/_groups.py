"""What every join shares: the collapsed result, identical-code collapse, pair keys.

The exact join (`gpusimhash.join._exact`), the approximate one (`gpusimhash.join._lsh`) and
the clusters built on them all speak `DuplicateGroups`: identical codes collapsed to one
distinct code, and the pairs of distinct codes within the radius.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from gpusimhash import _segments, _validate
from gpusimhash._cpu._cluster_loops import first_seen_numbers
from gpusimhash._reprs import short_repr


@dataclass(frozen=True)
class DuplicateGroups:
    """Near-duplicate pairs in collapsed form: identical codes counted once.

    Attributes
    ----------
    inverse : ndarray, shape (n,), dtype int64
        For each input code, the index of its distinct code (``0 .. n_unique - 1``).
    unique_pairs : ndarray, shape (p, 2), dtype int64
        Pairs ``(a, b)``, ``a < b``, of distinct codes within the radius, sorted, no repeats.
        Input codes ``i != j`` are near-duplicates exactly when ``inverse[i] == inverse[j]`` or
        ``(inverse[i], inverse[j])`` (in some order) is one of these pairs.
    max_distance : int
        The Hamming radius used.

    Examples
    --------
    >>> import numpy as np
    >>> from gpusimhash import near_duplicate_groups
    >>> codes = np.array([[1], [1], [3], [200]], dtype=np.uint8)
    >>> groups = near_duplicate_groups(codes, max_distance=1)
    >>> groups.inverse.tolist(), groups.unique_pairs.tolist()
    ([0, 0, 1, 2], [[0, 1]])
    """

    inverse: np.ndarray
    unique_pairs: np.ndarray
    max_distance: int

    __repr__ = short_repr

    def __post_init__(self) -> None:
        """Check that the pairs name distinct codes the inverse index has.

        Raises
        ------
        TypeError, ValueError
            Arrays of other kinds or shapes, a negative code, a pair naming a code past the
            inverse index's largest, or pairs not ``a < b``, sorted and each once.
        """
        _validate.indices(self.inverse, np.iinfo(np.int64).max, "DuplicateGroups: inverse")
        pairs = self.unique_pairs
        if getattr(pairs, "ndim", 0) != 2 or pairs.shape[1] != 2:
            raise ValueError(
                "DuplicateGroups: unique_pairs must have shape (p, 2), got "
                f"{getattr(pairs, 'shape', type(pairs).__name__)}"
            )
        _validate.indices(pairs, self.n_unique, "DuplicateGroups: unique_pairs")
        a, b = pairs[:, 0], pairs[:, 1]
        later = (a[1:] > a[:-1]) | ((a[1:] == a[:-1]) & (b[1:] > b[:-1]))
        if not (np.all(a < b) and np.all(later)):
            raise ValueError(
                "DuplicateGroups: unique_pairs must be pairs (a, b) with a < b, sorted, each once"
            )

    @property
    def n_unique(self) -> int:
        """Number of distinct codes."""
        return int(self.inverse.max()) + 1 if self.inverse.size else 0

    def pairs(self) -> np.ndarray:
        """Expand to every input pair ``(i, j)``, ``i < j``, sorted (see `near_duplicates`)."""
        return expand_pairs(self.inverse, self.unique_pairs)


def collapse(words: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return the distinct rows of ``words`` and the inverse index (int64) of every row.

    The rows come in lexicographic order (word 0 first), as ``np.unique(axis=0)`` gives them:
    sorted by their first word, then the rows of each first word that several different rows
    share by their other words (near-duplicate codes often share a first word), not all rows
    by every word: 0.14 s against 0.22 s on 536,000 codes of 256 bits, a quarter of them one
    bit from another (``bench/results/unique_cpu.json``).

    Examples
    --------
    >>> unique, inverse = collapse(np.array([[5, 1], [2, 9], [5, 1], [5, 0]], dtype=np.uint64))
    >>> unique.tolist(), inverse.tolist()
    ([[2, 9], [5, 0], [5, 1]], [2, 0, 2, 1])
    """
    if words.shape[1] == 1:
        unique, inverse = np.unique(words[:, 0], return_inverse=True)
        return unique[:, None], inverse.astype(np.int64, copy=False)
    order = np.argsort(words[:, 0])
    ordered = words[order]
    first = np.ones(len(words), dtype=bool)
    first[1:] = (ordered[1:] != ordered[:-1]).any(axis=1)
    shared = np.zeros(len(words), dtype=bool)
    shared[1:] = ordered[1:, 0] == ordered[:-1, 0]
    if np.any(first & shared):  # a first word of several different rows: order those rows
        run = np.cumsum(~shared) - 1  # each first word's run of rows
        mixed = np.isin(run, run[first & shared])
        rows = ordered[mixed]
        within = np.lexsort((*rows[:, :0:-1].T, run[mixed]))
        order[mixed] = order[mixed][within]
        ordered[mixed] = rows[within]
        first[1:] = (ordered[1:] != ordered[:-1]).any(axis=1)
    inverse = np.empty(len(words), dtype=np.int64)
    inverse[order] = np.cumsum(first) - 1
    return ordered[first], inverse


def index_dtype(n: int) -> type[np.signedinteger[Any]]:
    """Return the integer type of indices below ``n``: int32 when they fit, else int64.

    Examples
    --------
    >>> index_dtype(10**6).__name__, index_dtype(2**31 + 1).__name__
    ('int32', 'int64')
    """
    return np.int32 if n <= np.iinfo(np.int32).max else np.int64


def first_seen_labels(labels: np.ndarray) -> np.ndarray:
    """Renumber labels ``0, 1, ...`` in order of their first occurrence.

    Parameters
    ----------
    labels : ndarray, shape (n,), integer dtype
        Any labelling (for example, each item's component root).

    Returns
    -------
    ndarray, shape (n,), dtype int64
        The same partition, labels numbered by each part's first item.

    Examples
    --------
    >>> first_seen_labels(np.array([7, 3, 7, 9, 3])).tolist()
    [0, 1, 0, 2, 1]
    """
    if labels.size == 0:
        return np.zeros(0, dtype=np.int64)
    if labels.dtype.kind in "iu" and labels.min() >= 0 and labels.max() < 2 * labels.size:
        # labels that index a table (roots, kept documents): one linear pass, no sort; labels
        # and table in the index type (int32 below 2**31), so the loop has one specialization
        index = index_dtype(2 * labels.size)
        table = np.full(int(labels.max()) + 1, -1, dtype=index)
        return first_seen_numbers(labels.astype(index, copy=False), table)
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.empty(first.size, dtype=np.int64)
    rank[np.argsort(first)] = np.arange(first.size)
    renumbered: np.ndarray = rank[inverse.reshape(-1)]
    return renumbered


def pair_keys(a: np.ndarray, b: np.ndarray, n: int) -> np.ndarray:
    """Encode pairs of indices below ``n`` as ``min * n + max`` (int64): sortable, unique."""
    keys: np.ndarray = np.minimum(a, b).astype(np.int64) * n + np.maximum(a, b)
    return keys


def keys_to_pairs(keys: np.ndarray, n: int) -> np.ndarray:
    """Decode sorted pair keys of `pair_keys` into an int64 array of shape (m, 2)."""
    n = max(n, 1)
    return np.stack([keys // n, keys % n], axis=1).astype(np.int64, copy=False)


def expand_pairs(inverse: np.ndarray, unique_pairs: np.ndarray) -> np.ndarray:
    """Return every input pair implied by distinct-code pairs and groups of identical codes.

    Parameters
    ----------
    inverse : ndarray, shape (n,), dtype int64
        Distinct-code index of every input code.
    unique_pairs : ndarray, shape (p, 2), dtype int64
        Pairs of distinct codes.

    Returns
    -------
    ndarray, shape (m, 2), dtype int64
        Pairs ``(i, j)``, ``i < j``, sorted.
    """
    n = inverse.size
    members = np.argsort(inverse, kind="stable")
    sizes = np.bincount(inverse, minlength=int(inverse.max()) + 1 if n else 0)
    first = _segments.starts(sizes)
    within = _segments.pairs_within(members, sizes)
    # every member of a times every member of b, for each pair (a, b)
    a, b = unique_pairs[:, 0], unique_pairs[:, 1]
    a_items = members[_segments.ranges(first[a], sizes[a])]
    b_of = b[_segments.segment_of(sizes[a])]
    left = a_items[_segments.segment_of(sizes[b_of])]
    right = members[_segments.ranges(first[b_of], sizes[b_of])]
    keys = np.sort(
        np.concatenate([pair_keys(within[:, 0], within[:, 1], n), pair_keys(left, right, n)])
    )
    return keys_to_pairs(keys, n)
