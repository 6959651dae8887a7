"""A stable argsort for the short segments compiled loops sort, cheap to compile.

Numba compiles ``np.argsort`` from its generic quicksort and mergesort, a dozen functions that
add about a second to a first run for each key type; the loops here sort one document's
entries at a time, mostly a few dozen. `stable_argsort` is one small function: insertion sort
on runs of `_RUN` keys, then bottom-up merges with the keys moved beside their indices (no
indirect reads), a pair of runs already in order copied as it is. It is stable, so its order is
the one ``np.argsort(keys, kind="stable")`` gives, for any keys.
"""

from __future__ import annotations

import numpy as np
from numba import njit

_RUN = 16  # keys per insertion-sorted run


@njit(cache=True, nogil=True)
def stable_argsort(keys: np.ndarray) -> np.ndarray:  # pragma: no cover - compiled
    """Return the indices that sort ``keys`` (1-D), equal keys in their order (int64)."""
    n = keys.size
    order = np.empty(n, dtype=np.int64)
    for i in range(n):
        order[i] = i
    for first in range(0, n, _RUN):
        for i in range(first + 1, min(first + _RUN, n)):
            item = order[i]
            j = i - 1
            while j >= first and keys[order[j]] > keys[item]:
                order[j + 1] = order[j]
                j -= 1
            order[j + 1] = item
    if n <= _RUN:  # one run: nothing to merge
        return order
    ordered_keys = np.empty_like(keys)
    for i in range(n):
        ordered_keys[i] = keys[order[i]]
    target_keys = np.empty_like(keys)
    target = np.empty(n, dtype=np.int64)
    width = _RUN
    while width < n:
        for lo in range(0, n, 2 * width):
            middle, hi = min(lo + width, n), min(lo + 2 * width, n)
            i, j, k = lo, middle, lo
            if middle < hi and ordered_keys[middle] < ordered_keys[middle - 1]:
                while i < middle and j < hi:
                    if ordered_keys[j] < ordered_keys[i]:
                        target_keys[k], target[k] = ordered_keys[j], order[j]
                        j += 1
                    else:
                        target_keys[k], target[k] = ordered_keys[i], order[i]
                        i += 1
                    k += 1
            for rest in range(i, middle):  # the left run's rest (all of it when in order)
                target_keys[k], target[k] = ordered_keys[rest], order[rest]
                k += 1
            for rest in range(j, hi):
                target_keys[k], target[k] = ordered_keys[rest], order[rest]
                k += 1
        ordered_keys, target_keys = target_keys, ordered_keys
        order, target = target, order
        width *= 2
    return order
