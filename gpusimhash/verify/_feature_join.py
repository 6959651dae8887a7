"""The exact feature join: every pair of documents at or above a similarity threshold.

Candidates come from the documents' own features by prefix filtering, not from fingerprints
(`gpusimhash._cpu._allpairs_loops` states the bounds): a pair at or above the threshold always
shares an indexed feature, so it is always a candidate, and every candidate is verified with
the same exact similarity as `DocumentFeatures.similarities`. The result is the set of pairs a
brute-force comparison of every pair would keep, found without comparing most pairs.

Documents are numbered by their size key first (`size_keys`: the norm or feature count that
bounds who can pair with whom), so each document probes only the partners its size allows.

Memory: per feature entry, its rank, position, share and prefix (48 bytes) and a cursor (8);
per indexed (tail) entry a posting (36 bytes). Candidates are verified as they are found,
never stored: the loop writes only passing pairs, into a fixed room per range of documents
probed (`PAIRS_PER_BLOCK` or `WINDOW_DOCS`, 16 bytes each, one range per thread at a time)
that a full range resumes from in the next round; the passing pairs are kept (20 bytes each),
and ``max_pairs`` bounds them.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from gpusimhash import _validate
from gpusimhash._cpu._allpairs_loops import (
    entry_shares,
    fill_postings,
    first_postings,
    passing_pairs,
    rank_entries,
    size_keys,
    tail_starts,
)
from gpusimhash._cpu._cluster_loops import COSINE, JACCARD
from gpusimhash._cpu._threads import threads
from gpusimhash._memory import MemoryRefusal, check_memory
from gpusimhash.verify._features import DocumentFeatures
from gpusimhash.verify._product_join import (
    Tails,
    frequency_ranks,
    product_candidates,
    tails,
)

# room for passing pairs per block and call, at least (16 bytes each)
PAIRS_PER_BLOCK = 1 << 18
# candidate documents per window: a block's state for them (24 bytes each) stays in cache
WINDOW_DOCS = 1 << 15
# postings the join may read per pair of the budget: a read costs far less than the verification
# of a candidate pair, which the codes' budget counts (10 billion at the default budget)
READS_PER_PAIR = 100
# bytes of the index per feature entry of its documents, at most: at the peak of its build 92 to
# 98 on PyPI summaries, whose tails hold 43% to 58% of the entries, and 88 to 103 on synthetic
# corpora whose tails hold 51% to 94% (tracemalloc, bench/results/index_memory_cpu.json)
INDEX_BYTES_PER_ENTRY = 120
# ranges of positions per thread of a probe: a thread done early takes the next
_RANGES_PER_THREAD = 2
_MEASURES = {"cosine": COSINE, "jaccard": JACCARD}
PLANS = ("index", "product")
_NAMES = {code: name for name, code in _MEASURES.items()}


@dataclass(frozen=True)
class FeatureJoin:
    """The pairs at or above a threshold, from the features alone.

    Attributes
    ----------
    pairs : ndarray, shape (m, 2), dtype int64
        Pairs ``(i, j)``, ``i < j``, of documents whose similarity reaches the threshold, in
        no particular order.
    similarity : ndarray, shape (m,), dtype float64
        The exact similarity of each pair (the measure of the threshold).
    candidates : int
        Pairs compared: the distinct pairs sharing an indexed feature.
    indexed : int
        Feature entries in the index (the documents' tails).
    """

    pairs: np.ndarray
    similarity: np.ndarray
    candidates: int
    indexed: int


def feature_join(
    features: DocumentFeatures,
    measure: str,
    value: float,
    *,
    rows: np.ndarray | None = None,
    max_pairs: int | None = None,
    plan: str = "index",
) -> FeatureJoin:
    """Find every pair of documents whose exact similarity reaches the threshold.

    Two plans find the same pairs with the same similarities: the compiled index (`feature_index`,
    `probe_range`), which prunes candidates as it probes, and one sparse product of the
    documents' tails (`gpusimhash.verify._product_join`), which compares more candidates and
    serves as the index's reference.

    Parameters
    ----------
    features : DocumentFeatures
        The documents (featureless ones pair with no one).
    measure : {"cosine", "jaccard"}
        Cosine of the weighted features (weights of any sign) or Jaccard of the feature sets.
    value : float
        The threshold, in ``(0, 1]``: at or below 0 a pair sharing no feature would qualify,
        which no feature index finds.
    rows : ndarray of int, optional
        Join these documents of ``features`` only, numbered by their place in ``rows``, as
        ``features.take(rows)`` would give them (the index copies their features once,
        `feature_index`).
    max_pairs : int, optional
        Refuse, as soon as they are found, more passing pairs than this; and, before any
        probe, an index whose probes would read more than ``READS_PER_PAIR`` times this many
        postings (`check_reads`).
    plan : {"index", "product"}
        How candidates are found (above).

    Returns
    -------
    FeatureJoin

    Raises
    ------
    ValueError
        An unknown measure or plan, a threshold outside ``(0, 1]``, ``2**31`` documents or
        more, more than ``max_pairs`` pairs, or more postings to read than their budget.
    MemoryError
        Pairs found that the memory available cannot hold.

    Examples
    --------
    >>> from gpusimhash.fingerprinting import featurize
    >>> docs = ["the cat sat", "the cat sat down", "a dog ran", "the cat sat"]
    >>> found = feature_join(DocumentFeatures.from_batch(featurize(docs)), "cosine", 0.8)
    >>> sorted(zip(map(tuple, found.pairs.tolist()), found.similarity.round(3).tolist()))
    [((0, 1), 0.866), ((0, 3), 1.0), ((1, 3), 0.866)]
    """
    if plan not in PLANS:
        raise ValueError(f"plan must be one of {', '.join(PLANS)}, got {plan!r}")
    if plan == "product":
        taken = features if rows is None else features.take(rows)
        _check_threshold(taken.n_docs, measure, value)
        return _product_join(taken, tails(taken, measure, value), measure, value, max_pairs)
    index = feature_index(features, measure, value, rows=rows)
    check_reads(index, max_pairs)
    return probe_range(index, 0, index.n_docs, max_pairs=max_pairs)


def _product_join(
    features: DocumentFeatures, found: Tails, measure: str, value: float, max_pairs: int | None
) -> FeatureJoin:
    """`feature_join` by the product of the tails: every pair sharing a tail feature, verified."""
    candidates = product_candidates(found)
    compare = features.widened().comparer("cpu")
    cosine, jaccard, _ = compare(candidates[:, 0].copy(), candidates[:, 1].copy())
    similarity = cosine if measure == "cosine" else jaccard
    passing = similarity >= value  # as the index join's verification decides
    check_pairs(int(np.count_nonzero(passing)), max_pairs, measure, value)
    return FeatureJoin(
        candidates[passing], similarity[passing], candidates.shape[0], found.documents.size
    )


@dataclass(frozen=True)
class FeatureIndex:
    """The documents of a feature join in size-key order, with the index of their tails.

    What probing needs (`probe_range`), built once (`feature_index`) and never changed by a
    probe, so that any number of probes, anywhere, can share it.

    Attributes
    ----------
    order : ndarray, dtype int64
        The input document at each position (positions in size-key order).
    index : tuple of ndarray
        Tail starts, entry ranks, rank order, ranks in that order, shares, prefixes, the four
        posting arrays, each document's least partner and its first postings, as
        `gpusimhash._cpu._allpairs_loops.passing_pairs` takes them.
    arrays : tuple of ndarray
        States, offsets, weights, exponents and squared norms of the documents in size-key
        order.
    measure : int
        `COSINE` or `JACCARD`.
    value : float
        The threshold.
    doc_reads : ndarray, dtype int64
        Postings each position's probe reads: its pairs with earlier documents that share a
        feature of both tails (counted once per such feature) and whose size keys allow the
        threshold. The probing's work is about proportional to them (`range_bounds`).
    """

    order: np.ndarray
    index: tuple[np.ndarray, ...]
    arrays: tuple[np.ndarray, ...]
    measure: int
    value: float
    doc_reads: np.ndarray

    @property
    def n_docs(self) -> int:
        """Documents indexed."""
        return int(self.order.size)

    @property
    def reads(self) -> int:
        """Postings the probes of every document read in all (`doc_reads`)."""
        return int(self.doc_reads.sum())

    @property
    def indexed(self) -> int:
        """Feature entries in the index (the documents' tails)."""
        return int(self.index[7].size)


def feature_index(
    features: DocumentFeatures,
    measure: str,
    value: float,
    *,
    rows: np.ndarray | None = None,
    worker_room: int | None = None,
) -> FeatureIndex:
    """Order the documents by size key and index their tails, for `probe_range`.

    Parameters
    ----------
    features : DocumentFeatures
        The documents.
    measure : {"cosine", "jaccard"}
        As `feature_join`.
    value : float
        The threshold, in ``(0, 1]``.
    rows : ndarray of int, optional
        Index these documents of ``features`` only, as ``features.take(rows)`` would give
        them: the index numbers them by their place in ``rows``. Their features are copied
        once, straight into size-key order, where a take first would copy them twice; the
        size key of every document is computed, which suits rows of most of them (as the
        representatives of a deduplication are).
    worker_room : int, optional
        The bytes a Dask worker building it may still take (`check_index_memory`).

    Returns
    -------
    FeatureIndex

    Raises
    ------
    ValueError
        An unknown measure, a threshold outside ``(0, 1]``, ``2**31`` documents or more, or a
        row outside ``features``.
    MemoryRefusal
        An index larger than the memory available (`check_index_memory`), before any of it is
        built.

    Examples
    --------
    >>> from gpusimhash.fingerprinting import featurize
    >>> features = DocumentFeatures.from_batch(featurize(["a b", "x y z", "a b c", "b a"]))
    >>> some = feature_index(features, "cosine", 0.8, rows=np.array([3, 2, 0]))
    >>> sorted(map(tuple, probe_range(some, 0, some.n_docs).pairs.tolist()))
    [(0, 1), (0, 2), (1, 2)]
    """
    if rows is None:
        rows = np.arange(features.n_docs)
    rows = np.asarray(rows, dtype=np.int64).reshape(-1)
    _validate.indices(rows, features.n_docs, "feature_index: rows")
    _check_threshold(rows.size, measure, value)
    check_index_memory(rows.size, int(features.sizes[rows].sum()), worker_room)
    code = _MEASURES[measure]
    # each document's key is its own features' alone: those of the rows are theirs
    key, least = size_keys(
        features.offsets,
        features.weights,
        features.exponents,
        features.squared_norms,
        code,
        float(value),
    )
    key, least = key[rows], least[rows]
    order = np.argsort(key, kind="stable")  # by size key: a partner's key bound is a range
    first_partner = np.searchsorted(key[order], least[order], side="left")
    return _index_by_size(features.take(rows[order]), order, code, float(value), first_partner)


def _index_by_size(
    features: DocumentFeatures,
    order: np.ndarray,
    code: int,
    value: float,
    first_partner: np.ndarray,
) -> FeatureIndex:
    """`feature_index` of documents in size-key order, ``first_partner`` the least partners."""
    offsets = features.offsets
    entry_rank, n_ranks = frequency_ranks(features.states)
    # ranks are non-negative: their uint32 view sorts alike (`gpusimhash._cpu._sorting`)
    ordered = rank_entries(offsets, entry_rank.view(np.uint32))
    share, before = entry_shares(
        offsets,
        ordered,
        features.weights,
        features.exponents,
        features.squared_norms,
        code,
    )
    starts = tail_starts(offsets, share, before, code, value)
    postings = fill_postings(offsets, ordered, starts, entry_rank, share, before, n_ranks)
    ranked = entry_rank[ordered]  # each position's feature rank
    cursor, reads = first_postings(
        offsets,
        starts,
        entry_rank,
        ordered,
        postings[0],
        postings[1],
        first_partner,
    )
    index = (starts, entry_rank, ordered, ranked, share, before, *postings, first_partner, cursor)
    arrays = (
        features.states,
        features.offsets,
        features.weights,
        features.exponents,
        features.squared_norms,
    )
    return FeatureIndex(order, index, arrays, code, value, reads)


def probe_range(
    index: FeatureIndex,
    start: int,
    stop: int,
    *,
    max_pairs: int | None = None,
    worker_room: int | None = None,
) -> FeatureJoin:
    """Find the passing pairs whose later document (in size-key order) is in a range of positions.

    Ranges that partition ``[0, n_docs)`` find every pair of `feature_join` once, wherever
    each runs. The range is cut into ranges of about equal reads (`range_bounds`), two per
    thread of the compiled loops, each probed by one thread in position order, so that
    consecutive probes read neighbouring postings and documents. Measured by hand on the first
    200,000 PyPI summaries at cosine 0.8, one document per code and feature set (as `dedup`
    probes them), 7 runs each: on one thread the ranges took 1.29 to 1.39 s, where 2 blocks of
    documents interleaved over every position took 1.30 to 1.47 s; on 2 threads 0.69 to
    1.01 s against 0.61 to 0.98 s for 4 interleaved blocks, within the runs' spread. A
    cluster's shares gain most: with every document indexed, 4 ranges took 1.19 to 1.24 s in
    all on one thread, 4 shares of 2 blocks interleaved over 8 took 1.42 to 1.47 s. One
    machine's whole `dedup` at the defaults on those summaries took 2.02 to 2.60 s against
    2.05 to 2.32 s before, 4 runs each in turns (``bench/compare_revisions.py``,
    ``bench/results/feature_ranges_dedup_cpu.json``).

    Parameters
    ----------
    index : FeatureIndex
        The documents, indexed (`feature_index`); left unchanged.
    start, stop : int
        The positions probed, ``0 <= start <= stop <= n_docs`` (`range_bounds`).
    max_pairs : int, optional
        Refuse, as soon as they are found, more passing pairs than this.
    worker_room : int, optional
        The bytes a Dask worker probing it may still take (`check_pairs`).

    Returns
    -------
    FeatureJoin
        Pairs in the input numbering, range by range.

    Raises
    ------
    ValueError
        A range outside ``[0, n_docs]``, or more than ``max_pairs`` pairs.
    MemoryError
        Pairs found that the memory available, or ``worker_room``, cannot hold.

    Examples
    --------
    >>> from gpusimhash.fingerprinting import featurize
    >>> docs = ["the cat sat", "the cat sat down", "a dog ran", "the cat sat"]
    >>> index = feature_index(DocumentFeatures.from_batch(featurize(docs)), "cosine", 0.8)
    >>> [len(probe_range(index, a, b).pairs) for a, b in ((0, 2), (2, 4))]
    [0, 3]
    """
    if not 0 <= start <= stop <= index.n_docs:
        raise ValueError(f"the range must lie in [0, {index.n_docs}], got [{start}, {stop})")
    n_threads = threads()
    bounds = range_bounds(
        index, 1 if n_threads == 1 else _RANGES_PER_THREAD * n_threads, start, stop
    )
    count = _PairCount(max_pairs, _NAMES[index.measure], index.value, worker_room)

    def probe(r: int) -> FeatureJoin:
        return _probe_by_size(index, int(bounds[r]), int(bounds[r + 1]), count)

    if n_threads == 1:
        found = [probe(0)]
    else:
        pool = ThreadPoolExecutor(n_threads)
        try:
            found = list(pool.map(probe, range(bounds.size - 1)))
        except BaseException:  # a refusal, an error, Ctrl-C: the other ranges stop too
            count.cancel()
            raise
        finally:
            pool.shutdown(cancel_futures=True)
    pairs = index.order[np.concatenate([np.zeros((0, 2), np.int64), *(f.pairs for f in found)])]
    pairs.sort(axis=1)
    similarity = np.concatenate([np.zeros(0), *(f.similarity for f in found)])
    return FeatureJoin(pairs, similarity, sum(f.candidates for f in found), index.indexed)


def range_bounds(
    index: FeatureIndex,
    n_ranges: int,
    start: int = 0,
    stop: int | None = None,
    *,
    ratio: float = 1.0,
) -> np.ndarray:
    """Cut positions ``[start, stop)`` into ``n_ranges`` ranges of about equal reads.

    The ranges `probe_range` probes apart.

    Parameters
    ----------
    index : FeatureIndex
        The index.
    n_ranges : int
        Ranges, ``>= 1``.
    start, stop : int, optional
        The positions cut; default all of them.

    Returns
    -------
    ndarray, shape (n_ranges + 1,), dtype int64
        Ascending bounds from ``start`` to ``stop``: range ``r`` is ``[bounds[r], bounds[r + 1])``.

    Examples
    --------
    >>> from gpusimhash.fingerprinting import featurize
    >>> docs = ["the cat sat", "the cat sat down", "a dog ran", "the cat sat"]
    >>> index = feature_index(DocumentFeatures.from_batch(featurize(docs)), "cosine", 0.8)
    >>> range_bounds(index, 2).tolist()
    [0, 2, 4]
    """
    if n_ranges < 1:
        raise ValueError(f"n_ranges must be at least 1, got {n_ranges}")
    if not 0 < ratio <= 1:
        raise ValueError(f"ratio must be in (0, 1], got {ratio}")
    stop = index.n_docs if stop is None else stop
    # each document costs a little beyond its reads (its turn in every window's sweep)
    work = np.cumsum(index.doc_reads[start:stop] + 1)
    total = int(work[-1]) if work.size else 0
    parts = np.cumsum(ratio ** np.arange(n_ranges))
    cuts = np.searchsorted(work, parts[:-1] * total / parts[-1], side="right")
    return np.concatenate([[start], start + cuts, [stop]]).astype(np.int64)


class _PairCount:
    """The passing pairs a probe's threads found so far, checked as each adds its own.

    Each range adds its pairs after every call of the compiled loop (one window's round), so a
    range stops there once the probe is cancelled (`cancel`): a refusal or an interrupt waits
    for one round of the other threads, not for their ranges.
    """

    def __init__(
        self, max_pairs: int | None, measure: str, value: float, worker_room: int | None
    ) -> None:
        self.found = 0
        self._lock = threading.Lock()
        self._limits = (max_pairs, measure, value, worker_room)
        self._cancelled = threading.Event()

    def add(self, pairs: int) -> None:
        """Count more pairs found; refuse the total over the budget or memory (`check_pairs`).

        Raises
        ------
        _ProbeCancelled
            The probe was cancelled: the range stops.
        """
        if self._cancelled.is_set():
            raise _ProbeCancelled("the probe stopped: another range failed or was interrupted")
        with self._lock:
            self.found += pairs
            found = self.found
        max_pairs, measure, value, worker_room = self._limits
        check_pairs(found, max_pairs, measure, value, worker_room)

    def cancel(self) -> None:
        """Stop every range at its next round."""
        self._cancelled.set()


class _ProbeCancelled(Exception):
    """A range of a probe stopped because another failed (never raised to the caller)."""


def _probe_by_size(index: FeatureIndex, start: int, stop: int, count: _PairCount) -> FeatureJoin:
    """Probe the positions ``[start, stop)`` in order; pairs in size-key positions."""
    # each probe moves its documents' cursors on as the windows go: a copy of its own
    starts, *by_entry, first_partner, cursor = index.index
    states, offsets, weights, exponents, squared_norms = index.arrays
    # the compiled loop probes every document it is given: those below the range's end
    arrays = (starts[:stop], *by_entry, first_partner[:stop], cursor.copy())
    documents = (states, offsets[: stop + 1], weights, exponents[:stop], squared_norms[:stop])
    room = max(WINDOW_DOCS, PAIRS_PER_BLOCK)
    left = np.empty(room, dtype=np.int32)
    right = np.empty(room, dtype=np.int32)
    values = np.empty(room, dtype=np.float64)
    earlier, later, similarity = [], [], []
    candidates = 0
    # windows of candidates from the range's least partner on (earlier ones hold none)
    least = int(first_partner[start:stop].min()) if stop > start else stop
    for lo in range(least - least % WINDOW_DOCS, stop, WINDOW_DOCS):
        end = min(lo + WINDOW_DOCS, stop)
        resume = np.array([max(start, lo + 1)], dtype=np.int64)  # later than the window's first
        while resume[0] < stop:
            written = np.zeros(1, dtype=np.int64)
            compared = np.zeros(1, dtype=np.int64)
            passing_pairs(
                resume,
                end - lo,
                end,
                room,
                *arrays,
                *documents,
                index.measure,
                index.value,
                left,
                right,
                values,
                written,
                compared,
            )
            k = int(written[0])
            earlier.append(left[:k].copy())
            later.append(right[:k].copy())
            similarity.append(values[:k].copy())
            candidates += int(compared[0])
            count.add(k)
    if not earlier:
        return FeatureJoin(np.zeros((0, 2), np.int64), np.zeros(0), 0, index.indexed)
    pairs = np.stack([np.concatenate(earlier), np.concatenate(later)], axis=1)
    return FeatureJoin(
        pairs.astype(np.int64), np.concatenate(similarity), candidates, index.indexed
    )


def check_index_memory(n_docs: int, n_entries: int, worker_room: int | None = None) -> None:
    """Refuse, before building it, a feature index larger than the memory left for it.

    The index takes up to `INDEX_BYTES_PER_ENTRY` bytes per feature entry of its documents.

    Parameters
    ----------
    n_docs, n_entries : int
        Documents to index, and their feature entries in all.
    worker_room : int, optional
        The bytes a Dask worker may still take (`gpusimhash.distributed._features`), which
        is checked first; the machine's available memory is checked either way.

    Raises
    ------
    MemoryRefusal
        The index's estimate over either: the message gives the estimate and the memory it
        exceeds, and says what to do.

    Examples
    --------
    >>> check_index_memory(1_000, 9_000)
    >>> check_index_memory(1_000, 9_000, worker_room=100_000)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    gpusimhash._memory.MemoryRefusal: the exact feature join's index of 1,000 documents ...
    """
    what = (
        f"the exact feature join's index of {n_docs:,} documents ({n_entries:,} feature "
        "entries) needs"
    )
    advice = (
        "candidates='codes' (--candidates codes) takes the candidates from the fingerprints "
        "instead, without this index (each pair at the threshold found with probability 0.99)"
    )
    try:
        each = "" if worker_room is None else " on every worker"
        check_memory(INDEX_BYTES_PER_ENTRY * n_entries, what, worker_room, each=each)
    except MemoryRefusal as refusal:
        raise MemoryRefusal(f"{refusal}: {advice}") from None


def check_pairs(
    found: int,
    max_pairs: int | None,
    measure: str,
    value: float,
    worker_room: int | None = None,
) -> None:
    """Refuse pairs over ``max_pairs``, or more than memory can hold, as the join goes.

    Parameters
    ----------
    found : int
        Passing pairs found so far.
    max_pairs : int, optional
        The budget.
    measure : {"cosine", "jaccard"}
        The threshold's measure, and ``value`` its value (for the message).
    worker_room : int, optional
        The bytes a Dask worker finding them had left of its memory limit when it began
        (`gpusimhash.distributed._features.worker_room`), checked before the machine's.

    Raises
    ------
    ValueError
        More pairs than ``max_pairs``.
    MemoryError
        More than the memory available, or ``worker_room``, can hold (20 bytes each).

    Examples
    --------
    >>> check_pairs(1_000, None, "cosine", 0.8, worker_room=20_000)
    >>> check_pairs(1_001, None, "cosine", 0.8, worker_room=20_000)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    gpusimhash._memory.MemoryRefusal: 1,001 document pairs (and counting) at cosine 0.8 ...
    """
    where = f"{found:,} document pairs (and counting) at {measure} {value:g} or above"
    if max_pairs is not None and found > max_pairs:
        raise ValueError(
            f"{where}, over the budget of {max_pairs:,}: raise the threshold or pass --force "
            "(force=True)"
        )
    check_memory(20 * found, f"{where} need", worker_room)


def check_reads(index: FeatureIndex, max_pairs: int | None) -> None:
    """Refuse, before any probe, an index whose probes would read too many postings.

    Parameters
    ----------
    index : FeatureIndex
        The index (`FeatureIndex.reads` counts its probes' reads exactly).
    max_pairs : int, optional
        The pair budget: at most ``READS_PER_PAIR`` times this many reads; none without it.

    Raises
    ------
    ValueError
        More reads than that, with their count: on dense text (long documents sharing
        frequent words) a low threshold makes most pairs of documents candidates.
    """
    if max_pairs is None or index.reads <= READS_PER_PAIR * max_pairs:
        return
    measure = _NAMES[index.measure]
    raise ValueError(
        f"the feature join at {measure} {index.value:g} would read {index.reads:,} postings "
        f"(pairs of documents sharing an indexed feature) for {index.n_docs:,} documents, "
        f"over the budget of {READS_PER_PAIR * max_pairs:,} ({READS_PER_PAIR} per pair of "
        "the pair budget): raise the threshold, take candidates from the codes "
        "(--candidates codes), or pass --force (force=True)"
    )


def _check_threshold(n_docs: int, measure: str, value: float) -> None:
    """Refuse an unknown measure, a threshold outside ``(0, 1]`` or ``2**31`` documents."""
    if measure not in _MEASURES:
        raise ValueError(f"measure must be cosine or jaccard, got {measure!r}")
    if not 0.0 < value <= 1.0:
        raise ValueError(
            f"the feature join needs a threshold in (0, 1], got {value}: "
            "use the codes' join (candidates='codes') for lower ones"
        )
    if n_docs >= 2**31:
        raise ValueError(f"at most {2**31 - 1:,} documents, got {n_docs:,}")
