"""Connected components of the candidate graph by label propagation on the workers.

The nodes are distinct codes, named by their lowest row; the edges are the candidate pairs the
join tables found. No task ever holds the whole graph: the edges live in ``n`` shards, a node's
edges in the shard of its hash (`shard_of`), each edge once from each end. The labels come from
the large-star / small-star rounds of Kiveris et al. (2014, "Connected Components in MapReduce
and Beyond"), which need O(log^2 n) rounds and end with every component a star around its
smallest node:

- *large star* (`star_step`, ``large=True``): a node ``u`` links each larger neighbour to the
  smallest of ``u`` and its neighbours;
- *small star* (``large=False``): a node links itself and each smaller neighbour to the smallest
  of them.

Each edge a step emits goes to the shards of both its ends for the next step. The rounds stop
when neither step changed an edge (every node has at most one smaller neighbour, and a node with
a larger neighbour has none): each node's label is then its one smaller neighbour, or itself,
the smallest node of its component (`shard_labels`). The labels are the component's lowest
code name, so the same for any number of shards, partitions and workers.

Before the rounds, each join task's pairs are reduced to the stars of their own components
(`local_edges`): as many edges as nodes at most, however dense the task's pairs. When those
stars are few (`ONE_TASK_BYTES` in all), one task labels the whole graph at once instead
(`whole_stars`): the same stars around the same smallest nodes, with no rounds, whose
scheduling costs more than their work on such a graph.
"""

from __future__ import annotations

import numpy as np

from gpusimhash._unique import distinct_values
from gpusimhash.cluster import cluster_labels
from gpusimhash.distributed._routing import destination, split_by

__all__ = [
    "ONE_TASK_BYTES",
    "by_node",
    "by_shard",
    "local_edges",
    "shard_labels",
    "shard_of",
    "star_step",
    "whole_stars",
]

_SALT = 7  # the node shards' hash differs from the collapse's and the tables'
# star edges (16 bytes each, both ends) that one task labels at once rather than by rounds
ONE_TASK_BYTES = 64 << 20


def shard_of(nodes: np.ndarray, n_shards: int, salt: int = _SALT) -> np.ndarray:
    """Return the shard of each node (a hash of its name; another ``salt``, another spread).

    Examples
    --------
    >>> shard_of(np.array([3, 3, 8]), 1).tolist()
    [0, 0, 0]
    """
    return destination(nodes.astype(np.int64).view(np.uint64).reshape(-1, 1), n_shards, salt)


def by_shard(rows: np.ndarray, shard: np.ndarray, n_shards: int) -> list[np.ndarray]:
    """Split rows of an array by their shard, keeping their order within each.

    Examples
    --------
    >>> [p.tolist() for p in by_shard(np.array([5, 6, 7]), np.array([1, 0, 1]), 2)]
    [[6], [5, 7]]
    """
    return [piece for (piece,) in split_by(shard, n_shards, rows)]


def by_node(rows: np.ndarray, column: int, n_shards: int) -> list[np.ndarray]:
    """Split rows by the shard of the node in one column (a task).

    Examples
    --------
    >>> [p.tolist() for p in by_node(np.array([[1, 4], [2, 4]]), 1, 1)]
    [[[1, 4], [2, 4]]]
    """
    return by_shard(rows, shard_of(rows[:, column], n_shards), n_shards)


def _routed(a: np.ndarray, b: np.ndarray, n_shards: int) -> list[np.ndarray]:
    """Edges ``{a, b}`` as (owner, neighbour) rows, each sent to the shards of both ends."""
    directed = np.concatenate([np.stack([a, b], axis=1), np.stack([b, a], axis=1)])
    return by_shard(directed.astype(np.int64), shard_of(directed[:, 0], n_shards), n_shards)


def local_edges(pairs: np.ndarray, n_shards: int) -> list[np.ndarray]:
    """Replace some pairs by the stars of their components, routed to the shards (a task).

    Parameters
    ----------
    pairs : ndarray, shape (p, 2), dtype int64
        Edges between nodes (any names).
    n_shards : int
        Shards of the nodes.

    Returns
    -------
    list of ndarray, shape (k, 2), dtype int64
        For each shard, ``(owner, neighbour)`` of the star edges of its nodes: each node of a
        component linked to the component's smallest node, each edge from both ends.

    Examples
    --------
    >>> [p.tolist() for p in local_edges(np.array([[5, 9], [9, 2]]), 1)]
    [[[5, 2], [9, 2], [2, 5], [2, 9]]]
    """
    nodes = distinct_values(pairs)
    labels = cluster_labels(np.searchsorted(nodes, pairs).reshape(-1, 2), nodes.size)
    # the nodes are ascending: a component's first node is its smallest
    _, first = np.unique(labels, return_index=True)
    root = nodes[first][labels]
    leaf = nodes != root
    return _routed(nodes[leaf], root[leaf], n_shards)


def whole_stars(edges: list[list[np.ndarray]], n_shards: int) -> list[np.ndarray]:
    """Label the whole graph at once: every component a star, routed to the shards (a task).

    Parameters
    ----------
    edges : list of list of ndarray, shape (k, 2), dtype int64
        Every source's ``(owner, neighbour)`` rows for each shard (`local_edges`).
    n_shards : int
        Shards of the nodes.

    Returns
    -------
    list of ndarray
        For each shard, the ``(owner, neighbour)`` rows of its nodes' star edges, as the last
        round would leave them (`shard_labels` reads them).

    Examples
    --------
    >>> pieces = local_edges(np.array([[5, 9]]), 1) + local_edges(np.array([[9, 2]]), 1)
    >>> [p.tolist() for p in whole_stars([pieces], 1)]
    [[[5, 2], [9, 2], [2, 5], [2, 9]]]
    """
    pairs = np.concatenate(
        [np.zeros((0, 2), np.int64), *(piece for source in edges for piece in source)]
    )
    return local_edges(pairs, n_shards)


def _owned(pieces: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct (owner, neighbour) rows by owner then neighbour; where each owner starts."""
    edges = np.concatenate([np.zeros((0, 2), np.int64), *pieces])
    edges = edges[np.lexsort((edges[:, 1], edges[:, 0]))]
    fresh = np.ones(len(edges), dtype=bool)
    fresh[1:] = (edges[1:] != edges[:-1]).any(axis=1)
    edges = edges[fresh]
    owner, neighbour = edges[:, 0], edges[:, 1]
    first = np.ones(owner.size, dtype=bool)
    first[1:] = owner[1:] != owner[:-1]
    return owner, neighbour, first


def star_step(
    pieces: list[np.ndarray], n_shards: int, large: bool
) -> tuple[bool, list[np.ndarray]]:
    """One large-star or small-star step over one shard's nodes (a task).

    Parameters
    ----------
    pieces : list of ndarray, shape (k, 2), dtype int64
        ``(owner, neighbour)`` rows of this shard's nodes, from every shard (repeats allowed).
    n_shards : int
        Shards of the nodes.
    large : bool
        The large-star step (each larger neighbour linked to the smallest of the node and its
        neighbours), else the small-star step (the node and each smaller neighbour linked to the
        smallest of them).

    Returns
    -------
    changed : bool
        Whether the step replaced any edge of these nodes.
    pieces : list of ndarray
        For each shard, the ``(owner, neighbour)`` rows of the edges emitted here.

    Examples
    --------
    A path 1 - 2 - 3 (each edge from both ends): the large step links 3 to 1.

    >>> path = np.array([[1, 2], [2, 1], [2, 3], [3, 2]])
    >>> changed, [out] = star_step([path], 1, large=True)
    >>> changed, sorted(map(tuple, out.tolist()))
    (True, [(1, 2), (1, 3), (2, 1), (3, 1)])
    """
    owner, neighbour, first = _owned(pieces)
    segment = np.cumsum(first) - 1
    if large:
        # the neighbours are ascending within an owner: its first is its smallest
        smallest = np.minimum(owner[first], neighbour[first])[segment]
        mine = neighbour > owner
        changed = bool(np.any(mine & (smallest < owner)))
        return changed, _routed(neighbour[mine], smallest[mine], n_shards)
    mine = neighbour < owner
    owner, neighbour, segment = owner[mine], neighbour[mine], segment[mine]
    starts = np.flatnonzero(np.diff(segment, prepend=-1) > 0)
    smallest = np.repeat(neighbour[starts], np.diff(np.append(starts, owner.size)))
    changed = bool(np.any(np.diff(np.append(starts, owner.size)) > 1))
    linked = neighbour != smallest
    a = np.concatenate([neighbour[linked], owner[starts]])
    b = np.concatenate([smallest[linked], smallest[starts]])
    return changed, _routed(a, b, n_shards)


def shard_labels(pieces: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Each node's component once the steps changed nothing: stars (a task).

    Parameters
    ----------
    pieces : list of ndarray, shape (k, 2), dtype int64
        ``(owner, neighbour)`` rows of this shard's nodes, every component a star.

    Returns
    -------
    nodes : ndarray, dtype int64
        This shard's nodes, ascending.
    labels : ndarray, dtype int64
        The smallest node of each one's component.

    Examples
    --------
    >>> star = np.array([[1, 4], [1, 6], [4, 1], [6, 1]])
    >>> [a.tolist() for a in shard_labels([star])]
    [[1, 4, 6], [1, 1, 1]]
    """
    owner, neighbour, first = _owned(pieces)
    labels = np.minimum(owner[first], neighbour[first])
    return owner[first], labels
