# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Compiled clustering loops (Cython) over a graph of distinct codes, verifying pairs only as needed.

The graph: distinct codes with a symmetric CSR adjacency (``adjacency_offsets``, int64, and
``adjacency``, int32 neighbour codes), and the *units* of each code (``code_offsets``,
``code_units``): documents of one code with identical features, each verified through one
representative (``local``: its row in the merged features; see ``_verify_loops``). A unit's
candidates are the other units of its code and the units of the codes adjacent to it. The unit
arrays share one integer type (int32 below ``2**31`` documents, else int64).

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
* ``flatten_forest``: the root of every node of a union-find forest.
* ``first_seen_numbers``: labels renumbered by first occurrence.

``measure`` selects the similarity: 0 accepts every candidate unverified (similarity NaN),
1 is the cosine, 2 the set Jaccard similarity.
"""

from cython.parallel cimport prange
from libc.stdint cimport int32_t, int64_t, uint32_t
from libc.stdlib cimport free, malloc

import numpy as np

from gpusimhash._cpu._similarity cimport (
    MEASURE_COSINE,
    MEASURE_JACCARD,
    MEASURE_NONE,
    Documents,
    passes,
    prefetch_document,
    weight_t,
)
from gpusimhash._cpu._threads import threads

NOT_VERIFIED = MEASURE_NONE
COSINE = MEASURE_COSINE
JACCARD = MEASURE_JACCARD

ctypedef fused index_t:
    int32_t
    int64_t

ctypedef fused label_t:
    int32_t
    int64_t


def fill_adjacency(
    const int32_t[:, ::1] pairs,
    const int64_t[::1] adjacency_offsets,
    int64_t[::1] cursor,
    int32_t[::1] adjacency,
):
    """Append both directions of every pair ``(a, b)`` to the rows of ``a`` and ``b``.

    ``cursor`` holds each row's next free position (initially ``adjacency_offsets[:-1]``).
    """
    cdef Py_ssize_t p
    cdef int32_t a, b
    with nogil:
        for p in range(pairs.shape[0]):
            a = pairs[p, 0]
            b = pairs[p, 1]
            adjacency[cursor[a]] = b
            cursor[a] += 1
            adjacency[cursor[b]] = a
            cursor[b] += 1


cdef struct Graph:
    # the unit graph, as the star and component loops read it (pointers of one integer type
    # are cast from the index type's arrays)
    const int64_t *adjacency_offsets
    const int32_t *adjacency


cdef inline int64_t _candidate_code(Graph graph, int64_t code, int64_t e) noexcept nogil:
    """The code of candidate list ``e`` of ``code``: itself first (``e`` one before its row)."""
    return code if e < graph.adjacency_offsets[code] else graph.adjacency[e]


cdef void _centre_passes(
    Py_ssize_t k,
    const int64_t *tentative,
    const int64_t *slots,
    const index_t *kept,
    const index_t *unit_code,
    const index_t *code_offsets,
    const index_t *code_units,
    const index_t *live,
    Graph graph,
    const index_t *local,
    Documents documents,
    const weight_t *weights,
    int measure,
    double value,
    int64_t *found_units,
    double *found_similarity,
    int64_t *found_count,
    int64_t *verified_count,
) noexcept nogil:
    """Verify tentative centre ``k`` against its candidates unassigned now (see `lazy_star`).

    Writes the candidates that pass (and their similarity) from ``slots[k]`` on, their number
    to ``found_count[k]`` and the pairs compared to ``verified_count[k]``. Tentative centre
    ``k`` is marked ``kept == -2 - k``; a candidate that is an earlier one (or ``k`` itself) is
    skipped: by centre ``k``'s turn it is assigned either way. Nothing shared is written. The
    centre first lists its candidates and prefetches their features, then compares: the cache
    misses overlap instead of following one another.
    """
    cdef int64_t centre = tentative[k], code = unit_code[centre]
    cdef int64_t write = slots[k], listed = slots[k], compared = 0
    cdef int64_t e, other, lo, t, unit, mark, w, a
    cdef double similarity
    if code >= 0:
        for e in range(graph.adjacency_offsets[code] - 1, graph.adjacency_offsets[code + 1]):
            other = _candidate_code(graph, code, e)
            lo = code_offsets[other]
            for t in range(lo, lo + live[other]):
                unit = code_units[t]
                mark = kept[unit]  # >= 0: assigned; -2 - j: tentative centre j
                if mark >= 0 or (mark <= -2 and -2 - mark <= k):
                    continue
                found_units[listed] = unit
                listed += 1
                if measure != MEASURE_NONE:  # unverified: no features to read
                    prefetch_document(documents, weights, local[unit])
        a = local[centre]
        for w in range(slots[k], listed):  # passing ones overwrite the list from its start
            unit = found_units[w]
            if passes(documents, weights, a, local[unit], measure, value, &similarity):
                found_units[write] = unit
                found_similarity[write] = similarity
                write += 1
            compared += measure != MEASURE_NONE
    found_count[k] = write - slots[k]
    verified_count[k] = compared


def lazy_star(
    const index_t[::1] order,
    index_t[::1] kept,
    double[::1] similarity,
    index_t[::1] live,
    const index_t[::1] unit_code,
    const index_t[::1] code_offsets,
    index_t[::1] code_units,
    const int64_t[::1] adjacency_offsets,
    const int32_t[::1] adjacency,
    const index_t[::1] local,
    const uint32_t[::1] states,
    const int64_t[::1] offsets,
    const weight_t[::1] weights,
    const int64_t[::1] exponents,
    const double[::1] squared_norms,
    int measure,
    double value,
    Py_ssize_t batch,
    Py_ssize_t batch_candidates,
):
    """Star clusters of units visited in ``order``, verifying lazily, many centres at a time.

    The next unassigned units are tentative centres (at most ``batch`` of them, and no more
    once their candidates reach ``batch_candidates``), each verified in parallel against its
    candidates unassigned at that point (`_centre_passes`); then, in order, a tentative centre
    still unassigned becomes a centre and takes those of its passing candidates still
    unassigned. That is exactly the one-centre-at-a-time result: a centre's candidates assigned
    since the batch began are skipped, as they would not have been compared, and a tentative
    centre taken by an earlier one is no centre (its comparisons are wasted, and not counted).
    No pair is compared twice: a centre skips the earlier tentative centres of its batch,
    assigned by its turn either way. ``unit_code`` is each unit's code (-1 for a unit in no
    candidate pair); ``code_units`` is modified (assigned units compacted out of the lists a
    centre scanned). The state carries over between calls, so consecutive slices of one order
    give the result of the whole order: ``kept`` (the kept unit of every unit, itself when kept,
    -1 while unassigned; start all -1), ``similarity`` (each unit's similarity to its kept one,
    1.0 when kept; start all 1.0) and ``live`` (the units still listed per code; start
    ``np.diff(code_offsets)``) are updated in place. Returns the number of pairs compared for
    the centres.
    """
    cdef Graph graph = Graph(&adjacency_offsets[0], &adjacency[0])
    cdef Documents documents = Documents(&states[0], &offsets[0],
                                         &exponents[0],
                                         &squared_norms[0])
    cdef const weight_t *weights_at = &weights[0]
    cdef int n_threads = threads()
    cdef int64_t *tentative = <int64_t *> malloc((batch + 1) * sizeof(int64_t))
    cdef int64_t *slots = <int64_t *> malloc((batch + 1) * sizeof(int64_t))
    cdef int64_t *found_count = <int64_t *> malloc((batch + 1) * sizeof(int64_t))
    cdef int64_t *verified_count = <int64_t *> malloc((batch + 1) * sizeof(int64_t))
    cdef Py_ssize_t room_for = 1024
    cdef int64_t *found_units = <int64_t *> malloc(room_for * sizeof(int64_t))
    cdef double *found_similarity = <double *> malloc(room_for * sizeof(double))
    cdef int64_t verified = 0, position = 0, n_tentative, unit, room, code, e, other, k, w
    cdef int64_t centre, lo, write, t
    if not (tentative and slots and found_count and verified_count and found_units
            and found_similarity):
        _free_all(tentative, slots, found_count, verified_count, found_units, found_similarity)
        raise MemoryError("lazy_star: no memory for its work arrays")
    with nogil:
        while position < order.shape[0]:
            n_tentative = 0
            slots[0] = 0
            while (
                n_tentative < batch
                and slots[n_tentative] < batch_candidates
                and position < order.shape[0]
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
                        room += live[_candidate_code(graph, code, e)]
                slots[n_tentative + 1] = slots[n_tentative] + room
                n_tentative += 1
            if slots[n_tentative] > room_for:
                free(found_units)
                free(found_similarity)
                room_for = 2 * slots[n_tentative]
                found_units = <int64_t *> malloc(room_for * sizeof(int64_t))
                found_similarity = <double *> malloc(room_for * sizeof(double))
                if not (found_units and found_similarity):
                    break
            for k in prange(n_tentative, schedule="dynamic", num_threads=n_threads):
                _centre_passes(
                    k, tentative, slots, &kept[0], &unit_code[0], &code_offsets[0],
                    &code_units[0], &live[0], graph, &local[0], documents, weights_at, measure,
                    value, found_units, found_similarity, found_count, verified_count,
                )  # fmt: skip
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
                    other = _candidate_code(graph, code, e)
                    lo = code_offsets[other]
                    write = lo
                    for t in range(lo, lo + live[other]):
                        unit = code_units[t]
                        if kept[unit] == -1:  # assigned units are dropped from the list
                            code_units[write] = unit
                            write += 1
                    live[other] = write - lo
    failed = not (found_units and found_similarity)
    _free_all(tentative, slots, found_count, verified_count, found_units, found_similarity)
    if failed:
        raise MemoryError("lazy_star: no memory for the candidates of a round")
    return verified


cdef void _free_all(void *a, void *b, void *c, void *d, void *e, void *f) noexcept:
    """Free six work arrays (NULL ones too)."""
    free(a)
    free(b)
    free(c)
    free(d)
    free(e)
    free(f)


cdef inline int64_t _root(index_t *parent, int64_t node) noexcept nogil:
    """Root of ``node``'s tree, halving the path on the way."""
    while parent[node] != node:
        parent[node] = parent[parent[node]]
        node = parent[node]
    return node


cdef inline int64_t _link(index_t *parent, int64_t a, int64_t b) noexcept nogil:
    """Join the trees of roots ``a`` and ``b`` under the smaller root, and return it."""
    if a < b:
        parent[b] = a
        return a
    parent[a] = b
    return b


def lazy_components(
    index_t[::1] parent,
    Py_ssize_t code_start,
    Py_ssize_t code_stop,
    const index_t[::1] unit_code,
    const index_t[::1] code_offsets,
    const index_t[::1] code_units,
    const int64_t[::1] adjacency_offsets,
    const int32_t[::1] adjacency,
    const index_t[::1] local,
    const uint32_t[::1] states,
    const int64_t[::1] offsets,
    const weight_t[::1] weights,
    const int64_t[::1] exponents,
    const double[::1] squared_norms,
    int measure,
    double value,
):
    """Link the candidate pairs of units that reach the threshold, from codes in a range.

    Every candidate pair is considered once (within a code, and from the smaller of two adjacent
    codes) and verified only when its units are not yet in one component. ``parent`` is the
    union-find forest of the units (start ``np.arange(n_units)``), updated in place, so
    consecutive ranges of codes give the components of all of them (``flatten_forest``).
    Returns the number of pairs verified.
    """
    cdef Graph graph = Graph(&adjacency_offsets[0], &adjacency[0])
    cdef Documents documents = Documents(&states[0], &offsets[0],
                                         &exponents[0],
                                         &squared_norms[0])
    cdef const weight_t *weights_at = &weights[0]
    cdef index_t *forest = &parent[0]
    cdef int64_t verified = 0, code, s, unit, a, k, other, first, t, partner, root, partner_root
    cdef double similarity
    with nogil:
        for code in range(code_start, code_stop):
            for s in range(code_offsets[code], code_offsets[code + 1]):
                unit = code_units[s]
                a = local[unit]
                for k in range(adjacency_offsets[code] - 1, adjacency_offsets[code + 1]):
                    other = _candidate_code(graph, code, k)
                    if other < code:
                        continue
                    first = s + 1 if other == code else code_offsets[other]
                    for t in range(first, code_offsets[other + 1]):
                        partner = code_units[t]
                        root = _root(forest, unit)
                        partner_root = _root(forest, partner)
                        if root == partner_root:
                            continue
                        verified += measure != MEASURE_NONE
                        if passes(
                            documents, weights_at, a, local[partner], measure, value, &similarity
                        ):
                            _link(forest, root, partner_root)
    return verified


def flatten_forest(index_t[::1] parent):
    """Root of every node of a union-find forest (each root is its tree's smallest node), int64.

    The paths are halved on the way, so ``parent`` changes (its roots do not).
    """
    roots_out = np.empty(parent.shape[0], dtype=np.int64)
    cdef int64_t[::1] roots = roots_out
    cdef index_t *forest = &parent[0]
    cdef Py_ssize_t node
    with nogil:
        for node in range(parent.shape[0]):
            roots[node] = _root(forest, node)
    return roots_out


def first_seen_numbers(const label_t[::1] labels, index_t[::1] table):
    """Renumber labels by first occurrence.

    ``table`` has a slot per label value, all -1, and a signed type that holds the number of
    labels (int32: 4 bytes per label value); it is filled in. Returns the int64 numbers.
    """
    renumbered_out = np.empty(labels.shape[0], dtype=np.int64)
    cdef int64_t[::1] renumbered = renumbered_out
    cdef Py_ssize_t i
    cdef int64_t count = 0, label
    with nogil:
        for i in range(labels.shape[0]):
            label = labels[i]
            if table[label] == -1:
                table[label] = count
                count += 1
            renumbered[i] = table[label]
    return renumbered_out
