"""A stable argsort of short segments, for the compiled loops (inline, no allocation).

The loops sort one document's entries at a time, mostly a few dozen: insertion sort on runs of
16 keys, then bottom-up merges with the keys moved beside their indices (no indirect reads), a
pair of runs already in order copied as it is. It is stable, so its order is the one
``np.argsort(keys, kind="stable")`` gives, for any keys without NaN.
"""

from libc.stdint cimport int32_t, int64_t, uint32_t

ctypedef fused sort_key:
    uint32_t
    int32_t
    int64_t
    double


cdef struct SortScratch:
    # one thread's room to sort a segment of uint32 keys (`stable_order`'s last four arguments)
    int64_t *order
    uint32_t *ordered_keys
    uint32_t *target_keys
    int64_t *target


cdef inline SortScratch thread_scratch(
    int64_t[:, ::1] indices, uint32_t[:, ::1] keys, int thread
) noexcept nogil:
    """Thread ``thread``'s room in `_sorting.sort_scratch`'s arrays."""
    return SortScratch(
        &indices[2 * thread, 0],
        &keys[2 * thread, 0],
        &keys[2 * thread + 1, 0],
        &indices[2 * thread + 1, 0],
    )


cdef inline void stable_order(
    const sort_key *keys,
    Py_ssize_t n,
    int64_t *order,
    sort_key *ordered_keys,
    sort_key *target_keys,
    int64_t *target,
) noexcept nogil:
    """Write into ``order`` the indices that sort ``keys[:n]``, equal keys in their order.

    ``ordered_keys``, ``target_keys`` and ``target`` are scratch of ``n`` elements each.
    """
    cdef Py_ssize_t i, j, k, lo, middle, hi, first, rest, width
    cdef int64_t item
    cdef int64_t *swap_order
    cdef int64_t *result = order
    cdef sort_key *swap_keys
    for i in range(n):
        order[i] = i
    first = 0
    while first < n:
        for i in range(first + 1, min(first + 16, n)):
            item = order[i]
            j = i - 1
            while j >= first and keys[order[j]] > keys[item]:
                order[j + 1] = order[j]
                j -= 1
            order[j + 1] = item
        first += 16
    if n <= 16:  # one run: nothing to merge
        return
    for i in range(n):
        ordered_keys[i] = keys[order[i]]
    width = 16
    while width < n:
        lo = 0
        while lo < n:
            middle = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            i, j, k = lo, middle, lo
            if middle < hi and ordered_keys[middle] < ordered_keys[middle - 1]:
                while i < middle and j < hi:
                    if ordered_keys[j] < ordered_keys[i]:
                        target_keys[k] = ordered_keys[j]
                        target[k] = order[j]
                        j += 1
                    else:
                        target_keys[k] = ordered_keys[i]
                        target[k] = order[i]
                        i += 1
                    k += 1
            for rest in range(i, middle):  # the left run's rest (all of it when in order)
                target_keys[k] = ordered_keys[rest]
                target[k] = order[rest]
                k += 1
            for rest in range(j, hi):
                target_keys[k] = ordered_keys[rest]
                target[k] = order[rest]
                k += 1
            lo += 2 * width
        swap_keys = ordered_keys
        ordered_keys = target_keys
        target_keys = swap_keys
        swap_order = order
        order = target
        target = swap_order
        width *= 2
    if order != result:  # the merges ended in the scratch: copy the order back
        for i in range(n):
            result[i] = order[i]
