"""Candidate pairs of codes that two join tasks may both have found: each kept once.

Where some code has two representatives in the feature join (documents of that code with other
features), two shares may find one pair of codes. One task that gathers every pair (the whole
group) keeps each once itself (`distinct`); otherwise the pairs are shuffled by a hash of the
pair (`route_pairs`) to tasks that keep each once (`distinct_pairs`).
"""

from __future__ import annotations

import numpy as np

from gpusimhash._unique import distinct_values
from gpusimhash.distributed._routing import destination, split_by

__all__ = ["distinct", "distinct_pairs", "route_pairs"]

_SALT = 0x6665  # pairs are not routed as the codes are
# rows below 2**31 pack into one int64 key per pair, sorted 4 times sooner than a lexsort of
# the two columns (`bench/bench_unique.py`)
_SHIFT = 31
_PACKED = 1 << _SHIFT


def route_pairs(pairs: np.ndarray, n_tasks: int) -> list[np.ndarray]:
    """Split pairs by a hash of the pair, for `distinct_pairs` (a task).

    Examples
    --------
    >>> [p.tolist() for p in route_pairs(np.array([[1, 5], [2, 3], [1, 5]]), 1)]
    [[[1, 5], [2, 3], [1, 5]]]
    """
    task = destination(pairs.astype(np.uint64), n_tasks, salt=_SALT)
    return [p[0] for p in split_by(task, n_tasks, pairs)]


def distinct_pairs(pieces: list[np.ndarray]) -> np.ndarray:
    """Keep each pair once, from every task's piece for this one (a task).

    Each piece is a share's pairs in order (`distinct`'s), or a routed part of them.

    Examples
    --------
    >>> distinct_pairs([np.array([[1, 5], [2, 3]]), np.array([[1, 5]])]).tolist()
    [[1, 5], [2, 3]]
    """
    return distinct(np.concatenate([np.zeros((0, 2), np.int64), *pieces]), sorted_runs=True)


def distinct(pairs: np.ndarray, *, sorted_runs: bool = False) -> np.ndarray:
    """Return the distinct rows of integer pairs, by first then second column (int64).

    ``sorted_runs``: the pairs are a few runs each in that order (`distinct` results, or
    pieces of them, concatenated), merged rather than sorted afresh.

    Examples
    --------
    >>> distinct(np.array([[2, 3], [1, 5], [2, 3]])).tolist()
    [[1, 5], [2, 3]]
    """
    pairs = pairs.astype(np.int64, copy=False)
    if pairs.size and pairs.min() >= 0 and pairs.max() < _PACKED:  # one int64 key per pair
        keys = distinct_values((pairs[:, 0] << _SHIFT) | pairs[:, 1], sorted_runs=sorted_runs)
        return np.stack([keys >> _SHIFT, keys & (_PACKED - 1)], axis=1)
    pairs = pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]
    fresh = np.ones(len(pairs), dtype=bool)
    fresh[1:] = (pairs[1:] != pairs[:-1]).any(axis=1)
    return pairs[fresh]
