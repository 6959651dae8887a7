# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Compiled loops (Cython) of the exact feature join: every pair of documents at a threshold.

Prefix filtering (AllPairs, Bayardo et al. 2007; L2AP, Anastasiu and Karypis 2014). Features
are ranked once for all documents, the most frequent first. Each document's features, in rank
order, split into an *unindexed head* and an *indexed tail*; the head is as long as it can be
while staying below the threshold:

* cosine: the head's share of the squared norm stays below ``t**2``. By Cauchy-Schwarz the
  head alone contributes less than ``t`` to the cosine of any pair, whatever the signs of the
  weights, so a pair at or above ``t`` shares a feature in each document's tail;
* Jaccard of the feature sets: the head holds fewer than ``t * |x|`` features. A pair at or
  above ``t`` shares at least ``t * max(|x|, |y|)`` features, so again one in each tail.

Tails are suffixes of one global order, so the highest-ranked shared feature of such a pair is
in both tails: probing each document's tail against an index of every tail finds the pair.
Both bounds keep a relative margin of ``1e-9`` (a shorter head), so a pair that the verifier
(`_similarity.passes`, the same bits as `_verify_loops.pair_similarity`) accepts is never
filtered out by rounding.

The probe bounds what the features not yet met can add with `_rest`: Cauchy-Schwarz on the
prefixes' squared shares, and Hoelder (the sum of one prefix's absolute shares times the
other's largest share), which for sets is the count of the smaller prefix (the positional
filter of PPJoin, Xiao et al. 2008).

* ``rank_entries``: each document's entries ordered by feature rank.
* ``entry_shares``: each entry's share and its prefix (squared, absolute, largest).
* ``size_keys``: each document's size key and the least key of a partner.
* ``tail_starts``: where each document's indexed tail starts.
* ``fill_postings``: the index: for each feature, the documents whose tail holds it, ascending.
* ``first_postings``: per tail entry, the first posting of a partner large enough, and the
  postings each document's probes will read.
* ``passing_pairs``: every later document probes the candidates of one window of documents,
  each candidate verified; the passing ones written out with their similarity.

Each document's candidates depend only on the index, so results are identical for any thread
count. Blocks take every ``n_blocks``-th document, so the late documents, which see the most
earlier ones, are spread over the threads.
"""

from cython.parallel cimport parallel, prange, threadid
from libc.math cimport INFINITY, fabs, ldexp, sqrt
from libc.stdint cimport int32_t, int64_t, uint32_t
from libc.stdlib cimport free, malloc

import numpy as np

from gpusimhash._cpu._minmax cimport py_max, py_min
from gpusimhash._cpu._prefetch cimport prefetch
from gpusimhash._cpu._similarity cimport (
    MEASURE_COSINE,
    Documents,
    passes,
    prefetch_document,
    weight_t,
)
from gpusimhash._cpu._sorting cimport SortScratch, stable_order, thread_scratch

from gpusimhash._cpu._sorting import sort_scratch
from gpusimhash._cpu._threads import threads

# relative margin of the head bounds: heads stay this much below the threshold
cdef double _MARGIN = 1e-9
# candidates ahead whose data a check prefetches (their cache misses overlap)
cdef int _AHEAD = 8


def rank_entries(const int64_t[::1] offsets, const uint32_t[::1] entry_rank):
    """Return the entries of every document ordered by ``entry_rank`` (unique keys), as int64."""
    cdef Py_ssize_t n_docs = offsets.shape[0] - 1, doc, k, lo, hi, longest = 0
    ordered_out = np.empty(entry_rank.shape[0], dtype=np.int64)
    cdef int64_t[::1] ordered = ordered_out
    for doc in range(n_docs):
        longest = max(longest, offsets[doc + 1] - offsets[doc])
    cdef int n_threads = threads()
    indices, keys = sort_scratch(n_threads, longest)
    cdef int64_t[:, ::1] index_rows = indices
    cdef uint32_t[:, ::1] key_rows = keys
    cdef SortScratch scratch
    with nogil, parallel(num_threads=n_threads):
        scratch = thread_scratch(index_rows, key_rows, threadid())
        for doc in prange(n_docs, schedule="static"):
            lo = offsets[doc]
            hi = offsets[doc + 1]
            if hi > lo:
                stable_order(
                    &entry_rank[lo], hi - lo, scratch.order, scratch.ordered_keys,
                    scratch.target_keys, scratch.target,
                )  # fmt: skip
            for k in range(hi - lo):
                ordered[lo + k] = lo + scratch.order[k]
    return ordered_out


cdef void _document_shares(
    Py_ssize_t doc,
    const int64_t *offsets,
    const int64_t *ordered,
    const weight_t *weights,
    const int64_t *exponents,
    const double *squared_norms,
    int measure,
    double *share,
    double *before,
) noexcept nogil:
    """`entry_shares` of one document."""
    cdef int64_t lo = offsets[doc], hi = offsets[doc + 1], k
    cdef double scale, total = 0.0, absolute = 0.0, largest = 0.0, w
    cdef int shift
    if measure == MEASURE_COSINE:
        scale = 1.0 / sqrt(squared_norms[doc]) if hi > lo else 0.0
        shift = -exponents[doc]
        for k in range(lo, hi):
            w = ldexp(<double>weights[ordered[k]], shift) * scale
            share[k] = w
            before[3 * k] = total
            before[3 * k + 1] = absolute
            before[3 * k + 2] = largest
            total += w * w
            absolute += fabs(w)
            largest = py_max(largest, fabs(w))
    else:
        for k in range(lo, hi):
            share[k] = 1.0
            before[3 * k] = before[3 * k + 1] = before[3 * k + 2] = <double>(k - lo)


def entry_shares(
    const int64_t[::1] offsets,
    const int64_t[::1] ordered,
    const weight_t[::1] weights,
    const int64_t[::1] exponents,
    const double[::1] squared_norms,
    int measure,
):
    """Return each entry's share and what the entries before it hold, in rank order.

    Positions follow ``ordered``. Cosine: the share is the entry's weight over the document's
    norm (its square sums to 1); the prefix, per entry, holds the sum of the squared shares
    before it, the sum of their absolute values and the largest absolute one. Jaccard: the
    share is 1, and the prefix holds the count of entries before it (in every column).
    Returns ``(share, before)``: float64, shapes ``(n,)`` and ``(n, 3)``.
    """
    cdef Py_ssize_t n_docs = offsets.shape[0] - 1, n = ordered.shape[0], doc
    share_out = np.empty(n, dtype=np.float64)
    before_out = np.empty((n, 3), dtype=np.float64)
    cdef double[::1] share = share_out
    cdef double[:, ::1] before = before_out
    if n == 0:
        return share_out, before_out
    cdef int n_threads = threads()
    cdef const int64_t *exponents_at = &exponents[0]
    cdef const double *norms_at = &squared_norms[0]
    for doc in prange(n_docs, nogil=True, schedule="static", num_threads=n_threads):
        _document_shares(
            doc, &offsets[0], &ordered[0], &weights[0], exponents_at, norms_at, measure,
            &share[0], &before[0, 0],
        )  # fmt: skip
    return share_out, before_out


cdef int64_t _tail_start(
    Py_ssize_t doc,
    const int64_t *offsets,
    const double *share,
    const double *before,
    int measure,
    double value,
) noexcept nogil:
    """`tail_starts` of one document."""
    cdef int64_t lo = offsets[doc], hi = offsets[doc + 1], k
    cdef double bound
    if measure == MEASURE_COSINE:
        bound = value * value * (1.0 - _MARGIN)
    else:
        bound = value * (1.0 - _MARGIN) * <double>(hi - lo)
    k = lo
    while k < hi and before[3 * k] + share[k] * share[k] < bound:
        k += 1
    return k


def tail_starts(
    const int64_t[::1] offsets,
    const double[::1] share,
    const double[:, ::1] before,
    int measure,
    double value,
):
    """Return where each document's indexed tail starts, as positions in rank order (int64).

    The head is the longest run of the lowest ranks whose cosine bound (sum of squared
    shares) or Jaccard bound (entry count) stays below the threshold, by ``_MARGIN``.
    """
    cdef Py_ssize_t n_docs = offsets.shape[0] - 1, doc
    starts_out = np.empty(n_docs, dtype=np.int64)
    cdef int64_t[::1] starts = starts_out
    cdef const double *share_at = &share[0]
    cdef const double *before_at = &before[0, 0]
    cdef int n_threads = threads()
    for doc in prange(n_docs, nogil=True, schedule="static", num_threads=n_threads):
        starts[doc] = _tail_start(doc, &offsets[0], share_at, before_at, measure, value)
    return starts_out


cdef void _size_key(
    Py_ssize_t doc,
    const int64_t *offsets,
    const weight_t *weights,
    const int64_t *exponents,
    const double *squared_norms,
    int measure,
    double floor,
    double *key,
    double *least,
) noexcept nogil:
    """`size_keys` of one document."""
    cdef int64_t lo = offsets[doc], hi = offsets[doc + 1], k
    cdef double scale, total = 0.0, largest = 0.0, w
    cdef int shift
    if hi == lo:
        return
    if measure == MEASURE_COSINE:
        scale = 1.0 / sqrt(squared_norms[doc])
        shift = -exponents[doc]
        for k in range(lo, hi):
            w = fabs(ldexp(<double>weights[k], shift) * scale)
            total += w
            largest = py_max(largest, w)
        key[doc] = total
        least[doc] = floor / largest
    else:
        key[doc] = <double>(hi - lo)
        least[doc] = floor * <double>(hi - lo)


def size_keys(
    const int64_t[::1] offsets,
    const weight_t[::1] weights,
    const int64_t[::1] exponents,
    const double[::1] squared_norms,
    int measure,
    double value,
):
    """Return each document's size key and the least key of a partner that may pass (float64).

    Cosine: the key is the sum of the absolute shares (``|x|_1`` of the unit vector), and
    ``cos(x, y) <= max_share(x) * |y|_1``, so a partner needs a key of at least
    ``t / max_share(x)``. Jaccard: the key is the feature count, and a partner needs at least
    ``t * |x|`` features. Both lower bounds keep the margin.
    """
    cdef Py_ssize_t n_docs = offsets.shape[0] - 1, doc
    key_out = np.zeros(n_docs, dtype=np.float64)
    least_out = np.zeros(n_docs, dtype=np.float64)
    cdef double[::1] key = key_out
    cdef double[::1] least = least_out
    cdef double floor = value * (1.0 - _MARGIN)
    cdef const weight_t *weights_at = &weights[0]
    cdef const int64_t *exponents_at = &exponents[0]
    cdef const double *norms_at = &squared_norms[0]
    cdef int n_threads = threads()
    if n_docs == 0:
        return key_out, least_out
    for doc in prange(n_docs, nogil=True, schedule="static", num_threads=n_threads):
        _size_key(
            doc, &offsets[0], weights_at, exponents_at, norms_at, measure, floor, &key[0],
            &least[0],
        )  # fmt: skip
    return key_out, least_out


def fill_postings(
    const int64_t[::1] offsets,
    const int64_t[::1] ordered,
    const int64_t[::1] starts,
    const int32_t[::1] entry_rank,
    const double[::1] share,
    const double[:, ::1] before,
    Py_ssize_t n_ranks,
):
    """Return the index: for each feature, the tails that hold it, documents ascending.

    ``(posting_offsets, posting_docs, posting_share, posting_before)``: row starts per rank
    (int64), and per posting its document (int32), its entry's share and the prefix before the
    entry (float64), laid out together so that a probe reads them in sequence.
    """
    cdef Py_ssize_t n_docs = offsets.shape[0] - 1, doc, k, r, c, part
    posting_offsets_out = np.zeros(n_ranks + 1, dtype=np.int64)
    cdef int64_t[::1] posting_offsets = posting_offsets_out
    with nogil:
        for doc in range(n_docs):
            for k in range(starts[doc], offsets[doc + 1]):
                posting_offsets[entry_rank[ordered[k]] + 1] += 1
        for r in range(n_ranks):
            posting_offsets[r + 1] += posting_offsets[r]
    cursor_out = posting_offsets_out[:n_ranks].copy()
    cdef int64_t[::1] cursor = cursor_out
    total = int(posting_offsets_out[n_ranks])
    posting_docs_out = np.empty(total, dtype=np.int32)
    posting_share_out = np.empty(total, dtype=np.float64)
    posting_before_out = np.empty((total, 3), dtype=np.float64)
    cdef int32_t[::1] posting_docs = posting_docs_out
    cdef double[::1] posting_share = posting_share_out
    cdef double[:, ::1] posting_before = posting_before_out
    with nogil:
        for doc in range(n_docs):
            for k in range(starts[doc], offsets[doc + 1]):
                r = entry_rank[ordered[k]]
                c = cursor[r]
                posting_docs[c] = <int32_t>doc
                posting_share[c] = share[k]
                for part in range(3):
                    posting_before[c, part] = before[k, part]
                cursor[r] = c + 1
    return posting_offsets_out, posting_docs_out, posting_share_out, posting_before_out


cdef inline int64_t _first_at_least(
    const int32_t *values, int64_t lo, int64_t hi, int64_t value
) noexcept nogil:
    """Return the first position in ``[lo, hi)`` of ascending ``values`` at ``value`` or more."""
    cdef int64_t middle
    while lo < hi:
        middle = (lo + hi) // 2
        if values[middle] < value:
            lo = middle + 1
        else:
            hi = middle
    return lo


def first_postings(
    const int64_t[::1] offsets,
    const int64_t[::1] starts,
    const int32_t[::1] entry_rank,
    const int64_t[::1] ordered,
    const int64_t[::1] posting_offsets,
    const int32_t[::1] posting_docs,
    const int64_t[::1] first_partner,
):
    """Return, per tail entry of each document, its feature's first posting of a partner.

    A partner of ``x`` is at least ``first_partner[x]`` (documents are in size-key order);
    the posting lists ascend by document, so each cursor is found by binary search. Entries
    of the heads keep -1. Also returns, per document, the postings its probes will read in
    all: those from its cursors up to its own postings (`passing_pairs` reads each once).
    Both int64.
    """
    cdef Py_ssize_t n_docs = offsets.shape[0] - 1, x
    cursor_out = np.full(ordered.shape[0], -1, dtype=np.int64)
    reads_out = np.zeros(n_docs, dtype=np.int64)
    cdef int64_t[::1] cursor = cursor_out
    cdef int64_t[::1] reads = reads_out
    cdef const int32_t *docs_at = &posting_docs[0]
    cdef int n_threads = threads()
    for x in prange(n_docs, nogil=True, schedule="static", num_threads=n_threads):
        reads[x] = _first_postings_of(
            x, &offsets[0], &starts[0], &entry_rank[0], &ordered[0], &posting_offsets[0],
            docs_at, first_partner[x], &cursor[0],
        )  # fmt: skip
    return cursor_out, reads_out


cdef int64_t _first_postings_of(
    Py_ssize_t x,
    const int64_t *offsets,
    const int64_t *starts,
    const int32_t *entry_rank,
    const int64_t *ordered,
    const int64_t *posting_offsets,
    const int32_t *posting_docs,
    int64_t least,
    int64_t *cursor,
) noexcept nogil:
    """`first_postings` of document ``x``: its cursors set, its reads returned."""
    cdef int64_t kx, r, end, lo, reads = 0
    for kx in range(starts[x], offsets[x + 1]):
        r = entry_rank[ordered[kx]]
        end = posting_offsets[r + 1]
        lo = _first_at_least(posting_docs, posting_offsets[r], end, least)
        cursor[kx] = lo
        reads += _first_at_least(posting_docs, lo, end, x) - lo
    return reads


cdef struct Index:
    # the index of `passing_pairs` (see `gpusimhash.verify._feature_join.FeatureIndex`)
    const int64_t *offsets
    const int64_t *starts
    const int32_t *entry_rank
    const int64_t *ordered
    const int32_t *ranked
    const double *share
    const double *before  # three per entry
    const int64_t *posting_offsets
    const int32_t *posting_docs
    const double *posting_share
    const double *posting_before  # three per posting
    const int64_t *first_partner
    int64_t *cursor


cdef inline double _rest(
    double squares_x,
    double absolute_x,
    double largest_x,
    double squares_y,
    double absolute_y,
    double largest_y,
    int measure,
) noexcept nogil:
    """Bound what two documents' prefixes can add to their score.

    Cosine: ``|x . y| <= min(|x|_2 |y|_2, |x|_1 max|y|, |y|_1 max|x|)`` over the prefixes
    (Cauchy-Schwarz and Hoelder); Jaccard: the shared count is at most the smaller count.
    """
    if measure == MEASURE_COSINE:
        return py_min(
            py_min(sqrt(squares_x * squares_y), absolute_x * largest_y), absolute_y * largest_x
        )
    return py_min(squares_x, squares_y)


cdef inline double _need(
    int64_t size_x, int64_t y, const int64_t *offsets, int measure, double value
) noexcept nogil:
    """Return the score a pair of ``x`` (of ``size_x`` features) and ``y`` must reach.

    Cosine: the threshold; Jaccard: the shared count ``t (|x| + |y|) / (1 + t)``. Both less
    the margin.
    """
    cdef double floor = value * (1.0 - _MARGIN)
    if measure == MEASURE_COSINE:
        return floor
    return floor * <double>(size_x + offsets[y + 1] - offsets[y]) / (1.0 + value)


cdef inline void _below(
    Index index, int64_t doc, int64_t rank, double *prefix
) noexcept nogil:
    """Write into ``prefix`` the prefix of ``doc`` below feature rank ``rank`` (``before``'s columns)."""
    cdef int64_t lo = index.offsets[doc], hi = index.offsets[doc + 1]
    cdef double w
    if index.ranked[hi - 1] < rank:  # every feature is below
        w = fabs(index.share[hi - 1])
        prefix[0] = index.before[3 * (hi - 1)] + w * w
        prefix[1] = index.before[3 * (hi - 1) + 1] + w
        prefix[2] = py_max(index.before[3 * (hi - 1) + 2], w)
        return
    lo = _first_at_least(index.ranked, lo, hi, rank)
    prefix[0] = index.before[3 * lo]
    prefix[1] = index.before[3 * lo + 1]
    prefix[2] = index.before[3 * lo + 2]


cdef inline void _prefetch_entries(Index index, int64_t doc) noexcept nogil:
    """Prefetch what `_below` and the tail's start read of ``doc`` (its first and last lines)."""
    cdef int64_t lo = index.offsets[doc], hi = index.offsets[doc + 1] - 1
    prefetch(&index.ranked[lo])
    prefetch(&index.ranked[hi])
    prefetch(&index.before[3 * lo])
    prefetch(&index.before[3 * hi])
    prefetch(&index.share[hi])


cdef int64_t _probe(
    int64_t x,
    int64_t stop,
    Index index,
    int measure,
    double value,
    double *met,
    int64_t window,
    int32_t *touched,
) noexcept nogil:
    """Probe the tail of ``x`` for partners below ``stop``; leave in ``touched`` those that may pass.

    Each tail entry's posting list is read on from its ``cursor`` (the first partner not yet
    probed, `first_postings`) up to ``stop`` or ``x``, and the cursor moved past what was
    read, so that successive calls with rising ``stop`` read every posting once. ``met``
    (``window`` rows of three) is indexed from the window's first document, ``stop - window``.
    The tail is probed from the rarest feature down: a document ``y`` is met at every feature
    of both tails, in descending rank. ``met[y]`` holds ``(x, score, rest)``: the score sums
    what those features give (products of shares, or their count), and the rest bounds what the
    other shared features may add: they rank below the last one met, so `_rest` bounds them by
    the two prefixes before it. A document whose first meeting's product and rest fall short is
    never touched: its later meetings rank lower, inside that rest (its score stays -inf).
    Returns how many documents are left in ``touched``: those whose ``score + rest`` reaches
    the threshold (less the margin), then also with the sharper rest below both tails'
    starts, and for Jaccard whose sizes are within the factor ``t`` of each other. The
    sharper check prefetches its documents' entries `_AHEAD` candidates ahead.
    """
    cdef double floor = value * (1.0 - _MARGIN)
    cdef int64_t size_x = index.offsets[x + 1] - index.offsets[x]
    cdef int64_t first = stop - window
    cdef int64_t end = stop if stop < x else x
    cdef double mark = <double>x
    cdef double least_need, sx, gain, rest
    cdef const double *bx
    cdef const double *by
    cdef double *row
    cdef int64_t n_met = 0, kx, r, p, last, y, w, t, left, kept, tail_x, tail_y, size_y
    cdef double prefix_x[3]
    cdef double prefix_y[3]
    # the least `_need` of a partner (for Jaccard, one of a size within the factor ``t``)
    if measure == MEASURE_COSINE:
        least_need = floor
    else:
        least_need = floor * (1.0 + floor) * <double>size_x / (1.0 + value)
    for kx in range(index.offsets[x + 1] - 1, index.starts[x] - 1, -1):
        r = index.entry_rank[index.ordered[kx]]
        sx = index.share[kx]
        bx = &index.before[3 * kx]
        p = index.cursor[kx]
        last = index.posting_offsets[r + 1]
        while p < last:
            y = index.posting_docs[p]
            if y >= end:
                break
            w = y - first
            row = &met[3 * w]
            by = &index.posting_before[3 * p]
            gain = sx * index.posting_share[p]
            rest = _rest(bx[0], bx[1], bx[2], by[0], by[1], by[2], measure)
            if row[0] != mark:  # first met: nothing ranked above adds to the score
                row[0] = mark
                if gain + rest < least_need:
                    row[1] = -INFINITY  # it can never pass: its later meetings add nothing
                else:
                    row[1] = gain
                    touched[n_met] = <int32_t>y
                    n_met += 1
            else:
                row[1] += gain
            row[2] = rest
            p += 1
        index.cursor[kx] = p
    left = 0
    for t in range(n_met):
        y = touched[t]
        if measure != MEASURE_COSINE:
            size_y = index.offsets[y + 1] - index.offsets[y]
            if <double>size_y < floor * <double>size_x or <double>size_x < floor * <double>size_y:
                continue
        row = &met[3 * (y - first)]
        if row[1] + row[2] >= _need(size_x, y, index.offsets, measure, value):
            touched[left] = <int32_t>y
            left += 1
    if left == 0:
        return 0
    # sharper: the other shared features rank below both tails' starts
    kept = 0
    tail_x = index.ranked[index.starts[x]]
    for t in range(left):
        if t + _AHEAD < left:
            _prefetch_entries(index, touched[t + _AHEAD])
        y = touched[t]
        tail_y = index.ranked[index.starts[y]]
        if tail_x >= tail_y:
            bx = &index.before[3 * index.starts[x]]
            prefix_x[0] = bx[0]
            prefix_x[1] = bx[1]
            prefix_x[2] = bx[2]
            _below(index, y, tail_x, prefix_y)
        else:
            _below(index, x, tail_y, prefix_x)
            by = &index.before[3 * index.starts[y]]
            prefix_y[0] = by[0]
            prefix_y[1] = by[1]
            prefix_y[2] = by[2]
        rest = _rest(
            prefix_x[0], prefix_x[1], prefix_x[2], prefix_y[0], prefix_y[1], prefix_y[2], measure
        )
        if met[3 * (y - first) + 1] + rest >= _need(size_x, y, index.offsets, measure, value):
            touched[kept] = <int32_t>y
            kept += 1
    return kept


cdef void _probe_block(
    Py_ssize_t block,
    int64_t *resume,
    Py_ssize_t n_blocks,
    int64_t n_docs,
    int64_t window,
    int64_t stop,
    int64_t room,
    int64_t longest,
    Index index,
    Documents documents,
    const weight_t *weights,
    int measure,
    double value,
    int32_t *earlier,
    int32_t *later,
    double *similarity,
    int64_t *written,
    int64_t *compared,
) noexcept nogil:
    """`passing_pairs` of one block: its documents from ``resume[block]`` on, while they fit."""
    cdef double *met = <double *> malloc(3 * window * sizeof(double))
    cdef int32_t *touched = <int32_t *> malloc((window + 1) * sizeof(int32_t))
    cdef int64_t *saved = <int64_t *> malloc((longest + 1) * sizeof(int64_t))
    cdef int64_t base = block * room, write = block * room, verified = 0
    cdef int64_t x = resume[block], tail, left, t, y, k
    cdef double value_of_pair
    if not (met and touched and saved):
        written[block] = -1  # the caller raises MemoryError
        free(met)
        free(touched)
        free(saved)
        return
    for k in range(3 * window):
        met[k] = -1.0
    while x < n_docs:
        if index.first_partner[x] >= stop:  # its partners are all in later windows
            x += n_blocks
            continue
        tail = index.offsets[x + 1] - index.starts[x]
        for k in range(tail):
            saved[k] = index.cursor[index.starts[x] + k]
        left = _probe(x, stop, index, measure, value, met, window, touched)
        if write + left > base + room:
            for k in range(tail):  # probed again next call
                index.cursor[index.starts[x] + k] = saved[k]
            break
        verified += left
        for t in range(left):
            if t + _AHEAD < left:
                prefetch_document(documents, weights, touched[t + _AHEAD])
            y = touched[t]
            if passes(documents, weights, y, x, measure, value, &value_of_pair):
                earlier[write] = <int32_t>y
                later[write] = <int32_t>x
                similarity[write] = value_of_pair
                write += 1
        x += n_blocks
    resume[block] = x
    written[block] = write - base
    compared[block] = verified
    free(met)
    free(touched)
    free(saved)


def passing_pairs(
    int64_t[::1] resume,
    int64_t window,
    int64_t stop,
    int64_t room,
    const int64_t[::1] starts,
    const int32_t[::1] entry_rank,
    const int64_t[::1] ordered,
    const int32_t[::1] ranked,
    const double[::1] share,
    const double[:, ::1] before,
    const int64_t[::1] posting_offsets,
    const int32_t[::1] posting_docs,
    const double[::1] posting_share,
    const double[:, ::1] posting_before,
    const int64_t[::1] first_partner,
    int64_t[::1] cursor,
    const uint32_t[::1] states,
    const int64_t[::1] offsets,
    const weight_t[::1] weights,
    const int64_t[::1] exponents,
    const double[::1] squared_norms,
    int measure,
    double value,
    int32_t[::1] earlier,
    int32_t[::1] later,
    double[::1] similarity,
    int64_t[::1] written,
    int64_t[::1] compared,
):
    """Verify the candidates below ``stop`` of every later document; write those that pass.

    The candidates are the documents of one window, ``[stop - window, stop)``, so that the
    per-candidate state of a block (``met``, 24 bytes a document) stays in the cache while
    every later document probes it; windows are taken in ascending order, each document's
    ``cursor`` (`first_postings`) moving on past the postings read. Block ``b`` (of
    ``resume.size``) takes documents ``resume[b]``, ``resume[b] + n_blocks``, ... and writes
    its pairs ``(earlier, later)`` with their similarity from ``b * room`` on. It stops before
    a document whose candidates might not fit, leaving that document in ``resume[b]``
    (``n_docs`` or more once done) for the next call; ``written[b]`` and ``compared[b]``
    receive the pairs written and the candidates verified.
    """
    cdef int64_t n_docs = offsets.shape[0] - 1, longest = 0, doc
    cdef Py_ssize_t n_blocks = resume.shape[0], block
    if n_docs <= 0 or n_blocks == 0:
        return
    for doc in range(n_docs):
        longest = max(longest, offsets[doc + 1] - starts[doc])
    cdef Index index = Index(
        &offsets[0],
        &starts[0],
        &entry_rank[0],
        &ordered[0],
        &ranked[0],
        &share[0],
        &before[0, 0],
        &posting_offsets[0],
        &posting_docs[0],
        &posting_share[0],
        &posting_before[0, 0],
        &first_partner[0],
        &cursor[0],
    )
    cdef Documents documents = Documents(
        &states[0],
        &offsets[0],
        &exponents[0],
        &squared_norms[0],
    )
    cdef const weight_t *weights_at = &weights[0]
    # no more threads than blocks: a probe of one block runs on its caller's thread alone
    cdef int n_threads = min(threads(), n_blocks)
    for block in prange(n_blocks, nogil=True, schedule="dynamic", num_threads=n_threads):
        _probe_block(
            block, &resume[0], n_blocks, n_docs, window, stop, room, longest, index, documents,
            weights_at, measure, value, &earlier[0], &later[0], &similarity[0], &written[0],
            &compared[0],
        )  # fmt: skip
    if min(written) < 0:
        raise MemoryError("passing_pairs: no memory for a block's work arrays")
