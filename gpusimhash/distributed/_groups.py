"""Clustering split by connected components of the candidate graph, run where the groups land.

Star clustering in keep-policy order (and connected components) only ever relate documents
joined by a chain of candidate pairs, so each connected component of the candidate graph of
distinct codes clusters alone, and the same way whatever else is clustered beside it. Once each
node shard knows its codes' components (`gpusimhash.distributed._components`), it names its
documents in components (`shard_documents`: the documents of a code of several, listed by the
collapse tasks, and the code itself otherwise) and labels its pairs (`shard_pairs`); the work
of each component (documents plus pairs) is summed in the shard of its label
(`component_work`). Components heavier than a share of the total are dealt one by one to the
lightest group (`heavy_components`, `deal_heavy`), the rest by a hash of their label
(`group_of`); each shard splits its documents and pairs by group (`route_groups`), a task per
group gathers them (`group_inputs`), each partition sends the features, lengths and scores of
its share (`gpusimhash.distributed._partitions.take_documents` of `rows_between`), and the
group's task runs the single-machine clustering,
`gpusimhash.cluster._documents.cluster_documents`, on them: the candidates are verified lazily
inside the star loop, and only (row, kept row, similarity) of the removed documents come back
(`cluster_group`). The driver sees only a few numbers per shard and the heavy components.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse
import scipy.sparse.csgraph

from gpusimhash._unique import distinct_values, value_positions
from gpusimhash.cluster._documents import cluster_documents
from gpusimhash.distributed._components import by_node, by_shard, shard_of
from gpusimhash.distributed._pairs import distinct
from gpusimhash.join._graph import CodeGraph, adjacency
from gpusimhash.verify import DocumentFeatures
from gpusimhash.verify._threshold import Threshold

__all__ = [
    "cluster_group",
    "component_work",
    "deal_heavy",
    "group_inputs",
    "group_of",
    "heavy_components",
    "route_groups",
    "rows_between",
    "shard_documents",
    "shard_pairs",
    "whole_group",
    "work_pieces",
]

HEAVY_PER_GROUP = 16  # components over 1 / (16 * groups) of the work are dealt one by one
_GROUP_SALT = 11


def _lookup(nodes: np.ndarray, labels: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Return the label of each code among ``nodes`` (ascending), the code itself where absent."""
    if not nodes.size:
        return codes.copy()
    at = np.minimum(np.searchsorted(nodes, codes), nodes.size - 1)
    found: np.ndarray = np.where(nodes[at] == codes, labels[at], codes)
    return found


def shard_documents(labels: tuple[np.ndarray, np.ndarray], members: list[np.ndarray]) -> np.ndarray:
    """Name a node shard's documents in components, with their component (a task).

    Parameters
    ----------
    labels : (ndarray, ndarray)
        The shard's codes in some pair, ascending, and their components
        (`gpusimhash.distributed._components.shard_labels`).
    members : list of ndarray, shape (k, 2), dtype int64
        ``(row, code)`` of every document of a code of two or more documents, for the shard's
        codes (a code of several documents in no pair is a component alone).

    Returns
    -------
    ndarray, shape (d, 3), dtype int64
        ``(row, code, component)`` of each document.

    Examples
    --------
    >>> labels = (np.array([2, 5]), np.array([2, 2]))
    >>> shard_documents(labels, [np.array([[5, 5], [8, 5], [9, 9], [11, 9]])]).tolist()
    [[5, 5, 2], [8, 5, 2], [9, 9, 9], [11, 9, 9], [2, 2, 2]]
    """
    nodes, node_labels = labels
    shared = np.concatenate([np.zeros((0, 2), np.int64), *members])
    alone = nodes[~np.isin(nodes, shared[:, 1])]
    documents = np.concatenate([shared, np.stack([alone, alone], axis=1)])
    component = _lookup(nodes, node_labels, documents[:, 1])
    return np.column_stack([documents, component]).astype(np.int64)


def shard_pairs(
    labels: tuple[np.ndarray, np.ndarray], pieces: list[np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """Label the pairs whose first code is in a node shard (a task).

    Returns
    -------
    pairs : ndarray, shape (p, 2), dtype int64
        The pairs.
    components : ndarray, dtype int64
        The component of each.

    Examples
    --------
    >>> labels = (np.array([2, 5]), np.array([2, 2]))
    >>> [a.tolist() for a in shard_pairs(labels, [np.array([[5, 7]]), np.array([[2, 5]])])]
    [[[5, 7], [2, 5]], [2, 2]]
    """
    nodes, node_labels = labels
    pairs = np.concatenate([np.zeros((0, 2), np.int64), *pieces])
    return pairs, _lookup(nodes, node_labels, pairs[:, 0])


def work_pieces(
    documents: np.ndarray, pairs: tuple[np.ndarray, np.ndarray], n_shards: int
) -> list[np.ndarray]:
    """Count a node shard's work per component, ``(component, work)``, routed to shards (a task).

    Examples
    --------
    >>> documents = np.array([[5, 5, 2], [8, 5, 2], [9, 9, 9]])
    >>> pairs = (np.zeros((1, 2), np.int64), np.array([2]))
    >>> [p.tolist() for p in work_pieces(documents, pairs, 1)]
    [[[2, 3], [9, 1]]]
    """
    components, work = np.unique(np.concatenate([documents[:, 2], pairs[1]]), return_counts=True)
    rows = np.stack([components, work], axis=1).astype(np.int64)
    return by_node(rows, 0, n_shards)


def component_work(pieces: list[np.ndarray]) -> np.ndarray:
    """Sum the work of each component (a task).

    Returns
    -------
    ndarray, shape (c, 2), dtype int64
        ``(component, work)``, ascending components.

    Examples
    --------
    >>> component_work([np.array([[9, 1], [2, 3]]), np.array([[2, 4]])]).tolist()
    [[2, 7], [9, 1]]
    """
    rows = np.concatenate([np.zeros((0, 2), np.int64), *pieces])
    components, inverse = np.unique(rows[:, 0], return_inverse=True)
    work = np.bincount(inverse, weights=rows[:, 1], minlength=components.size)
    return np.stack([components, work.astype(np.int64)], axis=1)


def group_of(
    components: np.ndarray, heavy: tuple[np.ndarray, np.ndarray], n_groups: int
) -> np.ndarray:
    """Return the group of each component: a heavy one's as dealt, else a hash of its label.

    Examples
    --------
    >>> heavy = (np.array([7]), np.array([1]))
    >>> group_of(np.array([7, 7]), heavy, 3).tolist()
    [1, 1]
    """
    hashed = shard_of(components, n_groups, salt=_GROUP_SALT)
    labels, groups = heavy
    if not labels.size:
        return hashed
    at = np.minimum(np.searchsorted(labels, components), labels.size - 1)
    grouped: np.ndarray = np.where(labels[at] == components, groups[at], hashed)
    return grouped


def heavy_components(
    work: np.ndarray, threshold: float, n_groups: int
) -> tuple[np.ndarray, np.ndarray]:
    """Find a shard's components of ``threshold`` work or more, and the rest's by group (a task).

    Returns
    -------
    heavy : ndarray, shape (h, 2), dtype int64
        ``(component, work)`` of the heavy components.
    light : ndarray, shape (n_groups,), dtype int64
        The work of the other components of each group (dealt by `group_of`).

    Examples
    --------
    >>> heavy, light = heavy_components(np.array([[2, 7], [9, 1]]), 5, 1)
    >>> heavy.tolist(), light.tolist()
    ([[2, 7]], [1])
    """
    big = work[:, 1] >= threshold
    light = work[~big]
    group = group_of(light[:, 0], (np.zeros(0, np.int64), np.zeros(0, np.int64)), n_groups)
    load = np.bincount(group, weights=light[:, 1], minlength=n_groups).astype(np.int64)
    return work[big], load


def deal_heavy(heavy: np.ndarray, light: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Deal the heavy components, heaviest first, each to the lightest group so far.

    Parameters
    ----------
    heavy : ndarray, shape (h, 2), dtype int64
        ``(component, work)`` of the heavy components.
    light : ndarray, dtype int64
        The other components' work in each group.

    Returns
    -------
    components : ndarray, dtype int64
        The heavy components, ascending.
    groups : ndarray, dtype int64
        The group of each.

    Examples
    --------
    >>> [a.tolist() for a in deal_heavy(np.array([[4, 10], [9, 30]]), np.array([5, 0]))]
    [[4, 9], [0, 1]]
    """
    order = np.lexsort((heavy[:, 0], -heavy[:, 1]))
    load = light.astype(np.int64).copy()
    groups = np.zeros(len(heavy), dtype=np.int64)
    for k in order.tolist():
        groups[k] = int(np.argmin(load))
        load[groups[k]] += heavy[k, 1]
    ascending = np.argsort(heavy[:, 0], kind="stable")
    return heavy[ascending, 0].astype(np.int64), groups[ascending]


def route_groups(
    documents: np.ndarray,
    pairs: tuple[np.ndarray, np.ndarray],
    heavy: tuple[np.ndarray, np.ndarray],
    n_groups: int,
    offsets: np.ndarray,
) -> tuple[list[np.ndarray], list[np.ndarray], np.ndarray]:
    """Split a node shard's documents and pairs by group (a task).

    Parameters
    ----------
    documents : ndarray, shape (d, 3), dtype int64
        ``(row, code, component)`` (`shard_documents`).
    pairs : (ndarray, ndarray)
        Pairs and their components (`shard_pairs`).
    heavy : (ndarray, ndarray)
        The heavy components and their groups (`deal_heavy`).
    n_groups : int
        Groups.
    offsets : ndarray, dtype int64
        Global row of each partition's first document, and the number of documents last.

    Returns
    -------
    documents : list of ndarray, shape (k, 2), dtype int64
        ``(row, code)`` of each group's documents.
    pairs : list of ndarray, shape (p, 2), dtype int64
        Each group's pairs.
    counts : ndarray, shape (n_groups, partitions), dtype int64
        Documents of each group in each partition.
    """
    group = group_of(documents[:, 2], heavy, n_groups)
    partition = np.searchsorted(offsets, documents[:, 0], side="right") - 1
    n_parts = offsets.size - 1
    counts = np.bincount(group * n_parts + partition, minlength=n_groups * n_parts)
    return (
        by_shard(documents[:, :2], group, n_groups),
        by_shard(pairs[0], group_of(pairs[1], heavy, n_groups), n_groups),
        counts.reshape(n_groups, n_parts).astype(np.int64),
    )


def group_inputs(
    documents: list[np.ndarray], pairs: list[np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """Gather one group's documents (ascending rows) and pairs from every shard (a task).

    Examples
    --------
    >>> documents, pairs = group_inputs([np.array([[9, 4]]), np.array([[4, 4]])], [])
    >>> documents.tolist(), pairs.shape
    ([[4, 4], [9, 4]], (0, 2))
    """
    rows = np.concatenate([np.zeros((0, 2), np.int64), *documents])
    return rows[np.argsort(rows[:, 0])], np.concatenate([np.zeros((0, 2), np.int64), *pairs])


def whole_group(
    candidates: list[np.ndarray],
    members: list[np.ndarray],
    featureless: np.ndarray,
    repeated: bool = False,
) -> tuple[np.ndarray, np.ndarray, int]:
    """Gather the whole candidate graph as one group, with its number of components (a task).

    Where the graph is small, one task clusters all of it: the components would only have
    split the work between tasks, and each clusters alone, the same way beside any others.

    Parameters
    ----------
    candidates : list of ndarray, shape (p, 2), dtype int64
        The join tasks' pairs of distinct codes.
    members : list of ndarray, shape (k, 2), dtype int64
        ``(row, code)`` of every document of a code of two or more documents.
    featureless : ndarray, shape (f, 2), dtype int64
        ``(row, code)`` of the featureless documents that form a component of their own (none
        unless they count as duplicates of each other).
    repeated : bool, default False
        Whether two tasks may have found one pair (the feature join's shares, where a code has
        two representatives): the pairs are then kept once each. Otherwise each pair is in
        one task's pairs, once.

    Returns
    -------
    documents : ndarray, shape (d, 2), dtype int64
        ``(row, code)`` of every document in a pair's code or sharing its code, ascending rows.
    pairs : ndarray, shape (p, 2), dtype int64
        The pairs, each once.
    components : int
        Connected components of the codes.

    Examples
    --------
    >>> documents, pairs, components = whole_group(
    ...     [np.array([[2, 5]]), np.array([[5, 7]])],
    ...     [np.array([[5, 5], [8, 5], [9, 9], [11, 9]])],
    ...     np.zeros((0, 2), np.int64),
    ... )
    >>> documents.tolist(), components
    ([[2, 2], [5, 5], [7, 7], [8, 5], [9, 9], [11, 9]], 2)
    """
    pairs = np.concatenate([np.zeros((0, 2), np.int64), *candidates])
    if repeated:  # each share's pairs in order: merged
        pairs = distinct(pairs, sorted_runs=True)
    nodes = distinct_values(pairs)
    documents = np.concatenate([shard_documents((nodes, nodes), members)[:, :2], featureless])
    documents = documents[np.argsort(documents[:, 0], kind="stable")]
    codes = distinct_values(documents[:, 1])
    ends = value_positions(codes, pairs)
    graph = scipy.sparse.coo_matrix(
        (np.ones(len(pairs), dtype=np.int8), (ends[:, 0], ends[:, 1])),
        shape=(codes.size, codes.size),
    )
    components, _ = scipy.sparse.csgraph.connected_components(graph, directed=False)
    return documents, pairs, int(components)


def rows_between(inputs: tuple[np.ndarray, np.ndarray], lo: int, hi: int) -> np.ndarray:
    """Return a group's rows in ``[lo, hi)``: one partition's share (a task).

    Examples
    --------
    >>> rows_between((np.array([[4, 4], [9, 4]]), np.zeros((0, 2))), 5, 10).tolist()
    [9]
    """
    rows = inputs[0][:, 0]
    at: np.ndarray = rows[np.searchsorted(rows, lo) : np.searchsorted(rows, hi)]
    return at


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
        As `gpusimhash.cluster._documents.cluster_documents`.
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
    codes = distinct_values(documents[:, 1])
    inverse = value_positions(codes, documents[:, 1])
    offsets, neighbours = adjacency([value_positions(codes, pairs)], codes.size)
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
