"""What every join shares: the collapsed result, radius arithmetic, identical-code collapse.

The exact join (`gpusimhash.search.exact`), the approximate one (`gpusimhash.search.lsh`) and
the clusters built on them all speak `DuplicateGroups`: identical codes collapsed to one
distinct code, and the pairs of distinct codes within the radius.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpusimhash import _segments, _validate
from gpusimhash._cpu._cluster_loops import first_seen_numbers
from gpusimhash._reprs import short_repr

__all__ = [
    "DuplicateGroups",
    "check_radius",
    "collapse",
    "cosine_radius",
    "expand_pairs",
    "first_seen_labels",
    "index_dtype",
    "keys_to_pairs",
    "pair_keys",
    "radius_recall",
    "resolve_radius",
    "threads",
]


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

    @property
    def n_unique(self) -> int:
        """Number of distinct codes."""
        return int(self.inverse.max()) + 1 if self.inverse.size else 0

    def pairs(self) -> np.ndarray:
        """Expand to every input pair ``(i, j)``, ``i < j``, sorted (see `near_duplicates`)."""
        return expand_pairs(self.inverse, self.unique_pairs)


def cosine_radius(min_cosine: float, bits: int) -> int:
    """Largest Hamming radius whose estimated cosine is still at least `min_cosine`.

    The estimated cosine of two codes ``d`` bits apart is ``cos(pi * d / bits)``, decreasing in
    ``d``, so ``estimate >= min_cosine`` exactly when ``d <= floor(bits * acos(min_cosine) / pi)``
    (computed so that it agrees with the estimate at the boundary, whatever the rounding).

    Parameters
    ----------
    min_cosine : float
        Minimum estimated cosine, in ``[-1, 1]``.
    bits : int
        Code length in bits.

    Returns
    -------
    radius : int
        In ``[0, bits]``.

    Raises
    ------
    ValueError
        `min_cosine` outside ``[-1, 1]`` or not finite, or `bits` not positive.

    Examples
    --------
    >>> cosine_radius(0.9, 64)
    9
    >>> cosine_radius(1.0, 256)
    0
    """
    bits = _validate.positive_integer(bits, "bits")
    c = float(min_cosine)
    if not (-1.0 <= c <= 1.0):
        raise ValueError(f"min_cosine must be in [-1, 1], got {min_cosine!r}")
    radius = min(bits, max(0, math.floor(bits * math.acos(c) / math.pi)))
    while radius < bits and math.cos(math.pi * (radius + 1) / bits) >= c:
        radius += 1
    while radius > 0 and math.cos(math.pi * radius / bits) < c:
        radius -= 1
    return radius


def radius_recall(true_cosine: Any, *, bits: int, max_distance: int) -> Any:
    """Probability that two vectors with a given true cosine land within a Hamming radius.

    Under the SimHash model each of the `bits` bits differs independently with probability
    ``theta / pi``, ``theta = acos(true_cosine)``, so the recall of a radius-`max_distance`
    search is ``P[Binomial(bits, theta / pi) <= max_distance]``.

    Parameters
    ----------
    true_cosine : float or array_like of float
        Cosine similarity of the weighted feature vectors, in ``[-1, 1]``.
    bits : int
        Code length in bits.
    max_distance : int
        Hamming radius, ``0 <= max_distance``.

    Returns
    -------
    recall : float or ndarray of float
        Same shape as `true_cosine`.

    Raises
    ------
    ValueError
        A cosine outside ``[-1, 1]``, a negative radius or non-positive bits.

    Examples
    --------
    A 64-bit radius-3 search finds one pair in ten at true cosine 0.95; 256 bits with the
    radius of estimated cosine 0.9 find nearly all of them:

    >>> round(radius_recall(0.95, bits=64, max_distance=3), 3)
    0.101
    >>> round(radius_recall(0.95, bits=256, max_distance=cosine_radius(0.9, 256)), 3)
    0.983
    """
    bits = _validate.positive_integer(bits, "bits")
    radius = check_radius(max_distance)
    c = np.asarray(true_cosine, dtype=np.float64)
    if not np.all((c >= -1.0) & (c <= 1.0)):
        raise ValueError("true_cosine must be in [-1, 1]")
    from scipy.stats import binom  # 0.5 s to import: only when asked

    recall = binom.cdf(radius, bits, np.arccos(c) / np.pi)
    return float(recall) if recall.ndim == 0 else recall


def resolve_radius(
    bits: int, *, max_distance: int | None = None, min_cosine: float | None = None
) -> int:
    """Turn a Hamming radius or a minimum estimated cosine into a radius in ``[0, bits]``.

    Parameters
    ----------
    bits : int
        Code length in bits.
    max_distance : int, optional
        A Hamming radius (clipped to ``bits``).
    min_cosine : float, optional
        A minimum estimated cosine (see `cosine_radius`). Give exactly one of the two.

    Returns
    -------
    int

    Raises
    ------
    ValueError
        Both or neither given, or one out of range.
    TypeError
        A radius that is not an integer.

    Examples
    --------
    >>> resolve_radius(64, min_cosine=0.9), resolve_radius(64, max_distance=100)
    (9, 64)
    """
    if (max_distance is None) == (min_cosine is None):
        raise ValueError("give exactly one of max_distance and min_cosine")
    if min_cosine is not None:
        return cosine_radius(min_cosine, bits)
    return min(check_radius(max_distance), bits)


def check_radius(max_distance: Any) -> int:
    """Return a Hamming radius as an int, refusing non-integers and negatives."""
    if isinstance(max_distance, bool) or not isinstance(max_distance, int | np.integer):
        raise TypeError(f"max_distance must be an integer, got {type(max_distance).__name__}")
    if max_distance < 0:
        raise ValueError(f"max_distance must be >= 0, got {max_distance}")
    return int(max_distance)


def collapse(words: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return the distinct rows of ``words`` and the inverse index (int64) of every row."""
    if words.shape[1] == 1:
        unique, inverse = np.unique(words[:, 0], return_inverse=True)
        return unique[:, None], inverse.astype(np.int64, copy=False)
    # Rows in lexicographic order (word 0 first), as np.unique(axis=0) gives, in half its time.
    order = np.lexsort(words.T[::-1])
    ordered = words[order]
    first = np.ones(len(words), dtype=bool)
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
        # labels that index a table (roots, kept documents): one linear pass, no sort
        table = np.full(int(labels.max()) + 1, -1, dtype=index_dtype(labels.size))
        return first_seen_numbers(labels, table)
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.empty(first.size, dtype=np.int64)
    rank[np.argsort(first)] = np.arange(first.size)
    renumbered: np.ndarray = rank[inverse.reshape(-1)]
    return renumbered


def threads() -> int:
    """Return the worker threads of a join: the CPUs this process may run on, capped.

    The cap is ``NUMBA_NUM_THREADS`` when set (``gpusimhash --threads N`` sets it).
    """
    if hasattr(os, "sched_getaffinity"):
        cpus = max(1, len(os.sched_getaffinity(0)))
    else:
        cpus = max(1, os.cpu_count() or 1)
    cap = os.environ.get("NUMBA_NUM_THREADS", "")
    return min(cpus, int(cap)) if cap.isdigit() and int(cap) > 0 else cpus


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
