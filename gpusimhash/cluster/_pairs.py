"""Near-duplicate clusters: stars or connected components, one document kept per cluster.

Two clusterings of the near-duplicate graph, both deterministic, with cluster labels numbered by
their smallest member:

* `star_clusters` never chains: documents are visited in keep-policy order, and a document not
  yet assigned is kept and takes every unassigned document paired with it. Every removed
  document is paired with the document kept for it, so with verified pairs every removed
  document reaches the threshold against its kept one.
* `cluster_labels` gives connected components (SciPy's ``connected_components``): documents
  linked by a chain of pairs share a cluster, even where the two ends are far apart.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from gpusimhash._choices import POLICIES
from gpusimhash._cpu._verify_loops import star_assign
from gpusimhash._reprs import short_repr
from gpusimhash.join._groups import DuplicateGroups
from gpusimhash.join._groups import first_seen_labels as _renumber


def cluster_labels(pairs: Any, n: int) -> np.ndarray:
    """Label the connected components of the graph with `n` nodes and the given edges.

    Parameters
    ----------
    pairs : array_like of int, shape (m, 2)
        Edges ``(i, j)``, ``0 <= i, j < n`` (as returned by `gpusimhash.near_duplicates`).
    n : int
        Number of documents.

    Returns
    -------
    labels : ndarray, shape (n,), dtype int64
        Cluster of each document, numbered ``0, 1, ...`` in order of each cluster's smallest
        member; a document without pairs is a cluster of its own.

    Raises
    ------
    ValueError
        `pairs` not of shape (m, 2), or an index outside ``[0, n)``.
    TypeError
        Non-integer pairs.

    Examples
    --------
    >>> cluster_labels([[0, 2], [3, 4], [2, 5]], 6).tolist()
    [0, 1, 0, 2, 2, 0]
    """
    n = int(n)
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    pairs = np.asarray(pairs)
    if pairs.size == 0:
        pairs = pairs.reshape(0, 2).astype(np.int64)
    if pairs.dtype.kind not in "iu":
        raise TypeError(f"pairs must be integers, got dtype {pairs.dtype}")
    if pairs.ndim != 2 or pairs.shape[1] != 2:
        raise ValueError(f"pairs must have shape (m, 2), got {pairs.shape}")
    if pairs.size and (pairs.min() < 0 or pairs.max() >= n):
        bad = pairs.min() if pairs.min() < 0 else pairs.max()
        raise ValueError(f"pairs must index documents in [0, {n}), got {bad}")
    import scipy.sparse as sp  # imported where used: SciPy takes a while to import
    from scipy.sparse.csgraph import connected_components

    graph = sp.coo_matrix(
        (np.ones(len(pairs), dtype=np.int8), (pairs[:, 0], pairs[:, 1])), shape=(n, n)
    )
    _, labels = connected_components(graph, directed=False)
    return _renumber(labels)


def group_labels(groups: DuplicateGroups) -> np.ndarray:
    """Cluster the documents of a collapsed join result (exact or approximate).

    Parameters
    ----------
    groups : DuplicateGroups
        ``near_duplicate_groups`` or ``approximate_near_duplicate_groups`` output.

    Returns
    -------
    labels : ndarray, shape (n,), dtype int64
        Clusters numbered ``0, 1, ...`` in order of their first document.

    Examples
    --------
    >>> import numpy as np
    >>> from gpusimhash import near_duplicate_groups
    >>> codes = np.array([[7], [0], [7], [1]], dtype=np.uint8)
    >>> group_labels(near_duplicate_groups(codes, max_distance=1)).tolist()
    [0, 1, 0, 1]
    """
    unique_labels = cluster_labels(groups.unique_pairs, groups.n_unique)
    return _renumber(unique_labels[groups.inverse])


def keep_one(
    labels: Any, *, policy: str = "first", lengths: Any = None, scores: Any = None
) -> np.ndarray:
    """Choose one document per cluster.

    Parameters
    ----------
    labels : array_like of int, shape (n,)
        Cluster of each document (`cluster_labels`, `cluster_near_duplicates`).
    policy : {"first", "longest", "score"}
        Keep the lowest index, the largest ``lengths`` or the largest ``scores`` of each
        cluster; ties go to the lowest index.
    lengths : array_like of number, shape (n,), optional
        Document lengths, for ``"longest"``.
    scores : array_like of number, shape (n,), optional
        User scores, for ``"score"`` (NaN is not allowed).

    Returns
    -------
    keep : ndarray, shape (n,), dtype bool
        True for exactly one document of each cluster.

    Raises
    ------
    ValueError
        Unknown policy; missing, misshapen or NaN lengths/scores.
    TypeError
        Non-integer labels.

    Examples
    --------
    >>> keep_one([0, 0, 1, 0], policy="longest", lengths=[3, 9, 1, 9]).tolist()
    [False, True, True, False]
    """
    labels = np.asarray(labels)
    if labels.dtype.kind not in "iu" and labels.size:
        raise TypeError(f"labels must be integers, got dtype {labels.dtype}")
    labels = labels.astype(np.int64).reshape(-1)
    n = labels.size
    rank = np.empty(n, dtype=np.int64)
    rank[policy_order(n, policy=policy, lengths=lengths, scores=scores)] = np.arange(n)
    order = np.lexsort((rank, labels))
    first_of_cluster = np.ones(n, dtype=bool)
    first_of_cluster[1:] = labels[order][1:] != labels[order][:-1]
    keep = np.zeros(n, dtype=bool)
    keep[order[first_of_cluster]] = True
    return keep


def policy_order(
    n: int, *, policy: str = "first", lengths: Any = None, scores: Any = None
) -> np.ndarray:
    """Documents in keep-policy order: the document a policy prefers comes first.

    Parameters
    ----------
    n : int
        Number of documents.
    policy : {"first", "longest", "score"}
        Lowest index first; largest ``lengths`` first; largest ``scores`` first. Ties go to
        the lowest index.
    lengths, scores : array_like of number, shape (n,), optional
        For ``"longest"`` and ``"score"`` (NaN is not allowed).

    Returns
    -------
    order : ndarray, shape (n,), dtype int64
        A permutation of ``range(n)``.

    Raises
    ------
    ValueError
        Unknown policy; missing, misshapen or NaN lengths/scores.

    Examples
    --------
    >>> policy_order(4, policy="longest", lengths=[3, 9, 1, 9]).tolist()
    [1, 3, 0, 2]
    """
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {POLICIES}, got {policy!r}")
    if policy == "first":
        return np.arange(n, dtype=np.int64)
    name, given = ("lengths", lengths) if policy == "longest" else ("scores", scores)
    if given is None:
        raise ValueError(f"policy {policy!r} needs {name}=")
    value = np.asarray(given, dtype=np.float64)
    if value.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},), got {value.shape}")
    if np.isnan(value).any():
        raise ValueError(f"{name} must not contain NaN (document {int(np.isnan(value).argmax())})")
    return np.lexsort((np.arange(n), -value)).astype(np.int64)


@dataclass(frozen=True)
class StarClusters:
    """Clusters in which every member is paired with the document kept for it.

    Attributes
    ----------
    labels : ndarray, shape (n,), dtype int64
        Cluster of each document, numbered ``0, 1, ...`` in order of each cluster's smallest
        member (as `cluster_labels`).
    kept_for : ndarray, shape (n,), dtype int64
        The document kept for each document; a kept document is its own.
    similarity : ndarray, shape (n,), dtype float64
        Each document's similarity to the document kept for it (the value of the pair that
        joins them, 1.0 within a unit); 1.0 for a kept document.
    """

    labels: np.ndarray
    kept_for: np.ndarray
    similarity: np.ndarray

    __repr__ = short_repr

    @property
    def keep(self) -> np.ndarray:
        """True for the kept documents, shape (n,), bool."""
        return np.asarray(self.kept_for == np.arange(self.kept_for.size))


def star_clusters(
    pairs: Any,
    similarity: Any,
    n: int,
    *,
    units: Any = None,
    policy: str = "first",
    lengths: Any = None,
    scores: Any = None,
) -> StarClusters:
    """Cluster verified near-duplicate pairs without chaining: greedy stars in keep-policy order.

    Documents are visited in `policy_order`; a document not yet assigned is kept and takes
    every unassigned document it is paired with. So every removed document is paired with the
    document kept for it, no two kept documents are paired, and the result depends only on the
    set of pairs and the policy, never on their order, batching or threads. The document kept
    in each cluster is the one `keep_one` keeps with the same policy.

    Parameters
    ----------
    pairs : array_like of int, shape (m, 2)
        Pairs of different documents in ``[0, n)`` (of units, with `units`), any order.
    similarity : array_like of float, shape (m,)
        The similarity of each pair (a pair given twice must carry the same value).
    n : int
        Number of documents.
    units : array_like of int, shape (n,), optional
        A partition of the documents into units (``VerifiedCandidates.unit``): the documents
        of a unit are paired with each other (similarity 1.0) and share every pair of their
        unit. The result is that of the expanded document pairs, computed per unit.
    policy : {"first", "longest", "score"}
        Which document of a cluster is kept (as `keep_one`).
    lengths, scores : array_like of number, shape (n,), optional
        For ``"longest"`` and ``"score"``.

    Returns
    -------
    StarClusters

    Raises
    ------
    TypeError
        Non-integer pairs or units.
    ValueError
        Misshapen pairs, similarity or units, an index out of range, or a bad policy.

    Examples
    --------
    A chain 0 - 1 - 2 is two clusters, not one:

    >>> stars = star_clusters([[0, 1], [1, 2]], [0.95, 0.92], 3)
    >>> stars.labels.tolist(), stars.kept_for.tolist(), stars.similarity.tolist()
    ([0, 0, 1], [0, 0, 2], [1.0, 0.95, 1.0])
    """
    n = int(n)
    units = np.arange(n, dtype=np.int64) if units is None else np.asarray(units)
    if units.size and units.dtype.kind not in "iu":
        raise TypeError(f"units must be integers, got dtype {units.dtype}")
    if units.shape != (n,) or (units.size and units.min() < 0):
        raise ValueError(f"units must be {n} integers >= 0, got shape {units.shape}")
    units = units.astype(np.int64)
    n_units = int(units.max()) + 1 if n else 0
    cluster_labels(pairs, n_units)  # validates the pairs
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    similarity = np.asarray(similarity, dtype=np.float64)
    if similarity.shape != (pairs.shape[0],):
        raise ValueError(f"similarity must have shape ({pairs.shape[0]},), got {similarity.shape}")
    rank = np.empty(n, dtype=np.int64)
    rank[policy_order(n, policy=policy, lengths=lengths, scores=scores)] = np.arange(n)
    best, unit_order = star_order(units, n_units, rank)
    source = np.concatenate([pairs[:, 0], pairs[:, 1]])
    target = np.concatenate([pairs[:, 1], pairs[:, 0]])
    by_source = np.argsort(source, kind="stable")
    offsets = np.zeros(n_units + 1, dtype=np.int64)
    np.cumsum(np.bincount(source, minlength=n_units), out=offsets[1:])
    unit_kept, unit_similarity = star_assign(
        unit_order,
        offsets,
        target[by_source],
        np.concatenate([similarity, similarity])[by_source],
    )
    return star_documents(units, best, unit_kept, unit_similarity)


def star_order(units: np.ndarray, n_units: int, rank: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return each unit's preferred document (-1 for an empty unit) and the units in star order.

    Parameters
    ----------
    units : ndarray, shape (n,), dtype int64
        Unit of each document, in ``[0, n_units)``.
    n_units : int
        Number of units.
    rank : ndarray, shape (n,), dtype int64
        Each document's position in `policy_order`.

    Returns
    -------
    best : ndarray, shape (n_units,), dtype int64
        The unit's document of lowest rank: it speaks for its unit.
    order : ndarray, dtype int64
        The non-empty units by the rank of their preferred document.
    """
    n = units.size
    by_unit = np.lexsort((rank, units))
    first = np.ones(n, dtype=bool)
    first[1:] = units[by_unit][1:] != units[by_unit][:-1]
    best = np.full(n_units, -1, dtype=np.int64)
    best[units[by_unit][first]] = by_unit[first]
    present = np.flatnonzero(best >= 0)
    return best, present[np.argsort(rank[best[present]], kind="stable")]


def star_documents(
    units: np.ndarray, best: np.ndarray, unit_kept: np.ndarray, unit_similarity: np.ndarray
) -> StarClusters:
    """Turn stars of units into stars of documents (see `star_clusters`).

    Parameters
    ----------
    units : ndarray, shape (n,), dtype int64
        Unit of each document.
    best : ndarray, shape (n_units,), dtype int64
        Preferred document of each unit (`star_order`).
    unit_kept : ndarray, shape (n_units,), dtype int64
        Kept unit of each unit (itself when kept).
    unit_similarity : ndarray, shape (n_units,), dtype float64
        Each unit's similarity to its kept unit.

    Returns
    -------
    StarClusters
        A document of a kept unit has similarity 1.0 (to the unit's preferred document).
    """
    kept_unit = unit_kept[units]
    to_kept = unit_similarity[units]
    to_kept[kept_unit == units] = 1.0
    kept_for = best[kept_unit]
    del kept_unit  # each array of the document count made only once it is needed
    return StarClusters(_renumber(kept_for), kept_for, to_kept)


@dataclass(frozen=True)
class ClusterSummary:
    """Counts describing a clustering.

    Attributes
    ----------
    n_documents : int
        Documents clustered.
    n_clusters : int
        Clusters (a singleton counts as one).
    n_duplicate_clusters : int
        Clusters with at least two documents.
    duplicates_removed : int
        Documents dropped when one per cluster is kept: ``n_documents - n_clusters``.
    largest_cluster : int
        Size of the largest cluster (0 for no documents).
    size_counts : dict of int to int
        Number of clusters of each size.
    """

    n_documents: int
    n_clusters: int
    n_duplicate_clusters: int
    duplicates_removed: int
    largest_cluster: int
    size_counts: dict[int, int]

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form (sizes as string keys)."""
        data = asdict(self)
        data["size_counts"] = {str(k): v for k, v in self.size_counts.items()}
        return data


def cluster_summary(labels: Any) -> ClusterSummary:
    """Summarize cluster sizes and how many documents keeping one per cluster removes.

    Parameters
    ----------
    labels : array_like of int, shape (n,)
        Cluster of each document.

    Returns
    -------
    ClusterSummary

    Examples
    --------
    >>> s = cluster_summary([0, 0, 1, 0, 2, 2])
    >>> s.n_clusters, s.duplicates_removed, s.largest_cluster, s.size_counts
    (3, 3, 3, {1: 1, 2: 1, 3: 1})
    """
    labels = np.asarray(labels).reshape(-1)
    _, sizes = np.unique(labels, return_counts=True)
    size_values, size_counts = np.unique(sizes, return_counts=True)
    return ClusterSummary(
        n_documents=int(labels.size),
        n_clusters=int(sizes.size),
        n_duplicate_clusters=int((sizes >= 2).sum()),
        duplicates_removed=int(labels.size - sizes.size),
        largest_cluster=int(sizes.max()) if sizes.size else 0,
        size_counts={int(s): int(c) for s, c in zip(size_values, size_counts, strict=True)},
    )
