"""Candidate pairs of codes that two join tasks may both have found: each kept once.

Where some code has two representatives in the feature join (documents of that code with other
features), two shares may find one pair of codes. One task that gathers every pair (the whole
group) keeps each once itself (`distinct`); otherwise the pairs are shuffled by a hash of the
pair (`route_pairs`) to tasks that keep each once (`distinct_pairs`).
"""

from __future__ import annotations

import numpy as np

from gpusimhash.distributed._routing import destination, split_by

__all__ = ["distinct", "distinct_pairs", "route_pairs"]

_SALT = 0x6665  # pairs are not routed as the codes are


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

    Examples
    --------
    >>> distinct_pairs([np.array([[1, 5], [2, 3]]), np.array([[1, 5]])]).tolist()
    [[1, 5], [2, 3]]
    """
    return distinct(np.concatenate([np.zeros((0, 2), np.int64), *pieces]))


def distinct(pairs: np.ndarray) -> np.ndarray:
    """Return the distinct rows of pairs, by first then second column.

    Examples
    --------
    >>> distinct(np.array([[2, 3], [1, 5], [2, 3]])).tolist()
    [[1, 5], [2, 3]]
    """
    pairs = pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]
    fresh = np.ones(len(pairs), dtype=bool)
    fresh[1:] = (pairs[1:] != pairs[:-1]).any(axis=1)
    return pairs[fresh]
