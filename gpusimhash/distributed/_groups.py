"""Clustering split by connected components of the candidate graph, run where the groups land.

Star clustering in keep-policy order (and connected components) only ever relate documents
joined by a chain of candidate pairs, so each connected component of the candidate graph of
distinct codes clusters alone, and the same way whatever else is clustered beside it. The
driver labels the components from the pairs of distinct codes the tables found and the codes
shared by several documents (`components`), deals them to groups (`deal`) and, from the
documents of those shared codes the collapse tasks list, names each group's documents
(`group_documents`); each partition sends the features, lengths and scores of a group's
documents it holds (`gpusimhash.distributed._partitions.take_documents`); and a task per group
runs the
single-machine clustering, `gpusimhash.dedup.verification.cluster_documents`, on them: the
candidates are verified lazily inside the star loop, and only (row, kept row, similarity) of
the removed documents come back (`cluster_group`).
"""

from __future__ import annotations

import itertools

import numpy as np

from gpusimhash.dedup.verification import Threshold, cluster_documents
from gpusimhash.search.clusters import cluster_labels
from gpusimhash.search.graph import CodeGraph, adjacency
from gpusimhash.search.verify import DocumentFeatures

__all__ = ["cluster_group", "components", "deal", "group_documents"]

_HEAVY_PER_GROUP = 16  # the heaviest components dealt one by one (the rest fill the groups)


def components(pairs: np.ndarray, shared: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Label the connected components of the candidate graph of distinct codes.

    Parameters
    ----------
    pairs : ndarray, shape (p, 2), dtype int64
        Pairs of distinct codes (lowest rows) within the radius.
    shared : ndarray, dtype int64
        Codes of two or more documents (candidates of each other even without a pair).

    Returns
    -------
    nodes : ndarray, dtype int64
        The codes in some pair or shared, ascending.
    labels : ndarray, shape (nodes.size,), dtype int64
        The component of each, numbered in order of first appearance.

    Examples
    --------
    >>> nodes, labels = components(np.array([[4, 9], [2, 9]]), np.array([7]))
    >>> nodes.tolist(), labels.tolist()
    ([2, 4, 7, 9], [0, 0, 1, 0])
    """
    nodes = np.unique(np.concatenate([pairs.reshape(-1), shared]))
    return nodes, cluster_labels(np.searchsorted(nodes, pairs).reshape(-1, 2), nodes.size)


def deal(labels: np.ndarray, n_groups: int, pair_labels: np.ndarray | None = None) -> np.ndarray:
    """Deal components to groups of about equal work.

    A component's work is taken as its nodes plus its pairs (a dense component costs more
    than its size says). The heaviest components go one by one to the lightest group so far;
    the rest, heaviest first, raise the lighter groups to one level (a group over it, such as
    one holding a giant component, takes no more).

    Parameters
    ----------
    labels : ndarray, dtype int64
        Component of each node (`components`).
    n_groups : int
        Groups, ``>= 1``.
    pair_labels : ndarray, dtype int64, optional
        Component of each pair; without it, a component's work is its nodes.

    Returns
    -------
    ndarray, shape (labels.size,), dtype int64
        Group of each node: the nodes of a component share one.

    Examples
    --------
    >>> deal(np.array([0, 0, 1, 2, 0, 2]), 2).tolist()
    [0, 0, 1, 1, 0, 1]
    >>> deal(np.array([0, 0, 1, 2, 0, 2]), 2, pair_labels=np.array([2, 2, 2, 2])).tolist()
    [1, 1, 1, 0, 1, 0]
    """
    n_components = int(labels.max()) + 1 if labels.size else 0
    work = np.bincount(labels, minlength=n_components)
    if pair_labels is not None:
        work = work + np.bincount(pair_labels, minlength=n_components)
    order = np.argsort(-work, kind="stable")
    of = np.zeros(n_components, dtype=np.int64)
    load = np.zeros(n_groups, dtype=np.int64)
    heavy = order[: _HEAVY_PER_GROUP * n_groups]
    for component in heavy.tolist():
        lightest = int(np.argmin(load))
        of[component] = lightest
        load[lightest] += work[component]
    rest = order[heavy.size :]
    # the rest raise the lightest groups to one level (a group heavier already takes none);
    # group g takes the next components while their running sum stays in its share
    share = np.maximum(_level(load, int(work[rest].sum())) - load, 0)
    middle = np.cumsum(work[rest]) - work[rest] / 2
    of[rest] = np.minimum(np.searchsorted(np.cumsum(share), middle), n_groups - 1)
    group: np.ndarray = of[labels]
    return group


def _level(load: np.ndarray, extra: int) -> float:
    """Return the level to which ``extra`` raises the lightest groups of ``load`` (water filling).

    Examples
    --------
    >>> _level(np.array([10, 1, 3]), 6)
    5.0
    """
    ordered = np.sort(load).astype(np.float64)
    levels = (extra + np.cumsum(ordered)) / np.arange(1, ordered.size + 1)
    # the k lightest groups are raised while the level reaches the k-th of them
    k = int(np.flatnonzero(levels >= ordered)[-1])
    return float(levels[k])


def group_documents(
    nodes: np.ndarray, group: np.ndarray, members: np.ndarray, n_groups: int
) -> list[np.ndarray]:
    """Every document of the components, by group.

    A node is a code, named by the lowest row of its documents: a code of one document is that
    document; the documents of a code of several are in ``members``.

    Parameters
    ----------
    nodes, group : ndarray, dtype int64
        Every code in a component, ascending, and its group.
    members : ndarray, shape (k, 2), dtype int64
        ``(row, code)`` of every document of a code of two or more documents (each of those
        codes is a node).
    n_groups : int
        Groups.

    Returns
    -------
    list of ndarray, shape (k, 2), dtype int64
        For each group, ``(row, code)`` of its documents, ascending rows.

    Examples
    --------
    >>> nodes, group = np.array([0, 2, 5]), np.array([1, 0, 1])
    >>> members = np.array([[0, 0], [3, 0], [9, 0]])
    >>> [d.tolist() for d in group_documents(nodes, group, members, 2)]
    [[[2, 2]], [[0, 0], [3, 0], [5, 5], [9, 0]]]
    """
    alone = nodes[~np.isin(nodes, members[:, 1])]
    documents = np.concatenate([members, np.stack([alone, alone], axis=1)])
    of = group[np.searchsorted(nodes, documents[:, 1])]
    order = np.lexsort((documents[:, 0], of))
    bounds = np.searchsorted(of[order], np.arange(n_groups + 1))
    return [documents[order[lo:hi]] for lo, hi in itertools.pairwise(bounds)]


def cluster_group(
    documents: np.ndarray,
    pairs: np.ndarray,
    limit: Threshold,
    method: str,
    policy: str,
    empty_as_duplicates: bool,
    *taken: tuple[DocumentFeatures, np.ndarray, np.ndarray | None],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Cluster one group of components as the single machine does.

    Parameters
    ----------
    documents : ndarray, shape (k, 2), dtype int64
        ``(row, code)`` of the group's documents, ascending rows.
    pairs : ndarray, shape (p, 2), dtype int64
        The group's pairs of distinct codes.
    limit : Threshold
        The threshold and radius.
    method, policy, empty_as_duplicates
        As `gpusimhash.dedup.verification.cluster_documents`.
    *taken : (DocumentFeatures, lengths, scores)
        The documents' features, lengths and scores, from each partition in order.

    Returns
    -------
    removed, kept_for : ndarray, dtype int64
        Global rows of the removed documents (ascending) and of the document kept for each.
    similarity : ndarray, dtype float64
        Exact similarity of each removed document to its kept one.
    verified : int
        Pairs of units compared on their features.
    """
    rows = documents[:, 0]
    codes, inverse = np.unique(documents[:, 1], return_inverse=True)
    offsets, neighbours = adjacency([np.searchsorted(codes, pairs)], codes.size)
    graph = CodeGraph(inverse.astype(np.int64), offsets, neighbours, limit.radius)
    features = DocumentFeatures.concatenate([t[0] for t in taken])
    scores = [t[2] for t in taken if t[2] is not None]
    clustering = cluster_documents(
        graph,
        features.take,
        limit,
        method=method,
        policy=policy,
        lengths=np.concatenate([t[1] for t in taken]),
        scores=np.concatenate(scores) if scores else None,
        empty_as_duplicates=empty_as_duplicates,
    )
    removed = np.flatnonzero(~clustering.keep)
    kept_for = rows[clustering.kept_for[removed]]
    return rows[removed], kept_for, clustering.similarity[removed], clustering.pairs_verified
