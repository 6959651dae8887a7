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

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpusimhash._choices import CLUSTERINGS
from gpusimhash._unique import distinct_values
from gpusimhash.cluster._graph import graph_components, unit_graph, unit_stars
from gpusimhash.cluster._pairs import keep_one
from gpusimhash.join._graph import CodeGraph
from gpusimhash.join._groups import DuplicateGroups, first_seen_labels
from gpusimhash.verify._features import DocumentFeatures
from gpusimhash.verify._threshold import Threshold

# removed documents measured against their kept ones at a time: from the gathered features
# (a small copy each), or re-read from the spill (each read spans the file, so fewer chunks
# are faster, but each holds its documents' features: 2**18 pairs cost 74 bytes per document
# at 1M synthetic documents, 2**13 read the file 40 times)
_MEASURED = 1 << 13
_MEASURED_READ = 1 << 15


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
    (`gpusimhash.cluster._graph`): the result is that of verifying every candidate
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
        wanted = distinct_values(pairs)  # just these documents, weights in float64
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
