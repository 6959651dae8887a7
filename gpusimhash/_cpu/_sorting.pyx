# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""`stable_argsort`: the compiled loops' stable order (`_sorting.pxd`) on a NumPy array."""

from libc.stdint cimport int64_t

import numpy as np


def sort_scratch(n_threads, longest):
    """Return the arrays of `thread_scratch`: room to sort ``longest`` uint32 keys per thread.

    Made before the threads start, so that no thread allocates (and none can fail to).
    """
    return (
        np.empty((2 * n_threads, longest + 1), dtype=np.int64),
        np.empty((2 * n_threads, longest + 1), dtype=np.uint32),
    )


def stable_argsort(keys):
    """Return the indices that sort ``keys`` (1-D), equal keys in their order (int64).

    ``keys`` are uint32, int32, int64 or float64 (without NaN), as the loops sort them.
    """
    keys = np.ascontiguousarray(keys)
    n = keys.size
    order = np.empty(n, dtype=np.int64)
    target = np.empty(n, dtype=np.int64)
    ordered_keys = np.empty_like(keys)
    target_keys = np.empty_like(keys)
    _sort(keys, order, ordered_keys, target_keys, target)
    return order


def _sort(const sort_key[::1] keys, int64_t[::1] order, sort_key[::1] ordered_keys,
          sort_key[::1] target_keys, int64_t[::1] target):
    """`stable_order` of ``keys`` into ``order``, the others scratch."""
    cdef Py_ssize_t n = keys.shape[0]
    if n == 0:
        return
    with nogil:
        stable_order(&keys[0], n, &order[0], &ordered_keys[0], &target_keys[0], &target[0])
