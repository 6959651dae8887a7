"""The near-duplicate graph of distinct codes as a compact adjacency, built without pair arrays.

A join's pairs of distinct codes become a symmetric CSR adjacency: 4 bytes per pair and
direction (int32 neighbours) plus 8 bytes per distinct code, instead of the 16 bytes per pair of
an int64 ``(p, 2)`` array and the sort that orders it. The pairs go in as the join produces them,
chunk by chunk, narrowed to int32 and spilled to a temporary file until they are counted, so
the join's peak is the adjacency (8 bytes per pair) and one chunk. Clustering
(`gpusimhash.cluster._graph`) walks this adjacency directly.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from gpusimhash import _validate
from gpusimhash._cpu._cluster_loops import fill_adjacency
from gpusimhash.join._groups import DuplicateGroups, index_dtype

# most distinct codes an int32 adjacency can index
_INT32_CODES = 2**31 - 1
# entries of the adjacency read at a time when counting document pairs
_CHUNK = 1 << 18


def adjacency(parts: Iterable[np.ndarray], n: int) -> tuple[np.ndarray, np.ndarray]:
    """Build the symmetric CSR adjacency of ``n`` nodes from chunks of pairs.

    Parameters
    ----------
    parts : iterable of ndarray, shape (k, 2), integer dtype
        Pairs ``(a, b)`` of different nodes in ``[0, n)``, each pair in exactly one chunk and
        once; consumed once. Each chunk is narrowed to int32 and spilled to a temporary file
        (``TMPDIR``) as it arrives, then read back chunk by chunk into the adjacency, so memory
        holds the adjacency and one chunk.
    n : int
        Number of nodes, below ``2**31``.

    Returns
    -------
    offsets : ndarray, shape (n + 1,), dtype int64
        Row starts.
    neighbours : ndarray, shape (2 * p,), dtype int32
        The neighbours of node ``v`` are ``neighbours[offsets[v] : offsets[v + 1]]``, in the
        order their pairs arrived.

    Raises
    ------
    ValueError
        Too many nodes for int32 indices.

    Examples
    --------
    >>> import numpy as np
    >>> offsets, neighbours = adjacency([np.array([[0, 2]]), np.array([[1, 2]])], 4)
    >>> offsets.tolist(), neighbours.tolist()
    ([0, 1, 2, 4, 4], [2, 2, 0, 1])
    """
    if n > _INT32_CODES:
        raise ValueError(f"at most {_INT32_CODES:,} distinct codes, got {n:,}")
    degree = np.zeros(n, dtype=np.int64)
    lengths = []
    with tempfile.TemporaryFile(prefix="gpusimhash-pairs-") as spill:
        for part in parts:
            pairs = np.ascontiguousarray(part, dtype=np.int32).reshape(-1, 2)
            degree += np.bincount(pairs.reshape(-1), minlength=n)
            pairs.tofile(spill)
            lengths.append(pairs.shape[0])
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(degree, out=offsets[1:])
        del degree
        neighbours = np.empty(int(offsets[-1]), dtype=np.int32)
        cursor = offsets[:-1].copy()
        spill.seek(0)
        for length in lengths:
            pairs = np.fromfile(spill, dtype=np.int32, count=2 * length).reshape(-1, 2)
            fill_adjacency(pairs, offsets, cursor, neighbours)
    return offsets, neighbours


@dataclass(frozen=True)
class CodeGraph:
    """Documents collapsed to distinct codes, and the distinct codes within the radius.

    Attributes
    ----------
    inverse : ndarray, shape (n,), dtype int64 (or int32)
        Distinct code of every document (``0 .. n_unique - 1``).
    offsets : ndarray, shape (n_unique + 1,), dtype int64
        Row starts of the adjacency.
    neighbours : ndarray, shape (2 * n_pairs,), dtype int32
        Distinct codes within the radius of each distinct code (both directions, no repeats).
    max_distance : int
        The Hamming radius.

    Examples
    --------
    >>> import numpy as np
    >>> from gpusimhash.join._exact import near_duplicate_graph
    >>> codes = np.array([[1], [1], [3], [200]], dtype=np.uint8)
    >>> graph = near_duplicate_graph(codes, max_distance=1)
    >>> graph.n_unique, graph.n_pairs, graph.document_pairs()
    (3, 1, 3)
    """

    inverse: np.ndarray
    offsets: np.ndarray
    neighbours: np.ndarray
    max_distance: int

    def __post_init__(self) -> None:
        """Check that the adjacency and the inverse index name the same distinct codes.

        Raises
        ------
        TypeError, ValueError
            Arrays of other kinds, offsets that do not run from 0 to the neighbours without
            decreasing, or a code outside ``[0, n_unique)``.
        """
        offsets, n_neighbours = self.offsets, getattr(self.neighbours, "size", 0)
        _validate.indices(offsets, n_neighbours + 1, "CodeGraph: offsets")
        if offsets.ndim != 1 or offsets.size < 1 or offsets[0] != 0:
            raise ValueError("CodeGraph: offsets must be one-dimensional and start at 0")
        if offsets[-1] != n_neighbours or np.any(offsets[1:] < offsets[:-1]):
            raise ValueError(
                f"CodeGraph: offsets must run to the {n_neighbours:,} neighbours without decreasing"
            )
        _validate.indices(self.neighbours, self.n_unique, "CodeGraph: neighbours")
        _validate.indices(self.inverse, self.n_unique, "CodeGraph: inverse")

    @classmethod
    def from_groups(cls, groups: DuplicateGroups) -> CodeGraph:
        """Build the graph of a collapsed join result (`gpusimhash.near_duplicate_groups`).

        Parameters
        ----------
        groups : DuplicateGroups
            Pairs of distinct codes, each once.

        Returns
        -------
        CodeGraph
        """
        offsets, neighbours = adjacency([groups.unique_pairs], groups.n_unique)
        return cls(groups.inverse, offsets, neighbours, groups.max_distance)

    @property
    def n_unique(self) -> int:
        """Number of distinct codes."""
        return int(self.offsets.size - 1)

    @property
    def n_pairs(self) -> int:
        """Pairs of distinct codes within the radius."""
        return int(self.neighbours.size // 2)

    @property
    def nbytes(self) -> int:
        """Bytes of the adjacency (the inverse not counted)."""
        return int(self.offsets.nbytes + self.neighbours.nbytes)

    def code_sizes(self) -> np.ndarray:
        """Documents of each distinct code, shape (n_unique,), int64."""
        return np.bincount(self.inverse, minlength=self.n_unique)

    def document_pairs(self) -> int:
        """Count the document pairs within the radius (identical codes included), unexpanded."""
        sizes = self.code_sizes()
        total = int((sizes * (sizes - 1) // 2).sum())
        cross = 0
        for lo in range(0, self.neighbours.size, _CHUNK):
            hi = min(lo + _CHUNK, self.neighbours.size)
            owner = np.searchsorted(self.offsets, np.arange(lo, hi), side="right") - 1
            cross += int((sizes[owner] * sizes[self.neighbours[lo:hi]]).sum())
        return total + cross // 2

    def candidate_documents(self) -> np.ndarray:
        """Documents in some candidate pair: their code is shared or has a neighbour.

        Returns
        -------
        rows : ndarray, dtype int64
            Ascending document indices.
        """
        paired = (self.code_sizes() > 1) | (np.diff(self.offsets) > 0)
        return np.flatnonzero(paired[self.inverse]).astype(np.int64)

    def to_groups(self, *, limit: int | None = None, seed: int = 0) -> DuplicateGroups:
        """Return the graph as a `DuplicateGroups` (pairs ``a < b``, sorted), or a sample of it.

        Parameters
        ----------
        limit : int, optional
            Keep at most this many pairs of distinct codes, drawn at random (all by default).
        seed : int
            Seed of the draw.

        Returns
        -------
        DuplicateGroups
        """
        owners = np.repeat(np.arange(self.n_unique, dtype=np.int32), np.diff(self.offsets))
        upper = np.flatnonzero(owners < self.neighbours)
        if limit is not None and upper.size > limit:
            upper = np.sort(np.random.default_rng(seed).choice(upper, limit, replace=False))
        pairs = np.stack([owners[upper], self.neighbours[upper]], axis=1).astype(np.int64)
        order = np.lexsort((pairs[:, 1], pairs[:, 0]))
        return DuplicateGroups(self.inverse, pairs[order], self.max_distance)


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
    >>> from gpusimhash.join._exact import near_duplicate_graph
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
