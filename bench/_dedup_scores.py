"""Removal scores of a keep-first dedup against an exact truth graph (used by bench_peers.py).

The truth is a graph over *nodes*: each node is one group of documents with the same feature
set (so every two members of a group with two or more members are a true pair), and an edge is
a pair of distinct sets whose exact similarity reaches the threshold. Grouping identical sets
first keeps the graph small on corpora where one text repeats thousands of times; `doc_pairs`
expands it back to document pairs.

Definitions (a removed document is "correct" when the truth backs its removal):

- removed correctly: removed documents with a true pair to at least one kept document;
- removal precision: removed correctly / removed (1.0 when nothing is removed);
- perfect removals: what a keep-first dedup against the truth itself removes: documents in
  input order, each removed when a document kept before it is a true pair, else kept;
- removal recall: removed correctly / perfect removals (1.0 when the perfect dedup removes
  nothing). A tool that keeps other documents than the greedy pass can remove more documents
  correctly than it, so recall can exceed 1.
"""

from __future__ import annotations

import numpy as np


def group_identical(keys: list[bytes], empty: np.ndarray) -> np.ndarray:
    """Number documents' groups of equal keys by first occurrence; each empty one alone.

    Parameters
    ----------
    keys : list of bytes
        One key per document (its feature set, serialized).
    empty : ndarray of bool, shape (n,)
        Featureless documents: never a true pair, so each is a group of its own.

    Returns
    -------
    ndarray, shape (n,), dtype int64
        The group (node) of each document; groups are numbered in order of their first member.
    """
    seen: dict[bytes, int] = {}
    groups = np.empty(len(keys), dtype=np.int64)
    next_group = 0
    for doc, key in enumerate(keys):
        group = next_group if empty[doc] else seen.setdefault(key, next_group)
        next_group += group == next_group
        groups[doc] = group
    return groups


def keep_first_truth(n_nodes: int, pairs: np.ndarray) -> np.ndarray:
    """Keep-first dedup over the truth graph: a node is kept unless an earlier kept node is a pair.

    Only a group's first member can be kept (the others pair with it), and nodes are numbered
    by first member, so node order is document order.

    Parameters
    ----------
    n_nodes : int
        Number of nodes.
    pairs : ndarray, shape (m, 2), dtype int64
        Edges between distinct nodes, in any order.

    Returns
    -------
    ndarray of bool, shape (n_nodes,)
        Which nodes the greedy pass keeps.
    """
    pairs = np.sort(np.asarray(pairs, dtype=np.int64).reshape(-1, 2), axis=1)
    later, earlier = pairs[:, 1], pairs[:, 0]
    order = np.argsort(later, kind="stable")
    starts = np.searchsorted(later[order], np.arange(n_nodes + 1))
    earlier = earlier[order].tolist()
    kept = np.ones(n_nodes, dtype=bool)
    kept_list = kept.tolist()  # plain list: cheap scalar reads in the loop
    for node in range(n_nodes):
        for other in earlier[starts[node] : starts[node + 1]]:
            if kept_list[other]:
                kept_list[node] = False
                break
    kept[:] = kept_list
    return kept


def removal_scores(kept: np.ndarray, groups: np.ndarray, pairs: np.ndarray) -> dict[str, float]:
    """Score a tool's kept documents against the truth graph.

    Parameters
    ----------
    kept : ndarray of bool, shape (n,)
        The documents the tool kept.
    groups : ndarray of int, shape (n,)
        Each document's node (`group_identical`).
    pairs : ndarray, shape (m, 2), dtype int64
        Edges between distinct nodes.

    Returns
    -------
    dict
        ``removed``, ``removed_correctly``, ``perfect_removals``, ``removal_precision``,
        ``removal_recall``.

    Raises
    ------
    ValueError
        ``kept`` and ``groups`` of different lengths.
    """
    kept = np.asarray(kept, dtype=bool)
    groups = np.asarray(groups, dtype=np.int64)
    if kept.shape != groups.shape:
        raise ValueError(f"kept has {kept.size} documents, groups {groups.size}")
    n_nodes = int(groups.max()) + 1 if groups.size else 0
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    kept_per_node = np.bincount(groups[kept], minlength=n_nodes)
    # a node is backed when a kept document is a true pair of its removed members: a kept
    # member of its own group, or a kept member of a neighbouring node
    backed = kept_per_node > 0
    backed[pairs[kept_per_node[pairs[:, 1]] > 0, 0]] = True
    backed[pairs[kept_per_node[pairs[:, 0]] > 0, 1]] = True
    removed = ~kept
    correct = int(np.count_nonzero(removed & backed[groups]))
    perfect = groups.size - int(np.count_nonzero(keep_first_truth(n_nodes, pairs)))
    n_removed = int(np.count_nonzero(removed))
    return {
        "removed": n_removed,
        "removed_correctly": correct,
        "perfect_removals": perfect,
        "removal_precision": correct / n_removed if n_removed else 1.0,
        "removal_recall": correct / perfect if perfect else 1.0,
    }


def doc_pairs(groups: np.ndarray, pairs: np.ndarray, docs: np.ndarray) -> set[tuple[int, int]]:
    """Expand the truth graph to the true document pairs ``(u, v)``, ``u < v``, among ``docs``.

    Parameters
    ----------
    groups : ndarray of int, shape (n,)
        Each document's node.
    pairs : ndarray, shape (m, 2), dtype int64
        Edges between distinct nodes.
    docs : ndarray of int
        The documents to expand over (a subset, for cross-checks).

    Returns
    -------
    set of tuple of int
    """
    members: dict[int, list[int]] = {}
    for doc in np.sort(np.asarray(docs, dtype=np.int64)).tolist():
        members.setdefault(int(groups[doc]), []).append(doc)
    found: set[tuple[int, int]] = set()
    for group in members.values():
        found.update((u, v) for i, u in enumerate(group) for v in group[i + 1 :])
    for a, b in np.asarray(pairs, dtype=np.int64).reshape(-1, 2).tolist():
        for u in members.get(a, ()):
            found.update((min(u, v), max(u, v)) for v in members.get(b, ()))
    return found
