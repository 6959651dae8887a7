"""Compiled loops (Numba) of the exact feature join: every pair of documents at a threshold.

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
(`_cluster_loops._passes`, the same bits as `_verify_loops.pair_similarity`) accepts is never
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

from __future__ import annotations

import numpy as np
from numba import njit, prange

from gpusimhash._cpu._cluster_loops import COSINE, _passes, _prefetch_document
from gpusimhash._cpu._copy import copy_run
from gpusimhash._cpu._prefetch import prefetch
from gpusimhash._cpu._sorting import stable_argsort

# relative margin of the head bounds: heads stay this much below the threshold
_MARGIN = 1e-9
# candidates ahead whose data a check prefetches (their cache misses overlap)
_AHEAD = 8


@njit(cache=True, nogil=True, parallel=True)
def rank_entries(offsets: np.ndarray, entry_rank: np.ndarray) -> np.ndarray:  # pragma: no cover
    """Return the entries of every document ordered by ``entry_rank`` (unique keys), as int64."""
    n_docs = offsets.size - 1
    ordered = np.empty(entry_rank.size, dtype=np.int64)
    for doc in prange(n_docs):
        lo, hi = offsets[doc], offsets[doc + 1]
        order = stable_argsort(entry_rank[lo:hi])
        for k in range(hi - lo):
            ordered[lo + k] = lo + order[k]
    return ordered


@njit(cache=True, nogil=True, parallel=True)
def entry_shares(
    offsets: np.ndarray,
    ordered: np.ndarray,
    weights: np.ndarray,
    exponents: np.ndarray,
    squared_norms: np.ndarray,
    measure: int,
) -> tuple[np.ndarray, np.ndarray]:  # pragma: no cover - compiled
    """Return each entry's share and what the entries before it hold, in rank order.

    Positions follow ``ordered``. Cosine: the share is the entry's weight over the document's
    norm (its square sums to 1); the prefix, per entry, holds the sum of the squared shares
    before it, the sum of their absolute values and the largest absolute one. Jaccard: the
    share is 1, and the prefix holds the count of entries before it (in every column).
    """
    n_docs = offsets.size - 1
    share = np.empty(ordered.size, dtype=np.float64)
    before = np.empty((ordered.size, 3), dtype=np.float64)
    for doc in prange(n_docs):
        lo, hi = offsets[doc], offsets[doc + 1]
        if measure == COSINE:
            scale = 1.0 / np.sqrt(squared_norms[doc]) if hi > lo else 0.0
            shift = -exponents[doc]
            total = 0.0
            absolute = 0.0
            largest = 0.0
            for k in range(lo, hi):
                w = np.ldexp(np.float64(weights[ordered[k]]), shift) * scale
                share[k] = w
                before[k, 0] = total
                before[k, 1] = absolute
                before[k, 2] = largest
                total += w * w
                absolute += abs(w)
                largest = max(largest, abs(w))
        else:
            for k in range(lo, hi):
                share[k] = 1.0
                before[k, :] = k - lo
    return share, before


@njit(cache=True, nogil=True, parallel=True)
def tail_starts(
    offsets: np.ndarray, share: np.ndarray, before: np.ndarray, measure: int, value: float
) -> np.ndarray:  # pragma: no cover - compiled
    """Return where each document's indexed tail starts, as positions in rank order (int64).

    The head is the longest run of the lowest ranks whose cosine bound (sum of squared
    shares) or Jaccard bound (entry count) stays below the threshold, by ``_MARGIN``.
    """
    n_docs = offsets.size - 1
    starts = np.empty(n_docs, dtype=np.int64)
    for doc in prange(n_docs):
        lo, hi = offsets[doc], offsets[doc + 1]
        if measure == COSINE:
            bound = value * value * (1.0 - _MARGIN)
        else:
            bound = value * (1.0 - _MARGIN) * (hi - lo)
        k = lo
        while k < hi and before[k, 0] + share[k] * share[k] < bound:
            k += 1
        starts[doc] = k
    return starts


@njit(cache=True, nogil=True, parallel=True)
def size_keys(
    offsets: np.ndarray,
    weights: np.ndarray,
    exponents: np.ndarray,
    squared_norms: np.ndarray,
    measure: int,
    value: float,
) -> tuple[np.ndarray, np.ndarray]:  # pragma: no cover - compiled
    """Return each document's size key and the least key of a partner that may pass.

    Cosine: the key is the sum of the absolute shares (``|x|_1`` of the unit vector), and
    ``cos(x, y) <= max_share(x) * |y|_1``, so a partner needs a key of at least
    ``t / max_share(x)``. Jaccard: the key is the feature count, and a partner needs at least
    ``t * |x|`` features. Both lower bounds keep the margin.
    """
    n_docs = offsets.size - 1
    key = np.zeros(n_docs, dtype=np.float64)
    least = np.zeros(n_docs, dtype=np.float64)
    floor = value * (1.0 - _MARGIN)
    for doc in prange(n_docs):
        lo, hi = offsets[doc], offsets[doc + 1]
        if hi == lo:
            continue
        if measure == COSINE:
            scale = 1.0 / np.sqrt(squared_norms[doc])
            shift = -exponents[doc]
            total = 0.0
            largest = 0.0
            for k in range(lo, hi):
                w = abs(np.ldexp(np.float64(weights[k]), shift) * scale)
                total += w
                largest = max(largest, w)
            key[doc] = total
            least[doc] = floor / largest
        else:
            key[doc] = hi - lo
            least[doc] = floor * (hi - lo)
    return key, least


@njit(cache=True, nogil=True)
def fill_postings(
    offsets: np.ndarray,
    ordered: np.ndarray,
    starts: np.ndarray,
    entry_rank: np.ndarray,
    share: np.ndarray,
    before: np.ndarray,
    n_ranks: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:  # pragma: no cover - compiled
    """Return the index: for each feature, the tails that hold it, documents ascending.

    ``(posting_offsets, posting_docs, posting_share, posting_before)``: row starts per rank,
    and per posting its document, its entry's share and the prefix before the entry, laid
    out together so that a probe reads them in sequence.
    """
    n_docs = offsets.size - 1
    posting_offsets = np.zeros(n_ranks + 1, dtype=np.int64)
    for doc in range(n_docs):
        for k in range(starts[doc], offsets[doc + 1]):
            posting_offsets[entry_rank[ordered[k]] + 1] += 1
    for r in range(n_ranks):
        posting_offsets[r + 1] += posting_offsets[r]
    cursor = posting_offsets[:-1].copy()
    total = posting_offsets[n_ranks]
    posting_docs = np.empty(total, dtype=np.int32)
    posting_share = np.empty(total, dtype=np.float64)
    posting_before = np.empty((total, 3), dtype=np.float64)
    for doc in range(n_docs):
        for k in range(starts[doc], offsets[doc + 1]):
            r = entry_rank[ordered[k]]
            c = cursor[r]
            posting_docs[c] = doc
            posting_share[c] = share[k]
            for part in range(3):  # element by element: no broadcast, no error path to compile
                posting_before[c, part] = before[k, part]
            cursor[r] = c + 1
    return posting_offsets, posting_docs, posting_share, posting_before


@njit(cache=True, nogil=True, inline="always")
def _first_at_least(
    values: np.ndarray, lo: int, hi: int, value: int
) -> int:  # pragma: no cover - compiled
    """Return the first position in ``[lo, hi)`` of ascending ``values`` at ``value`` or more."""
    while lo < hi:
        middle = (lo + hi) // 2
        if values[middle] < value:
            lo = middle + 1
        else:
            hi = middle
    return lo


@njit(cache=True, nogil=True, inline="always")
def _below(
    doc: int,
    rank: int,
    offsets: np.ndarray,
    ranked: np.ndarray,
    share: np.ndarray,
    before: np.ndarray,
) -> tuple[float, float, float]:  # pragma: no cover - compiled
    """Return the prefix of ``doc`` below feature rank ``rank`` (the three columns of ``before``)."""
    lo, hi = offsets[doc], offsets[doc + 1]
    if ranked[hi - 1] < rank:  # every feature is below
        w = abs(share[hi - 1])
        last = before[hi - 1]
        return last[0] + w * w, last[1] + w, max(last[2], w)
    lo = _first_at_least(ranked, lo, hi, rank)
    return before[lo, 0], before[lo, 1], before[lo, 2]


@njit(cache=True, nogil=True, inline="always")
def _rest(
    squares_x: float,
    absolute_x: float,
    largest_x: float,
    squares_y: float,
    absolute_y: float,
    largest_y: float,
    measure: int,
) -> float:  # pragma: no cover - compiled
    """Bound what two documents' prefixes can add to their score.

    Cosine: ``|x . y| <= min(|x|_2 |y|_2, |x|_1 max|y|, |y|_1 max|x|)`` over the prefixes
    (Cauchy-Schwarz and Hoelder); Jaccard: the shared count is at most the smaller count.
    """
    if measure == COSINE:
        return min(np.sqrt(squares_x * squares_y), absolute_x * largest_y, absolute_y * largest_x)
    return min(squares_x, squares_y)


@njit(cache=True, nogil=True, inline="always")
def _need(
    size_x: int, y: int, offsets: np.ndarray, measure: int, value: float
) -> float:  # pragma: no cover - compiled
    """Return the score a pair of ``x`` (of ``size_x`` features) and ``y`` must reach.

    Cosine: the threshold; Jaccard: the shared count ``t (|x| + |y|) / (1 + t)``. Both less
    the margin.
    """
    floor = value * (1.0 - _MARGIN)
    if measure == COSINE:
        return floor
    return floor * (size_x + offsets[y + 1] - offsets[y]) / (1.0 + value)


@njit(cache=True, nogil=True, inline="always")
def _prefetch_entries(
    doc: int, offsets: np.ndarray, ranked: np.ndarray, share: np.ndarray, before: np.ndarray
) -> None:  # pragma: no cover - compiled
    """Prefetch what `_below` and the tail's start read of ``doc`` (its first and last lines)."""
    lo, hi = offsets[doc], offsets[doc + 1] - 1
    prefetch(ranked, lo)
    prefetch(ranked, hi)
    prefetch(before, 3 * lo)  # ``before`` has three columns: element ``3 k`` starts row ``k``
    prefetch(before, 3 * hi)
    prefetch(share, hi)


@njit(cache=True, nogil=True, parallel=True)
def first_postings(
    offsets: np.ndarray,
    starts: np.ndarray,
    entry_rank: np.ndarray,
    ordered: np.ndarray,
    posting_offsets: np.ndarray,
    posting_docs: np.ndarray,
    first_partner: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:  # pragma: no cover - compiled
    """Return, per tail entry of each document, its feature's first posting of a partner.

    A partner of ``x`` is at least ``first_partner[x]`` (documents are in size-key order);
    the posting lists ascend by document, so each cursor is found by binary search. Entries
    of the heads keep -1. Also returns, per document, the postings its probes will read in
    all: those from its cursors up to its own postings (`passing_pairs` reads each once).
    """
    n_docs = offsets.size - 1
    cursor = np.full(ordered.size, -1, dtype=np.int64)
    reads = np.zeros(n_docs, dtype=np.int64)
    for x in prange(n_docs):
        least = first_partner[x]
        for kx in range(starts[x], offsets[x + 1]):
            r = entry_rank[ordered[kx]]
            end = posting_offsets[r + 1]
            lo = _first_at_least(posting_docs, posting_offsets[r], end, least)
            cursor[kx] = lo
            reads[x] += _first_at_least(posting_docs, lo, end, x) - lo
    return cursor, reads


@njit(cache=True, nogil=True)
def _probe(
    x: int,
    stop: int,
    offsets: np.ndarray,
    starts: np.ndarray,
    entry_rank: np.ndarray,
    ordered: np.ndarray,
    ranked: np.ndarray,
    share: np.ndarray,
    before: np.ndarray,
    posting_offsets: np.ndarray,
    posting_docs: np.ndarray,
    posting_share: np.ndarray,
    posting_before: np.ndarray,
    cursor: np.ndarray,
    measure: int,
    value: float,
    met: np.ndarray,
    touched: np.ndarray,
) -> int:  # pragma: no cover - compiled
    """Probe the tail of ``x`` for partners below ``stop``; leave in ``touched`` those that may pass.

    Each tail entry's posting list is read on from its ``cursor`` (the first partner not yet
    probed, `first_postings`) up to ``stop`` or ``x``, and the cursor moved past what was
    read, so that successive calls with rising ``stop`` read every posting once. ``met`` is
    indexed from the window's first document, ``stop - met.shape[0]``. The tail is probed
    from the rarest feature down: a document ``y`` is met at every feature of both tails,
    in descending rank. ``met[y]`` holds ``(x, score, rest)``: the score sums what those
    features give (products of shares, or their count), and the rest bounds what the other
    shared features may add: they rank below the last one met, so `_rest` bounds them by the
    two prefixes before it. A document whose first meeting's product and rest fall short is
    never touched: its later meetings rank lower, inside that rest (its score stays -inf).
    Returns how many documents are left in ``touched``: those whose ``score + rest`` reaches
    the threshold (less the margin), then also with the sharper rest below both tails'
    starts, and for Jaccard whose sizes are within the factor ``t`` of each other. The
    sharper check prefetches its documents' entries `_AHEAD` candidates ahead.
    """
    floor = value * (1.0 - _MARGIN)
    size_x = offsets[x + 1] - offsets[x]
    first = stop - met.shape[0]
    end = min(stop, x)
    mark = np.float64(x)
    # the least `_need` of a partner (for Jaccard, one of a size within the factor ``t``)
    least_need = floor if measure == COSINE else floor * (1.0 + floor) * size_x / (1.0 + value)
    n_met = 0
    for kx in range(offsets[x + 1] - 1, starts[x] - 1, -1):
        r = entry_rank[ordered[kx]]
        sx = share[kx]
        bx = before[kx]
        p = cursor[kx]
        last = posting_offsets[r + 1]
        while p < last:
            y = posting_docs[p]
            if y >= end:
                break
            w = y - first
            by = posting_before[p]
            gain = sx * posting_share[p]
            rest = _rest(bx[0], bx[1], bx[2], by[0], by[1], by[2], measure)
            if met[w, 0] != mark:  # first met: nothing ranked above adds to the score
                met[w, 0] = mark
                if gain + rest < least_need:
                    met[w, 1] = -np.inf  # it can never pass: its later meetings add nothing
                else:
                    met[w, 1] = gain
                    touched[n_met] = y
                    n_met += 1
            else:
                met[w, 1] += gain
            met[w, 2] = rest
            p += 1
        cursor[kx] = p
    left = 0
    for t in range(n_met):
        y = touched[t]
        if measure != COSINE:
            size_y = offsets[y + 1] - offsets[y]
            if size_y < floor * size_x or size_x < floor * size_y:
                continue
        if met[y - first, 1] + met[y - first, 2] >= _need(size_x, y, offsets, measure, value):
            touched[left] = y
            left += 1
    # sharper: the other shared features rank below both tails' starts
    kept = 0
    tail_x = ranked[starts[x]]
    for t in range(left):
        if t + _AHEAD < left:
            _prefetch_entries(touched[t + _AHEAD], offsets, ranked, share, before)
        y = touched[t]
        tail_y = ranked[starts[y]]
        if tail_x >= tail_y:
            bx = before[starts[x]]
            x0, x1, x2 = bx[0], bx[1], bx[2]
            y0, y1, y2 = _below(y, tail_x, offsets, ranked, share, before)
        else:
            x0, x1, x2 = _below(x, tail_y, offsets, ranked, share, before)
            by = before[starts[y]]
            y0, y1, y2 = by[0], by[1], by[2]
        rest = _rest(x0, x1, x2, y0, y1, y2, measure)
        if met[y - first, 1] + rest >= _need(size_x, y, offsets, measure, value):
            touched[kept] = y
            kept += 1
    return kept


@njit(cache=True, nogil=True, parallel=True)
def passing_pairs(
    resume: np.ndarray,
    window: int,
    stop: int,
    room: int,
    starts: np.ndarray,
    entry_rank: np.ndarray,
    ordered: np.ndarray,
    ranked: np.ndarray,
    share: np.ndarray,
    before: np.ndarray,
    posting_offsets: np.ndarray,
    posting_docs: np.ndarray,
    posting_share: np.ndarray,
    posting_before: np.ndarray,
    first_partner: np.ndarray,
    cursor: np.ndarray,
    states: np.ndarray,
    offsets: np.ndarray,
    weights: np.ndarray,
    exponents: np.ndarray,
    squared_norms: np.ndarray,
    measure: int,
    value: float,
    earlier: np.ndarray,
    later: np.ndarray,
    similarity: np.ndarray,
    written: np.ndarray,
    compared: np.ndarray,
) -> None:  # pragma: no cover - compiled
    """Verify the candidates below ``stop`` of every later document; write those that pass.

    The candidates are the documents of one window, ``[stop - window, stop)``, so that the
    per-candidate state of a block (``met``, 24 bytes a document) stays in the cache while
    every later document probes it; windows are taken in ascending order, each document's
    ``cursor`` (`first_postings`) moving on past the postings read. Block ``b`` (of
    ``resume.size``) takes documents ``resume[b]``, ``resume[b] + n_blocks``, ... and writes
    its pairs ``(earlier, later)`` with their similarity from ``b * room`` on. It stops before a document whose candidates
    might not fit, leaving that document in ``resume[b]`` (``n_docs`` or more once done) for
    the next call; ``written[b]`` and ``compared[b]`` receive the pairs written and the
    candidates verified.
    """
    n_docs = offsets.size - 1
    n_blocks = resume.size
    longest = 0
    for doc in range(n_docs):
        longest = max(longest, offsets[doc + 1] - starts[doc])
    for block in prange(n_blocks):
        met = np.full((window, 3), -1.0)
        touched = np.empty(window, dtype=np.int32)
        saved = np.empty(longest, dtype=np.int64)
        base = block * room
        write = base
        verified = 0
        x = resume[block]
        while x < n_docs:
            if first_partner[x] >= stop:  # its partners are all in later windows
                x += n_blocks
                continue
            tail = offsets[x + 1] - starts[x]
            copy_run(saved, 0, cursor, starts[x], tail)
            left = _probe(
                x,
                stop,
                offsets,
                starts,
                entry_rank,
                ordered,
                ranked,
                share,
                before,
                posting_offsets,
                posting_docs,
                posting_share,
                posting_before,
                cursor,
                measure,
                value,
                met,
                touched,
            )
            if write + left > base + room:
                copy_run(cursor, starts[x], saved, 0, tail)  # probed again next call
                break
            verified += left
            for t in range(left):
                if t + _AHEAD < left:
                    _prefetch_document(
                        states, offsets, weights, exponents, squared_norms, touched[t + _AHEAD]
                    )
                y = touched[t]
                ok, value_of_pair = _passes(
                    states, offsets, weights, exponents, squared_norms, y, x, measure, value
                )
                if ok:
                    earlier[write] = y
                    later[write] = x
                    similarity[write] = value_of_pair
                    write += 1
            x += n_blocks
        resume[block] = x
        written[block] = write - base
        compared[block] = verified
