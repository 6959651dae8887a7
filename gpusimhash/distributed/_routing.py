"""How every shuffle routes rows to tasks: a hash of the key, then a split by destination."""

from __future__ import annotations

import itertools

import numpy as np

__all__ = ["destination", "mix_words", "split_by"]


def mix_words(words: np.ndarray, salt: int = 0) -> np.ndarray:
    """Hash rows of uint64 words to uint64 (splitmix64 over the words; shuffle routing only)."""
    h = np.full(words.shape[0], (salt * 0x9E3779B97F4A7C15) % 2**64, dtype=np.uint64)
    for k in range(words.shape[1]):
        h = _splitmix(h ^ words[:, k])
    return h


def _splitmix(x: np.ndarray) -> np.ndarray:
    """Apply the splitmix64 finalizer (wrapping uint64 arithmetic)."""
    with np.errstate(over="ignore"):
        x = x + np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def destination(words: np.ndarray, n: int, salt: int = 0) -> np.ndarray:
    """Return the task, of ``n``, each row of uint64 words goes to (a hash of the words).

    Examples
    --------
    >>> destination(np.array([[7], [7], [9]], dtype=np.uint64), 1).tolist()
    [0, 0, 0]
    """
    tasks: np.ndarray = (mix_words(words, salt) % np.uint64(n)).astype(np.int64)
    return tasks


def split_by(task: np.ndarray, n: int, *arrays: np.ndarray) -> list[tuple[np.ndarray, ...]]:
    """Split rows of arrays by their task, keeping their order within each.

    Parameters
    ----------
    task : ndarray, dtype int64
        The task of each row, ``0 <= task < n``.
    n : int
        Tasks.
    *arrays : ndarray
        Arrays of ``task.size`` rows.

    Returns
    -------
    list of tuple of ndarray
        For each task, its rows of each array.

    Examples
    --------
    >>> rows, words = np.array([5, 6, 7]), np.array([[50], [60], [70]])
    >>> [(r.tolist(), w.tolist()) for r, w in split_by(np.array([1, 0, 1]), 2, rows, words)]
    [([6], [[60]]), ([5, 7], [[50], [70]])]
    """
    order = np.argsort(task, kind="stable")
    bounds = np.searchsorted(task[order], np.arange(n + 1))
    return [tuple(a[order[lo:hi]] for a in arrays) for lo, hi in itertools.pairwise(bounds)]
