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

* ``rank_entries``: each document's entries ordered by feature rank.
* ``tail_starts``: where each document's indexed tail starts.
* ``fill_postings``: the index: for each feature, the documents whose tail holds it, ascending.
* ``candidate_counts``: per document ``x``, the distinct earlier documents ``y < x`` sharing a
  tail feature (the candidates), documents in parallel.
* ``passing_partners``: the same walk, each candidate verified; the passing ones written out
  with their similarity.

Each document's candidates depend only on the index, so results are identical for any thread
count. A document is marked against its candidates in a per-block array: blocks take every
``n_blocks``-th document, so the late documents, which see the most earlier ones, are spread
over the threads.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from gpusimhash._cpu._cluster_loops import COSINE, _passes

# relative margin of the head bounds: heads stay this much below the threshold
_MARGIN = 1e-9


@njit(cache=True, nogil=True, parallel=True)
def rank_entries(offsets: np.ndarray, entry_rank: np.ndarray) -> np.ndarray:  # pragma: no cover
    """Return the entries of every document ordered by ``entry_rank`` (a permutation, int64)."""
    n_docs = offsets.size - 1
    ordered = np.empty(entry_rank.size, dtype=np.int64)
    for doc in prange(n_docs):
        lo, hi = offsets[doc], offsets[doc + 1]
        order = np.argsort(entry_rank[lo:hi])
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
    """Return each entry's share and the shares of the entries before it, in rank order.

    Positions follow ``ordered``. Cosine: the share is the entry's weight over the document's
    norm (its square sums to 1), the prefix the sum of the squared shares before it.
    Jaccard: the share is 1, the prefix the count of entries before it.
    """
    n_docs = offsets.size - 1
    share = np.empty(ordered.size, dtype=np.float64)
    before = np.empty(ordered.size, dtype=np.float64)
    for doc in prange(n_docs):
        lo, hi = offsets[doc], offsets[doc + 1]
        if measure == COSINE:
            scale = 1.0 / np.sqrt(squared_norms[doc]) if hi > lo else 0.0
            shift = -exponents[doc]
            total = 0.0
            for k in range(lo, hi):
                w = np.ldexp(np.float64(weights[ordered[k]]), shift) * scale
                share[k] = w
                before[k] = total
                total += w * w
        else:
            for k in range(lo, hi):
                share[k] = 1.0
                before[k] = k - lo
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
        while k < hi and before[k] + share[k] * share[k] < bound:
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
    posting_before = np.empty(total, dtype=np.float64)
    for doc in range(n_docs):
        for k in range(starts[doc], offsets[doc + 1]):
            r = entry_rank[ordered[k]]
            c = cursor[r]
            posting_docs[c] = doc
            posting_share[c] = share[k]
            posting_before[c] = before[k]
            cursor[r] = c + 1
    return posting_offsets, posting_docs, posting_share, posting_before


@njit(cache=True, nogil=True, inline="always")
def _below(
    doc: int,
    rank: int,
    offsets: np.ndarray,
    ranked: np.ndarray,
    share: np.ndarray,
    before: np.ndarray,
    measure: int,
) -> float:  # pragma: no cover - compiled
    """Return the prefix of ``doc`` below feature rank ``rank`` (squared shares, or count)."""
    lo, hi = offsets[doc], offsets[doc + 1]
    if ranked[hi - 1] < rank:  # every feature is below
        return before[hi - 1] + (share[hi - 1] ** 2 if measure == COSINE else 1.0)
    while lo < hi:
        middle = (lo + hi) // 2
        if ranked[middle] < rank:
            lo = middle + 1
        else:
            hi = middle
    return before[lo]


@njit(cache=True, nogil=True)
def _probe(
    x: int,
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
    measure: int,
    value: float,
    first_partner: np.ndarray,
    met: np.ndarray,
    touched: np.ndarray,
) -> int:  # pragma: no cover - compiled
    """Probe the tail of ``x``; leave in ``touched`` the earlier documents that may pass.

    Documents are in size-key order, so a partner is at least ``first_partner[x]``. The tail
    is probed from the rarest feature down: a document ``y`` is met at every feature of both
    tails, in descending rank. ``met[y]`` holds ``(x, score, rest)``: the score sums what
    those features give (products of shares, or their count), and the rest bounds what the
    other shared features may add: they rank below every feature of both tails (below both
    tails' starts), so below the last one met, where Cauchy-Schwarz bounds them by
    ``sqrt(before_x * before_y)`` (cosine) or their count by ``min(before_x, before_y)``
    (Jaccard). Returns how many documents are left in ``touched``: those whose
    ``score + rest`` reaches the threshold (less the margin), and for Jaccard whose sizes
    are within the factor ``t`` of each other.
    """
    floor = value * (1.0 - _MARGIN)
    size_x = offsets[x + 1] - offsets[x]
    mark = np.float64(x)
    n_met = 0
    for kx in range(offsets[x + 1] - 1, starts[x] - 1, -1):
        r = entry_rank[ordered[kx]]
        sx, bx = share[kx], before[kx]
        lo, hi = posting_offsets[r], posting_offsets[r + 1]
        while lo < hi:  # the first posting of a partner large enough
            middle = (lo + hi) // 2
            if posting_docs[middle] < first_partner[x]:
                lo = middle + 1
            else:
                hi = middle
        for p in range(lo, posting_offsets[r + 1]):
            y = posting_docs[p]
            if y >= x:
                break
            if met[y, 0] != mark:
                met[y, 0] = mark
                met[y, 1] = 0.0
                touched[n_met] = y
                n_met += 1
            if measure == COSINE:
                met[y, 1] += sx * posting_share[p]
                met[y, 2] = np.sqrt(bx * posting_before[p])
            else:
                met[y, 1] += 1.0
                met[y, 2] = min(bx, posting_before[p])
    left = 0
    tail_x = ranked[starts[x]]
    for t in range(n_met):
        y = touched[t]
        if measure == COSINE:
            need = floor
        else:
            size_y = offsets[y + 1] - offsets[y]
            if size_y < floor * size_x or size_x < floor * size_y:
                continue
            need = floor * (size_x + size_y) / (1.0 + value)
        if met[y, 1] + met[y, 2] < need:
            continue
        # sharper: the other shared features rank below both tails' starts
        tail_y = ranked[starts[y]]
        if tail_x >= tail_y:
            below_x = before[starts[x]]
            below_y = _below(y, tail_x, offsets, ranked, share, before, measure)
        else:
            below_x = _below(x, tail_y, offsets, ranked, share, before, measure)
            below_y = before[starts[y]]
        rest = np.sqrt(below_x * below_y) if measure == COSINE else min(below_x, below_y)
        if met[y, 1] + rest >= need:
            touched[left] = y
            left += 1
    return left


@njit(cache=True, nogil=True, parallel=True)
def passing_pairs(
    resume: np.ndarray,
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
    """Verify the candidates of every document; write the pairs that pass, block by block.

    Block ``b`` (of ``resume.size``) takes documents ``resume[b]``, ``resume[b] + n_blocks``,
    ... and writes its pairs ``(earlier, later)`` with their similarity from ``b * room`` on.
    It stops before a document whose candidates might not fit, leaving that document in
    ``resume[b]`` (``n_docs`` or more once done) for the next call; ``written[b]`` and
    ``compared[b]`` receive the pairs written and the candidates verified.
    """
    n_docs = offsets.size - 1
    n_blocks = resume.size
    for block in prange(n_blocks):
        met = np.full((n_docs, 3), -1.0)
        touched = np.empty(n_docs, dtype=np.int32)
        base = block * room
        write = base
        verified = 0
        x = resume[block]
        while x < n_docs:
            left = _probe(
                x,
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
                measure,
                value,
                first_partner,
                met,
                touched,
            )
            if write + left > base + room:
                break
            verified += left
            for t in range(left):
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
