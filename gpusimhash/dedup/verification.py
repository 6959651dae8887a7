"""The verify and cluster stages of dedup, and what they need from the other stages.

* `plan_threshold` turns the options into a similarity threshold and a Hamming radius: with
  verification, the candidate radius of ``candidate_recall`` (or an explicit one) and an exact
  threshold; without, the radius of the estimated cosine (today's dedup).
* `feature_spill` keeps every document's merged features out of memory during the fingerprint
  pass (12 bytes per distinct feature and 24 per document, in a temporary folder; 8 bytes per
  document stay in memory), and reads back only those of the documents in candidate pairs.
* `check_budget` estimates the pairs the join will produce, from a sample of the distinct
  codes, and refuses a threshold over budget with a one-line message.
* `join_with_features` leaves featureless documents out of the join: each is a group of its own,
  or all of them one group with ``empty_as_duplicates``.
* `cluster_documents` makes star clusters (every removed document verified against the document
  kept for it) or connected components, and measures every removed document's exact similarity
  to its kept one, whatever the clustering, so a run can count those below the threshold.
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
from gpusimhash.search._join import DuplicateGroups, check_radius, cosine_radius
from gpusimhash.search.budget import MAX_CANDIDATE_PAIRS, distinct_codes, estimate_pair_count
from gpusimhash.search.clusters import (
    cluster_labels,
    group_labels,
    keep_one,
    star_clusters,
)
from gpusimhash.search.verify import (
    DEFAULT_CANDIDATE_RECALL,
    DEFAULT_MIN_COSINE,
    DocumentFeatures,
    VerifiedCandidates,
    candidate_radius,
    search_cosine,
    threshold,
)

__all__ = [
    "CLUSTERINGS",
    "Clustering",
    "FeatureSpill",
    "Threshold",
    "check_budget",
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
        self._sizes: list[np.ndarray] = []
        self._offsets: np.ndarray | None = None
        self._files = {name: open(directory / name, "wb") for name, _ in self._COLUMNS}  # noqa: SIM115

    def close(self) -> None:
        """Close the files."""
        for handle in self._files.values():
            handle.close()

    @property
    def n_docs(self) -> int:
        """Documents appended so far."""
        return sum(s.size for s in self._sizes)

    def append(self, features: DocumentFeatures) -> None:
        """Append the documents of a batch.

        Parameters
        ----------
        features : DocumentFeatures
            The batch's documents, next in order.
        """
        for name, dtype in self._COLUMNS:
            np.ascontiguousarray(getattr(features, name), dtype=dtype).tofile(self._files[name])
        self._sizes.append(features.sizes.astype(np.int64))
        self._offsets = None

    def gather(self, rows: Any) -> DocumentFeatures:
        """Read back some documents.

        Parameters
        ----------
        rows : array_like of int
            Document indices.

        Returns
        -------
        DocumentFeatures
            Document ``i`` is document ``rows[i]`` of those appended.
        """
        rows = np.asarray(rows, dtype=np.int64).reshape(-1)
        for handle in self._files.values():
            handle.flush()
        if self._offsets is None:
            sizes = np.concatenate(self._sizes) if self._sizes else np.zeros(0, np.int64)
            self._offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        column = {name: self._read(name, dtype) for name, dtype in self._COLUMNS}
        sizes = np.diff(self._offsets)[rows]
        entries = _segments.ranges(self._offsets[rows], sizes)
        offsets = np.zeros(rows.size + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        return DocumentFeatures(
            np.array(column["states"][entries]),
            offsets,
            np.array(column["weights"][entries]),
            np.array(column["exponents"][rows]),
            np.array(column["squared_norms"][rows]),
        )

    def _read(self, name: str, dtype: Any) -> np.ndarray:
        """Map a column file (an empty array for an empty file)."""
        path = self.directory / name
        if path.stat().st_size == 0:
            return np.zeros(0, dtype=dtype)
        return np.memmap(path, dtype=dtype, mode="r")


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
    estimate = estimate_pair_count(distinct_codes(codes), radius, seed=seed)
    if estimate > budget and not force:
        raise ValueError(
            f"about {estimate:,.0f} candidate pairs at Hamming radius {radius} of "
            f"{codes.shape[1] * 8} bits, over the budget of {budget:,}: raise the threshold, "
            "lower the candidate recall or pass --force (force=True)"
        )
    return estimate


def join_with_features(
    codes: np.ndarray,
    has_features: np.ndarray,
    join: Callable[[np.ndarray], DuplicateGroups],
    *,
    empty_as_duplicates: bool = False,
) -> DuplicateGroups:
    """Join the codes of the documents with features; featureless ones are groups apart.

    Parameters
    ----------
    codes : ndarray, shape (n, bits // 8), dtype uint8
        Every document's code.
    has_features : ndarray, shape (n,), dtype bool
        Which documents have features.
    join : callable
        ``join(codes)`` returns the `DuplicateGroups` of some codes.
    empty_as_duplicates : bool
        Put every featureless document in one group (they are then duplicates of each other);
        otherwise each is a group of its own.

    Returns
    -------
    DuplicateGroups
        Over all ``n`` documents.

    Examples
    --------
    >>> import numpy as np
    >>> from gpusimhash.search.exact import near_duplicate_groups
    >>> codes = np.zeros((4, 1), np.uint8)
    >>> has = np.array([True, False, True, False])
    >>> join = lambda c: near_duplicate_groups(c, max_distance=0)
    >>> join_with_features(codes, has, join).inverse.tolist()
    [0, 1, 0, 2]
    >>> join_with_features(codes, has, join, empty_as_duplicates=True).inverse.tolist()
    [0, 1, 0, 1]
    """
    rows = np.flatnonzero(has_features)
    inner = join(codes[rows])
    inverse = np.empty(has_features.size, dtype=np.int64)
    inverse[rows] = inner.inverse
    empty = np.flatnonzero(~has_features)
    if empty_as_duplicates:
        inverse[empty] = inner.n_unique
    else:
        inverse[empty] = inner.n_unique + np.arange(empty.size)
    return DuplicateGroups(inverse, inner.unique_pairs, inner.max_distance)


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
    """

    labels: np.ndarray
    kept_for: np.ndarray
    similarity: np.ndarray
    below_threshold: int

    @property
    def keep(self) -> np.ndarray:
        """True for the kept documents."""
        return np.asarray(self.kept_for == np.arange(self.kept_for.size))


def cluster_documents(
    groups: DuplicateGroups,
    found: VerifiedCandidates | None,
    features: DocumentFeatures,
    rows: np.ndarray,
    limit: Threshold,
    *,
    method: str = "star",
    policy: str = "first",
    lengths: Any = None,
    scores: Any = None,
    empty_as_duplicates: bool = False,
) -> Clustering:
    """Cluster near-duplicates and measure each removed document against its kept one.

    Parameters
    ----------
    groups : DuplicateGroups
        The join result (candidates).
    found : VerifiedCandidates or None
        The verified pairs, or None without verification (the candidates are the pairs).
    features : DocumentFeatures
        Features of the documents `rows` (every candidate document).
    rows : ndarray, dtype int64
        Ascending document indices of `features`.
    limit : Threshold
        The threshold the similarity to the kept document is checked against.
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
    n = groups.inverse.size
    if found is not None:
        units, pairs, pair_similarity = found.unit, found.pairs, found.similarity
    else:
        units, pairs = groups.inverse, groups.unique_pairs
        pair_similarity = np.full(len(pairs), np.nan)
    if method == "star":
        stars = star_clusters(
            pairs,
            pair_similarity,
            n,
            units=units,
            policy=policy,
            lengths=lengths,
            scores=scores,
        )
        labels, kept_for = stars.labels, stars.kept_for
    else:
        n_units = int(units.max()) + 1 if n else 0
        # units are numbered by their lowest document, so the components of units are too
        labels = cluster_labels(pairs, n_units)[units] if found else group_labels(groups)
        keep = keep_one(labels, policy=policy, lengths=lengths, scores=scores)
        kept_of_cluster = np.empty(int(labels.max()) + 1 if n else 0, dtype=np.int64)
        kept_of_cluster[labels[keep]] = np.flatnonzero(keep)
        kept_for = kept_of_cluster[labels]
    removed = np.flatnonzero(kept_for != np.arange(n))
    similarity = np.ones(n)
    local = np.searchsorted(rows, np.stack([removed, kept_for[removed]], axis=1))
    measured = features.similarities(local, empty_as_duplicates=empty_as_duplicates)
    similarity[removed] = getattr(measured, limit.measure)
    below = int(np.sum(~(similarity[removed] >= limit.value)))
    return Clustering(labels, kept_for, similarity, below)
