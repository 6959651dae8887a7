"""Near-duplicate clusters: connected components, one document kept per cluster, a summary.

Clusters are the connected components of the near-duplicate graph (SciPy's
``connected_components``): documents linked by a chain of near-duplicate pairs share a cluster,
even where the two ends are farther apart than the radius. Cluster labels are numbered by
their smallest member, so the labelling is deterministic.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from gpusimhash._choices import POLICIES
from gpusimhash.search._join import DuplicateGroups
from gpusimhash.search.exact import near_duplicate_groups

__all__ = [
    "POLICIES",
    "ClusterSummary",
    "cluster_labels",
    "cluster_near_duplicates",
    "cluster_summary",
    "keep_one",
]


def cluster_labels(pairs, n: int) -> np.ndarray:
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
        raise ValueError(f"pairs must index documents in [0, {n}), got values up to {pairs.max()}")
    graph = sp.coo_matrix(
        (np.ones(len(pairs), dtype=np.int8), (pairs[:, 0], pairs[:, 1])), shape=(n, n)
    )
    _, labels = connected_components(graph, directed=False)
    return _renumber(labels)


def _renumber(labels: np.ndarray) -> np.ndarray:
    """Relabel clusters ``0, 1, ...`` in order of their smallest member."""
    if labels.size == 0:
        return labels.astype(np.int64)
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.empty(first.size, dtype=np.int64)
    rank[np.argsort(first)] = np.arange(first.size)
    return rank[inverse.reshape(-1)]


def cluster_near_duplicates(codes, *, max_distance=None, min_cosine=None) -> np.ndarray:
    """Cluster codes by near-duplicate links without materializing all pairs.

    Identical codes are one node of the graph, so a group of thousands of copies costs one node
    instead of millions of pairs.

    Parameters
    ----------
    codes : ndarray, shape (n, bits // 8), dtype uint8
        Packed fingerprints.
    max_distance : int, optional
        Hamming radius of a link.
    min_cosine : float, optional
        Alternatively, the minimum estimated cosine of a link. Give exactly one.

    Returns
    -------
    labels : ndarray, shape (n,), dtype int64
        As `cluster_labels` of ``near_duplicates(codes, ...)``.

    Raises
    ------
    TypeError, ValueError
        As `gpusimhash.near_duplicates`.

    Examples
    --------
    >>> import numpy as np
    >>> codes = np.array([[0b0000], [0b0001], [0b0011], [0b1111_0000]], dtype=np.uint8)
    >>> cluster_near_duplicates(codes, max_distance=1).tolist()
    [0, 0, 0, 1]
    """
    groups = near_duplicate_groups(codes, max_distance=max_distance, min_cosine=min_cosine)
    return group_labels(groups)


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


def keep_one(labels, *, policy: str = "first", lengths=None, scores=None) -> np.ndarray:
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
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {POLICIES}, got {policy!r}")
    if policy == "first":
        value = np.zeros(n)
    else:
        name, given = ("lengths", lengths) if policy == "longest" else ("scores", scores)
        if given is None:
            raise ValueError(f"policy {policy!r} needs {name}=")
        value = np.asarray(given, dtype=np.float64)
        if value.shape != (n,):
            raise ValueError(f"{name} must have shape ({n},), got {value.shape}")
        if np.isnan(value).any():
            raise ValueError(
                f"{name} must not contain NaN (document {int(np.isnan(value).argmax())})"
            )
    order = np.lexsort((np.arange(n), -value, labels))
    first_of_cluster = np.ones(n, dtype=bool)
    first_of_cluster[1:] = labels[order][1:] != labels[order][:-1]
    keep = np.zeros(n, dtype=bool)
    keep[order[first_of_cluster]] = True
    return keep


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

    def to_dict(self) -> dict:
        """JSON-safe form (sizes as string keys)."""
        data = asdict(self)
        data["size_counts"] = {str(k): v for k, v in self.size_counts.items()}
        return data


def cluster_summary(labels) -> ClusterSummary:
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
