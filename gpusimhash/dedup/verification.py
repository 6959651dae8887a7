"""The verify and cluster stages of dedup, and what they need from the other stages.

* `plan_threshold` turns the options into a similarity threshold and a Hamming radius: with
  verification, the candidate radius of ``candidate_recall`` (or an explicit one) and an exact
  threshold; without, the radius of the estimated cosine (today's dedup).
* `feature_spill` keeps every document's merged features out of memory during the fingerprint
  pass (12 bytes per distinct feature and 24 per document, in a temporary folder; 8 bytes per
  document stay in memory), and reads back only those of the documents in candidate pairs.
* `check_budget` estimates the pairs of distinct codes the join will produce, from sampled
  degrees, and refuses a threshold over budget with a one-line message; `check_memory` refuses
  an allocation that cannot fit in the memory available, before it is made.
* `join_with_features` leaves featureless documents out of the join: each is a code of its own,
  or all of them one code with ``empty_as_duplicates``.
* `cluster_documents` makes star clusters (every removed document verified against the document
  kept for it) or connected components, verifying candidates inside the clustering, and
  measures every removed document's exact similarity to its kept one, whatever the clustering,
  so a run can count those below the threshold.
"""

from __future__ import annotations

import contextlib
import math
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gpusimhash import _segments
from gpusimhash._choices import CLUSTERINGS
from gpusimhash.search._join import (
    DuplicateGroups,
    check_radius,
    cosine_radius,
    first_seen_labels,
    index_dtype,
)
from gpusimhash.search.budget import (
    MAX_CANDIDATE_PAIRS,
    MemoryRefusal,
    available_memory,
    distinct_codes,
    estimate_pair_count,
)
from gpusimhash.search.clusters import keep_one
from gpusimhash.search.graph import CodeGraph
from gpusimhash.search.graph_clusters import graph_components, unit_graph, unit_stars
from gpusimhash.search.verify import (
    DEFAULT_CANDIDATE_RECALL,
    DEFAULT_MIN_COSINE,
    DocumentFeatures,
    candidate_radius,
    search_cosine,
    threshold,
)

# entries of a column file read at a time when gathering features
_WINDOW = 1 << 20
# the dtypes narrowed weights are read as, narrowest first: each holds every value of the ones
# before it exactly (counts as small integers: 1 byte a feature instead of 8)
_NARROWED = (np.int8, np.int16, np.float32, np.float64)
# removed documents measured against their kept ones at a time: from the gathered features
# (a small copy each), or re-read from the spill (each read spans the file, so fewer chunks
# are faster, but each holds its documents' features: 2**18 pairs cost 74 bytes per document
# at 1M synthetic documents, 2**13 read the file 40 times)
_MEASURED = 1 << 13
_MEASURED_READ = 1 << 15

__all__ = [
    "CLUSTERINGS",
    "Clustering",
    "FeatureSpill",
    "Threshold",
    "check_budget",
    "check_memory",
    "cluster_documents",
    "feature_spill",
    "join_with_features",
    "plan_threshold",
]


@dataclass(frozen=True)
class Threshold:
    """Which pairs are near-duplicates and how candidates are searched.

    Attributes
    ----------
    measure : {"cosine", "jaccard"}
        The similarity the threshold is on (Jaccard of feature sets, or weighted cosine).
    value : float
        The threshold.
    radius : int
        Hamming radius of the join.
    verify : bool
        Whether every candidate is verified on its features.
    """

    measure: str
    value: float
    radius: int
    verify: bool


def plan_threshold(
    bits: int,
    *,
    verify: bool = True,
    max_distance: int | None = None,
    min_cosine: float | None = None,
    min_jaccard: float | None = None,
    candidate_recall: float = DEFAULT_CANDIDATE_RECALL,
) -> Threshold:
    """Turn dedup's threshold options into a threshold and a radius.

    With verification, the threshold is exact (default: cosine 0.8) and the radius is
    `max_distance`, or the candidate radius of `candidate_recall`. Without, give at most one of
    `max_distance`, `min_cosine` and `min_jaccard`: the radius is the given one or that of the
    estimated similarity, and the threshold (used only to count the documents removed below it)
    is the given one or the estimated cosine of the radius.

    Parameters
    ----------
    bits : int
        Code length.
    verify : bool
        Verify the candidates.
    max_distance : int, optional
        Hamming radius.
    min_cosine, min_jaccard : float, optional
        The threshold (at most one).
    candidate_recall : float
        Probability that a pair at the threshold is a candidate.

    Returns
    -------
    Threshold

    Raises
    ------
    TypeError, ValueError
        A bad or contradictory threshold.

    Examples
    --------
    >>> plan_threshold(256)
    Threshold(measure='cosine', value=0.8, radius=68, verify=True)
    >>> plan_threshold(64, verify=False, max_distance=16)
    Threshold(measure='cosine', value=0.7071067811865476, radius=16, verify=False)
    """
    given = min_cosine is not None or min_jaccard is not None
    if not verify and max_distance is not None:
        if given:
            raise ValueError(
                "without verification, give one of max_distance, min_cosine and min_jaccard"
            )
        radius = min(check_radius(max_distance), bits)
        return Threshold("cosine", math.cos(math.pi * radius / bits), radius, verify)
    measure, value = threshold(min_cosine if given else DEFAULT_MIN_COSINE, min_jaccard)
    if max_distance is not None:
        radius = min(check_radius(max_distance), bits)
    elif verify:
        radius = candidate_radius(
            bits,
            min_cosine=value if measure == "cosine" else None,
            min_jaccard=value if measure == "jaccard" else None,
            candidate_recall=candidate_recall,
        )
    else:
        radius = cosine_radius(search_cosine(measure, value), bits)
    return Threshold(measure, value, radius, verify)


class FeatureSpill:
    """Merged document features, appended batch by batch to files, read back by row.

    Open one with `feature_spill`, which deletes the files afterwards.

    Parameters
    ----------
    directory : Path
        An empty folder for the files.
    """

    _COLUMNS = (
        ("states", np.uint32),
        ("weights", np.float64),
        ("exponents", np.int64),
        ("squared_norms", np.float64),
    )

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._ends: list[np.ndarray] = []  # each batch's documents' feature ends (int64)
        self._total = 0  # features appended
        self._offsets: np.ndarray | None = None
        self._files = {name: open(directory / name, "wb") for name, _ in self._COLUMNS}  # noqa: SIM115

    def close(self) -> None:
        """Close the files."""
        for handle in self._files.values():
            handle.close()

    @property
    def n_docs(self) -> int:
        """Documents appended so far."""
        return sum(ends.size for ends in self._ends)

    def append(self, features: DocumentFeatures) -> None:
        """Append the documents of a batch.

        Parameters
        ----------
        features : DocumentFeatures
            The batch's documents, next in order.
        """
        for name, dtype in self._COLUMNS:
            np.ascontiguousarray(getattr(features, name), dtype=dtype).tofile(self._files[name])
        ends = self._total + np.cumsum(features.sizes, dtype=np.int64)
        self._ends.append(ends)
        self._total = int(ends[-1]) if ends.size else self._total
        self._offsets = None

    def gather(self, rows: Any, *, narrow: bool = False) -> DocumentFeatures:
        """Read back some documents.

        The files are read in windows of at most ``_WINDOW`` entries around the wanted
        documents (never mapped), so memory holds the result and one window.

        Parameters
        ----------
        rows : array_like of int
            Ascending document indices.
        narrow : bool
            Return the weights in the narrowest of int8, int16, float32 and float64 that holds
            every weight read exactly (checked window by window, widening as needed): word
            counts take 5 bytes per distinct feature instead of 12. Only for callers that widen
            them back before computing with them.

        Returns
        -------
        DocumentFeatures
            Document ``i`` is document ``rows[i]`` of those appended.

        Raises
        ------
        ValueError
            Rows not ascending or out of range.
        MemoryError
            Before reading, when the result cannot fit in the memory available.
        """
        rows = np.asarray(rows, dtype=np.int64).reshape(-1)
        n = self.n_docs
        if rows.size and (np.any(np.diff(rows) <= 0) or rows[0] < 0 or rows[-1] >= n):
            raise ValueError(f"rows must be ascending document indices in [0, {n})")
        for handle in self._files.values():
            handle.flush()
        if self._offsets is None:  # one array: the batches' ends become a view of it
            self._offsets = np.concatenate([np.zeros(1, np.int64), *self._ends])
            self._ends = [self._offsets[1:]]
        starts = self._offsets[rows]
        sizes = self._offsets[rows + 1] - starts
        total = int(sizes.sum())
        check_memory(12 * total + 32 * rows.size, f"the features of {rows.size:,} documents need")
        offsets = np.zeros(rows.size + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        ones = np.ones(rows.size, dtype=np.int64)
        return DocumentFeatures(
            self._read("states", np.uint32, starts, sizes),
            offsets,
            self._read("weights", _NARROWED[0] if narrow else np.float64, starts, sizes),
            self._read("exponents", np.int64, rows, ones),
            self._read("squared_norms", np.float64, rows, ones),
        )

    def _read(self, name: str, dtype: Any, starts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
        """Read the runs ``[starts[i], starts[i] + sizes[i])`` of a column file, concatenated.

        A narrower ``dtype`` than the file's (one of `_NARROWED`) holds the values while they
        are exact in it; a window that is not widens the result to the narrowest dtype of
        `_NARROWED` exact for it (the values so far converted exactly).
        """
        out = np.empty(int(sizes.sum()), dtype=dtype)
        dtype = dict(self._COLUMNS)[name]
        itemsize = np.dtype(dtype).itemsize
        ends = starts + sizes
        written = 0
        with open(self.directory / name, "rb") as handle:
            first = 0
            while first < starts.size:
                # the runs that fit in one window from this one (at least this one)
                last = max(int(np.searchsorted(ends, starts[first] + _WINDOW, "right")), first + 1)
                lo = int(starts[first])
                handle.seek(lo * itemsize)
                window = np.fromfile(handle, dtype=dtype, count=int(ends[last - 1]) - lo)
                picked = window[_segments.ranges(starts[first:last] - lo, sizes[first:last])]
                if out.dtype != picked.dtype and not _exact_narrow(picked, out.dtype):
                    wider = _NARROWED[_NARROWED.index(out.dtype.type) + 1 :]
                    wide = np.empty(out.size, dtype=_narrowest(picked, wider))
                    wide[:written] = out[:written]
                    out = wide
                out[written : written + picked.size] = picked
                written += picked.size
                first = last
        return out


def _exact_narrow(values: np.ndarray, dtype: Any) -> bool:
    """Whether every value is exactly representable in ``dtype`` (NaN never is)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return bool(np.array_equal(values.astype(dtype), values))


def _narrowest(values: np.ndarray, dtypes: tuple[Any, ...]) -> Any:
    """Return the first of ``dtypes`` that holds every value exactly (else the last one)."""
    return next((d for d in dtypes[:-1] if _exact_narrow(values, d)), dtypes[-1])


@contextlib.contextmanager
def feature_spill(folder: str | Path | None = None) -> Iterator[FeatureSpill]:
    """Open a `FeatureSpill` in a temporary folder; delete it afterwards.

    Parameters
    ----------
    folder : str or Path, optional
        Where the temporary folder goes (default: the system's, ``TMPDIR``).

    Yields
    ------
    FeatureSpill

    Examples
    --------
    >>> from gpusimhash.search.verify import featurize
    >>> with feature_spill() as spill:
    ...     spill.append(DocumentFeatures.from_batch(featurize(["a b", "c"])))
    ...     spill.append(DocumentFeatures.from_batch(featurize(["c c", ""])))
    ...     spill.gather([1, 2]).sizes.tolist(), spill.n_docs
    ([1, 1], 4)
    """
    with tempfile.TemporaryDirectory(prefix="gpusimhash-features-", dir=folder) as directory:
        spill = FeatureSpill(Path(directory))
        try:
            yield spill
        finally:
            spill.close()


def check_budget(
    codes: np.ndarray,
    radius: int,
    *,
    force: bool = False,
    budget: int = MAX_CANDIDATE_PAIRS,
    seed: int = 0,
) -> float:
    """Estimate the pairs of distinct codes within the radius; refuse over budget.

    Parameters
    ----------
    codes : ndarray, shape (n, bits // 8), dtype uint8
        The codes that go into the join.
    radius : int
        Hamming radius.
    force : bool
        Proceed over budget.
    budget : int
        Most pairs allowed without `force`.
    seed : int
        Seed of the sample.

    Returns
    -------
    float
        The estimate.

    Raises
    ------
    ValueError
        Over budget without `force`: one line naming the estimate, the radius and the ways out.
    MemoryError
        The estimated pairs' adjacency cannot fit in the memory available (even with `force`).

    Examples
    --------
    >>> import numpy as np
    >>> codes = np.random.default_rng(0).integers(0, 256, (3000, 8), dtype=np.uint8)
    >>> check_budget(codes, 8)
    0.0
    >>> check_budget(codes, 64, budget=1000)
    Traceback (most recent call last):
    ...
    ValueError: about 4,498,500 candidate pairs at Hamming radius 64 of 64 bits, over the budget of 1,000: raise the threshold, lower the candidate recall or pass --force (force=True)
    """
    distinct = distinct_codes(codes)
    estimate = estimate_pair_count(distinct, radius, seed=seed)
    where = f"about {estimate:,.0f} candidate pairs at Hamming radius {radius} of {codes.shape[1] * 8} bits"
    if estimate > budget and not force:
        raise ValueError(
            f"{where}, over the budget of {budget:,}: raise the threshold, "
            "lower the candidate recall or pass --force (force=True)"
        )
    # the adjacency: 8 bytes per pair, 16 per distinct code (row start, degree while built)
    check_memory(8 * estimate + 16 * distinct.shape[0], f"{where} need")
    return estimate


def check_memory(nbytes: float, what: str) -> None:
    """Refuse, before allocating, what the system's available memory cannot hold.

    Parameters
    ----------
    nbytes : float
        Bytes about to be allocated.
    what : str
        What needs them, for the message (``"... need"``).

    Raises
    ------
    MemoryRefusal
        A `MemoryError` with a message naming `what`, over
        `gpusimhash.search.budget.available_memory` (no check where that is unknown).

    Examples
    --------
    >>> check_memory(1000, "a small array needs")
    """
    available = available_memory()
    if available is not None and nbytes > available:
        raise MemoryRefusal(
            f"{what} about {nbytes / 1e6:,.0f} MB, more than the {available / 1e6:,.0f} MB of "
            "memory available"
        )


def join_with_features(
    codes: np.ndarray,
    has_features: np.ndarray,
    join: Callable[[np.ndarray], CodeGraph],
    *,
    empty_as_duplicates: bool = False,
) -> CodeGraph:
    """Join the codes of the documents with features; featureless ones are codes apart.

    Parameters
    ----------
    codes : ndarray, shape (n, bits // 8), dtype uint8
        Every document's code.
    has_features : ndarray, shape (n,), dtype bool
        Which documents have features.
    join : callable
        ``join(codes)`` returns the `CodeGraph` of some codes.
    empty_as_duplicates : bool
        Give every featureless document one shared code (they are then candidates of each
        other); otherwise each gets a code of its own.

    Returns
    -------
    CodeGraph
        Over all ``n`` documents; the featureless documents' codes have no neighbours.

    Examples
    --------
    >>> import numpy as np
    >>> from gpusimhash.search.exact import near_duplicate_graph
    >>> codes = np.zeros((4, 1), np.uint8)
    >>> has = np.array([True, False, True, False])
    >>> join = lambda c: near_duplicate_graph(c, max_distance=0)
    >>> join_with_features(codes, has, join).inverse.tolist()
    [0, 1, 0, 2]
    >>> join_with_features(codes, has, join, empty_as_duplicates=True).inverse.tolist()
    [0, 1, 0, 1]
    """
    rows = np.flatnonzero(has_features)
    inner = join(codes[rows])
    inverse = np.empty(has_features.size, dtype=index_dtype(has_features.size))
    inverse[rows] = inner.inverse
    empty = np.flatnonzero(~has_features)
    if empty_as_duplicates:
        inverse[empty] = inner.n_unique
        extra = min(empty.size, 1)
    else:
        inverse[empty] = inner.n_unique + np.arange(empty.size)
        extra = empty.size
    offsets = np.concatenate([inner.offsets, np.full(extra, inner.offsets[-1], np.int64)])
    return CodeGraph(inverse, offsets, inner.neighbours, inner.max_distance)


@dataclass(frozen=True)
class Clustering:
    """Clusters, the document kept for each document, and the exact similarity to it.

    Attributes
    ----------
    labels : ndarray, shape (n,), dtype int64
        Cluster of each document, numbered in order of each cluster's smallest member.
    kept_for : ndarray, shape (n,), dtype int64
        The document kept for each document (itself when kept).
    similarity : ndarray, shape (n,), dtype float64
        Exact similarity of each document to its kept one (1.0 for a kept document; NaN where
        undefined: a featureless document kept for another only with ``empty_as_duplicates``).
    below_threshold : int
        Removed documents whose similarity to their kept one is below the threshold (or
        undefined).
    unit : ndarray, shape (n,), dtype int64
        The unit of each document: documents with one code and identical features (verified),
        or one code (not verified).
    pairs_verified : int
        Pairs of units compared on their features while clustering.
    """

    labels: np.ndarray
    kept_for: np.ndarray
    similarity: np.ndarray
    below_threshold: int
    unit: np.ndarray
    pairs_verified: int

    @property
    def keep(self) -> np.ndarray:
        """True for the kept documents."""
        return np.asarray(self.kept_for == np.arange(self.kept_for.size))

    def kept_pairs(self, max_distance: int) -> DuplicateGroups:
        """Each removed document with its kept one, as pairs of distinct units.

        Parameters
        ----------
        max_distance : int
            The join's radius (recorded in the result).

        Returns
        -------
        DuplicateGroups
            ``inverse`` is `unit`; the pairs join the units of a removed document and of its
            kept one where they differ (documents of one unit pair up by sharing it).
        """
        removed = np.flatnonzero(~self.keep)
        a, b = self.unit[removed], self.unit[self.kept_for[removed]]
        differ = a != b
        pairs = np.unique(np.stack([np.minimum(a, b), np.maximum(a, b)], axis=1)[differ], axis=0)
        return DuplicateGroups(self.unit, pairs.reshape(-1, 2).astype(np.int64), max_distance)


def cluster_documents(
    graph: CodeGraph,
    gather: Callable[[np.ndarray], DocumentFeatures],
    limit: Threshold,
    *,
    method: str = "star",
    policy: str = "first",
    lengths: Any = None,
    scores: Any = None,
    empty_as_duplicates: bool = False,
) -> Clustering:
    """Cluster near-duplicates and measure each removed document against its kept one.

    With verification, the features of every candidate document are gathered once and
    candidate pairs are verified inside the clustering, only those the clustering needs
    (`gpusimhash.search.graph_clusters`): the result is that of verifying every candidate
    first. Without, the clusters come from the graph alone and only the removed documents and
    their kept ones are read, ``_MEASURED_READ`` pairs at a time. The per-document arrays are made
    one at a time, the features let go before the clusters are numbered.

    Parameters
    ----------
    graph : CodeGraph
        The join result (candidates).
    gather : callable
        ``gather(rows)`` returns the features of the ascending document indices ``rows``
        (`FeatureSpill.gather`, `DocumentFeatures.take`).
    limit : Threshold
        The threshold: verified against when ``limit.verify``, and the similarity to the kept
        document is checked against it.
    method : {"star", "components"}
        Star clusters (never chain) or connected components.
    policy : {"first", "longest", "score"}
        Which document is kept (see `gpusimhash.keep_one`).
    lengths, scores : array_like, optional
        For the policies that need them.
    empty_as_duplicates : bool
        Featureless documents paired with each other have similarity 1.0.

    Returns
    -------
    Clustering

    Raises
    ------
    ValueError
        An unknown method or policy.
    """
    if method not in CLUSTERINGS:
        raise ValueError(f"cluster method must be one of {', '.join(CLUSTERINGS)}, got {method!r}")
    n = graph.inverse.size
    rows = graph.candidate_documents() if limit.verify else np.zeros(0, np.int64)
    features = gather(rows)
    units = unit_graph(
        graph, features, rows, verify=limit.verify, empty_as_duplicates=empty_as_duplicates
    )
    measure = limit.measure if limit.verify else None
    if method == "star":
        best, unit_kept, _, verified = unit_stars(
            graph,
            units,
            features,
            measure=measure,
            value=limit.value,
            policy=policy,
            lengths=lengths,
            scores=scores,
        )
        kept_for = best[unit_kept[units.unit]]  # every removed document is measured below
        del best, unit_kept
        labels = None  # numbered once the features are let go
    else:
        labels, verified = graph_components(
            graph, units, features, measure=measure, value=limit.value
        )
        keep = keep_one(labels, policy=policy, lengths=lengths, scores=scores)
        kept_of_cluster = np.empty(int(labels.max()) + 1 if n else 0, dtype=np.int64)
        kept_of_cluster[labels[keep]] = np.flatnonzero(keep)
        kept_for = kept_of_cluster[labels]
    unit = units.unit
    del units  # the rest of the unit graph is not needed any more
    removed = np.flatnonzero(kept_for != np.arange(n, dtype=kept_for.dtype))
    similarity = np.ones(n)
    chunk = _MEASURED if limit.verify else _MEASURED_READ
    for lo in range(0, removed.size, chunk):
        part = removed[lo : lo + chunk]
        pairs = np.stack([part, kept_for[part]], axis=1)
        wanted = np.unique(pairs)  # just these documents, weights in float64
        some = features.take(np.searchsorted(rows, wanted)) if limit.verify else gather(wanted)
        measured = some.widened().similarities(
            np.searchsorted(wanted, pairs), empty_as_duplicates=empty_as_duplicates
        )
        similarity[part] = getattr(measured, limit.measure)
    del features  # before the clusters are numbered
    if labels is None:
        labels = first_seen_labels(kept_for)
    below = int(np.sum(~(similarity[removed] >= limit.value)))
    return Clustering(labels, kept_for, similarity, below, unit, verified)
