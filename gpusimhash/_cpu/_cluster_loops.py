"""Compiled clustering loops (Numba) over a graph of distinct codes, verifying pairs only as needed.

The graph: distinct codes with a symmetric CSR adjacency (``adjacency_offsets``, int64, and
``adjacency``, int32 neighbour codes), and the *units* of each code (``code_offsets``,
``code_units``): documents of one code with identical features, each verified through one
representative (``local``: its row in the merged features; see ``_verify_loops``). A unit's
candidates are the other units of its code and the units of the codes adjacent to it.

* ``fill_adjacency``: write the pairs of a join into the CSR adjacency, both directions.
* ``lazy_star``: greedy star clustering in a given unit order. An unassigned unit becomes a
  centre and is verified only against its still-unassigned candidates, taking those that reach
  the threshold. This is the star clustering of the fully verified pairs (each pair's
  similarity is a function of its two documents alone), but a candidate already assigned is
  never compared: a dense cluster costs about one comparison per member instead of one per pair.
  Assigned units are compacted out of the per-code unit lists as they are met, so no list is
  rescanned past them.
* ``lazy_components``: connected components of the verified pairs; a pair whose units already
  share a component (union-find) is not verified.

``measure`` selects the similarity: 0 accepts every candidate unverified (similarity NaN),
1 is the cosine, 2 the set Jaccard similarity.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from gpusimhash._cpu._mih_loops import _link, _root
from gpusimhash._cpu._prefetch import prefetch

NOT_VERIFIED = 0
COSINE = 1
JACCARD = 2
# features per prefetched line: 16 four-byte states fill a 64-byte cache line
_PREFETCH_STRIDE = 16


@njit(cache=True, nogil=True)
def fill_adjacency(
    pairs: np.ndarray, adjacency_offsets: np.ndarray, cursor: np.ndarray, adjacency: np.ndarray
) -> None:  # pragma: no cover - compiled
    """Append both directions of every pair ``(a, b)`` to the rows of ``a`` and ``b``.

    ``cursor`` holds each row's next free position (initially ``adjacency_offsets[:-1]``).
    """
    for p in range(pairs.shape[0]):
        a = pairs[p, 0]
        b = pairs[p, 1]
        adjacency[cursor[a]] = b
        cursor[a] += 1
        adjacency[cursor[b]] = a
        cursor[b] += 1


@njit(cache=True, nogil=True, inline="always")
def _shared(
    states: np.ndarray,
    offsets: np.ndarray,
    weights: np.ndarray,
    exponents: np.ndarray,
    a: int,
    b: int,
) -> tuple[float, int]:  # pragma: no cover - compiled
    """Return the scaled dot product and the shared feature count of documents ``a`` and ``b``.

    The walk of ``_verify_loops.pair_similarity`` without the union sums: the same products
    added in the same (state) order, so the same bits.
    """
    i, i_end = offsets[a], offsets[a + 1]
    j, j_end = offsets[b], offsets[b + 1]
    shift_a = -exponents[a]
    shift_b = -exponents[b]
    dot = 0.0
    shared = 0
    while i < i_end and j < j_end:  # both cursors step without a branch on the order
        state_a, state_b = states[i], states[j]
        if state_a == state_b:
            # float64 products whether the weights are float64 or exactly narrowed (int8,
            # int16, float32; np.float64, not float(): Numba's float() keeps a float32 one)
            wa, wb = np.float64(weights[i]), np.float64(weights[j])
            dot += math.ldexp(wa, shift_a) * math.ldexp(wb, shift_b)
            shared += 1
        i += state_a <= state_b
        j += state_b <= state_a
    return dot, shared


@njit(cache=True, nogil=True, inline="always")
def _passes(
    states: np.ndarray,
    offsets: np.ndarray,
    weights: np.ndarray,
    exponents: np.ndarray,
    squared_norms: np.ndarray,
    a: int,
    b: int,
    measure: int,
    value: float,
) -> tuple[bool, float]:  # pragma: no cover - compiled
    """Whether merged documents ``a`` and ``b`` reach the threshold, and their similarity.

    The similarity is that of ``_verify_loops.pair_similarity``, bit for bit (NaN, never
    passing, when a document is featureless).
    """
    if measure == NOT_VERIFIED:
        return True, np.nan
    size_a = offsets[a + 1] - offsets[a]
    size_b = offsets[b + 1] - offsets[b]
    if size_a == 0 or size_b == 0:
        return False, np.nan
    dot, shared = _shared(states, offsets, weights, exponents, a, b)
    if measure == COSINE:
        similarity = min(1.0, max(-1.0, dot / math.sqrt(squared_norms[a] * squared_norms[b])))
    else:
        similarity = shared / (size_a + size_b - shared)
    return similarity >= value, similarity


@njit(cache=True, nogil=True, inline="always")
def _prefetch_document(
    states: np.ndarray,
    offsets: np.ndarray,
    weights: np.ndarray,
    exponents: np.ndarray,
    squared_norms: np.ndarray,
    a: int,
) -> None:  # pragma: no cover - compiled
    """Prefetch every cache line of merged document ``a``'s features (`_passes` reads them)."""
    start, stop = offsets[a], offsets[a + 1]
    for q in range(start, stop, _PREFETCH_STRIDE):
        prefetch(states, q)
        prefetch(weights, q)
        prefetch(weights, q + _PREFETCH_STRIDE // 2)  # float64 weights: the line's second half
    if stop > start:
        prefetch(states, stop - 1)
        prefetch(weights, stop - 1)
    prefetch(exponents, a)
    prefetch(squared_norms, a)


@njit(cache=True, nogil=True, parallel=True)
def _tentative_passes(
    tentative: np.ndarray,
    slots: np.ndarray,
    kept: np.ndarray,
    unit_code: np.ndarray,
    code_offsets: np.ndarray,
    code_units: np.ndarray,
    live: np.ndarray,
    adjacency_offsets: np.ndarray,
    adjacency: np.ndarray,
    local: np.ndarray,
    states: np.ndarray,
    offsets: np.ndarray,
    weights: np.ndarray,
    exponents: np.ndarray,
    squared_norms: np.ndarray,
    measure: int,
    value: float,
    found_units: np.ndarray,
    found_similarity: np.ndarray,
    found_count: np.ndarray,
    verified_count: np.ndarray,
) -> None:  # pragma: no cover - compiled
    """Verify each tentative centre against its candidates unassigned now, centres in parallel.

    Centre ``k`` writes the candidates that pass (and their similarity) from ``slots[k]`` on,
    their number to ``found_count[k]`` and the pairs it compared to ``verified_count[k]``.
    Tentative centre ``k`` is marked ``kept == -2 - k``; a candidate that is an earlier one (or
    ``k`` itself) is skipped: by centre ``k``'s turn it is assigned either way (a centre, or
    taken). Nothing shared is written: ``kept`` and the unit lists are only read. A centre
    first lists its candidates and prefetches their features, then compares: the cache misses
    overlap instead of following one another (about twice as fast once the features exceed
    the caches).
    """
    for k in prange(tentative.size):
        centre = tentative[k]
        code = unit_code[centre]
        write = slots[k]
        compared = 0
        if code >= 0:
            # the candidates unassigned now, listed from slots[k] on, their features prefetched
            listed = slots[k]
            for e in range(adjacency_offsets[code] - 1, adjacency_offsets[code + 1]):
                other = code if e < adjacency_offsets[code] else adjacency[e]
                lo = code_offsets[other]
                for t in range(lo, lo + live[other]):
                    unit = code_units[t]
                    mark = kept[unit]  # >= 0: assigned; -2 - j: tentative centre j
                    if mark >= 0 or (mark <= -2 and -2 - mark <= k):
                        continue
                    found_units[listed] = unit
                    listed += 1
                    if measure != NOT_VERIFIED:  # unverified: no features to read
                        _prefetch_document(
                            states, offsets, weights, exponents, squared_norms, local[unit]
                        )
            a = local[centre]
            for w in range(slots[k], listed):  # passing ones overwrite the list from its start
                unit = found_units[w]
                ok, value_of_pair = _passes(
                    states,
                    offsets,
                    weights,
                    exponents,
                    squared_norms,
                    a,
                    local[unit],
                    measure,
                    value,
                )
                compared += measure != NOT_VERIFIED
                if ok:
                    found_units[write] = unit
                    found_similarity[write] = value_of_pair
                    write += 1
        found_count[k] = write - slots[k]
        verified_count[k] = compared


@njit(cache=True, nogil=True)
def lazy_star(
    order: np.ndarray,
    kept: np.ndarray,
    similarity: np.ndarray,
    live: np.ndarray,
    unit_code: np.ndarray,
    code_offsets: np.ndarray,
    code_units: np.ndarray,
    adjacency_offsets: np.ndarray,
    adjacency: np.ndarray,
    local: np.ndarray,
    states: np.ndarray,
    offsets: np.ndarray,
    weights: np.ndarray,
    exponents: np.ndarray,
    squared_norms: np.ndarray,
    measure: int,
    value: float,
    batch: int,
    batch_candidates: int,
) -> int:  # pragma: no cover - compiled
    """Star clusters of units visited in ``order``, verifying lazily, many centres at a time.

    The next unassigned units are tentative centres (at most ``batch`` of them, and no more
    once their candidates reach ``batch_candidates``), each verified in parallel
    against its candidates unassigned at that point (`_tentative_passes`); then, in order, a
    tentative centre still unassigned becomes a centre and takes those of its passing
    candidates still unassigned. That is exactly the one-centre-at-a-time result: a centre's
    candidates assigned since the batch began are skipped, as they would not have been
    compared, and a tentative centre taken by an earlier one is no centre (its comparisons are
    wasted, and not counted). No pair is compared twice: a centre skips the earlier tentative
    centres of its batch, assigned by its turn either way. ``unit_code`` is each unit's code
    (-1 for a unit in no candidate pair); ``code_units`` is modified (assigned units compacted
    out of the lists a centre scanned). The state carries over between calls, so consecutive
    slices of one order give the result of the whole order: ``kept`` (the kept unit of every
    unit, itself when kept, -1 while unassigned; start all -1), ``similarity`` (each unit's
    similarity to its kept one, 1.0 when kept; start all 1.0) and ``live`` (the units still
    listed per code; start ``np.diff(code_offsets)``) are updated in place. Returns the number
    of pairs compared for the centres.
    """
    verified = 0
    tentative = np.empty(batch, dtype=np.int64)
    slots = np.empty(batch + 1, dtype=np.int64)
    found_count = np.empty(batch, dtype=np.int64)
    verified_count = np.empty(batch, dtype=np.int64)
    found_units = np.empty(1024, dtype=np.int64)
    found_similarity = np.empty(1024, dtype=np.float64)
    position = 0
    while position < order.size:
        n_tentative = 0
        slots[0] = 0
        while (
            n_tentative < batch and slots[n_tentative] < batch_candidates and position < order.size
        ):
            unit = order[position]
            position += 1
            if kept[unit] != -1:
                continue
            tentative[n_tentative] = unit
            kept[unit] = -2 - n_tentative  # marked while the round's passes run
            room = 0
            code = unit_code[unit]
            if code >= 0:
                for e in range(adjacency_offsets[code] - 1, adjacency_offsets[code + 1]):
                    room += live[code if e < adjacency_offsets[code] else adjacency[e]]
            slots[n_tentative + 1] = slots[n_tentative] + room
            n_tentative += 1
        if slots[n_tentative] > found_units.size:
            found_units = np.empty(2 * slots[n_tentative], dtype=np.int64)
            found_similarity = np.empty(2 * slots[n_tentative], dtype=np.float64)
        _tentative_passes(
            tentative[:n_tentative],
            slots,
            kept,
            unit_code,
            code_offsets,
            code_units,
            live,
            adjacency_offsets,
            adjacency,
            local,
            states,
            offsets,
            weights,
            exponents,
            squared_norms,
            measure,
            value,
            found_units,
            found_similarity,
            found_count,
            verified_count,
        )
        for k in range(n_tentative):
            kept[tentative[k]] = -1
        for k in range(n_tentative):
            centre = tentative[k]
            if kept[centre] != -1:
                continue
            kept[centre] = centre
            verified += verified_count[k]
            for w in range(slots[k], slots[k] + found_count[k]):
                unit = found_units[w]
                if kept[unit] == -1:
                    kept[unit] = centre
                    similarity[unit] = found_similarity[w]
            code = unit_code[centre]
            if code < 0:
                continue
            for e in range(adjacency_offsets[code] - 1, adjacency_offsets[code + 1]):
                other = code if e < adjacency_offsets[code] else adjacency[e]
                lo = code_offsets[other]
                write = lo
                for t in range(lo, lo + live[other]):
                    unit = code_units[t]
                    if kept[unit] == -1:  # assigned units are dropped from the list
                        code_units[write] = unit
                        write += 1
                live[other] = write - lo
    return verified


@njit(cache=True, nogil=True)
def lazy_components(
    parent: np.ndarray,
    code_start: int,
    code_stop: int,
    unit_code: np.ndarray,
    code_offsets: np.ndarray,
    code_units: np.ndarray,
    adjacency_offsets: np.ndarray,
    adjacency: np.ndarray,
    local: np.ndarray,
    states: np.ndarray,
    offsets: np.ndarray,
    weights: np.ndarray,
    exponents: np.ndarray,
    squared_norms: np.ndarray,
    measure: int,
    value: float,
) -> int:  # pragma: no cover - compiled
    """Link the candidate pairs of units that reach the threshold, from codes in a range.

    Every candidate pair is considered once (within a code, and from the smaller of two adjacent
    codes) and verified only when its units are not yet in one component. ``parent`` is the
    union-find forest of the units (start ``np.arange(n_units)``), updated in place, so
    consecutive ranges of codes give the components of all of them (``flatten_forest``).
    Returns the number of pairs verified.
    """
    verified = 0
    for code in range(code_start, code_stop):
        for s in range(code_offsets[code], code_offsets[code + 1]):
            unit = code_units[s]
            a = local[unit]
            for k in range(adjacency_offsets[code] - 1, adjacency_offsets[code + 1]):
                other = code if k < adjacency_offsets[code] else adjacency[k]
                if other < code:
                    continue
                first = s + 1 if other == code else code_offsets[other]
                for t in range(first, code_offsets[other + 1]):
                    partner = code_units[t]
                    root = _root(parent, unit)
                    partner_root = _root(parent, partner)
                    if root == partner_root:
                        continue
                    ok, _ = _passes(
                        states,
                        offsets,
                        weights,
                        exponents,
                        squared_norms,
                        a,
                        local[partner],
                        measure,
                        value,
                    )
                    verified += measure != NOT_VERIFIED
                    if ok:
                        _link(parent, root, partner_root)
    return verified


@njit(cache=True, nogil=True)
def first_seen_numbers(labels: np.ndarray, table: np.ndarray) -> np.ndarray:  # pragma: no cover
    """Renumber labels by first occurrence.

    ``table`` has a slot per label value, all -1, and a signed type that holds the number of
    labels (int32: 4 bytes per label value); it is filled in. Returns the int64 numbers.
    """
    renumbered = np.empty(labels.size, dtype=np.int64)
    count = 0
    for i in range(labels.size):
        label = labels[i]
        if table[label] == -1:
            table[label] = count
            count += 1
        renumbered[i] = table[label]
    return renumbered
