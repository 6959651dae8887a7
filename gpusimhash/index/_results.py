"""Search results: `SearchResult` (kNN), `RangeResult` (radius) and one query's `Hits`.

Both unpack as FAISS's results do: ``distances, ids, estimated_cosines = result`` and
``lims, distances, ids, estimated_cosines = result``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np


def _shown(values: np.ndarray) -> str:
    """Show a few values of an array, for a repr."""
    flat = values.ravel()
    head = ", ".join(repr(v.item() if isinstance(v, np.generic) else v) for v in flat[:3])
    return f"[{head}{', ...' if flat.size > 3 else ''}]"


class Hits(NamedTuple):
    """One query's results, nearest first.

    Attributes
    ----------
    ids : ndarray, shape (m,)
        User ids (int64, or objects for an index with string ids).
    distances : ndarray, shape (m,), dtype int32
        Hamming distances, ascending.
    estimated_cosines : ndarray, shape (m,), dtype float64
        ``cos(pi * distance / bits)``.
    """

    ids: np.ndarray
    distances: np.ndarray
    estimated_cosines: np.ndarray

    def __repr__(self) -> str:
        """Show the count and the first few ids and distances."""
        return (
            f"Hits(n={self.ids.size}, ids={_shown(self.ids)}, distances={_shown(self.distances)})"
        )


def _frame(query: np.ndarray, hits: Hits) -> Any:
    """One row per result: query, id, distance, estimated_cosine (pandas)."""
    try:
        import pandas as pd  # type: ignore[import-untyped]
    except ImportError:
        raise ImportError("to_pandas needs pandas: pip install pandas") from None
    return pd.DataFrame(
        {
            "query": query,
            "id": hits.ids,
            "distance": hits.distances,
            "estimated_cosine": hits.estimated_cosines,
        }
    )


class SearchResult(NamedTuple):
    """k nearest neighbours of each query; ``-1`` (ids and distances) marks no result.

    ``distances, ids, estimated_cosines = result`` unpacks it; ``result.query(q)`` gives one
    query's results without the padding, and ``result.to_pandas()`` one row per result.

    Attributes
    ----------
    distances : ndarray, shape (n_queries, k), dtype int32
        Hamming distances, ascending per row.
    ids : ndarray, shape (n_queries, k)
        User ids: int64 (``-1``: no result), or objects (``None``: no result) for an index with
        string ids.
    estimated_cosines : ndarray, shape (n_queries, k), dtype float64
        ``cos(pi * distance / bits)``; NaN where there is no result.

    Examples
    --------
    >>> from gpusimhash import SimHashIndex
    >>> index = SimHashIndex(bits=64)
    >>> _ = index.add(["a b c", "a b c d", "x y z"], ids=[7, 8, 9])
    >>> result = index.search(["a b c"], k=5)
    >>> result
    SearchResult(n_queries=1, k=5, first=[7, 8, 9])
    >>> result.query(0).ids.tolist()
    [7, 8, 9]
    >>> result.to_pandas()[["query", "id"]].values.tolist()
    [[0, 7], [0, 8], [0, 9]]
    """

    distances: np.ndarray
    ids: np.ndarray
    estimated_cosines: np.ndarray

    @property
    def n_queries(self) -> int:
        """Number of queries."""
        return int(self.distances.shape[0])

    def query(self, q: int) -> Hits:
        """Results of query ``q`` (padding dropped).

        Parameters
        ----------
        q : int
            Query number, negative counting from the end.

        Returns
        -------
        Hits

        Raises
        ------
        IndexError
            No such query.
        """
        found = self.distances[q] >= 0
        return Hits(self.ids[q][found], self.distances[q][found], self.estimated_cosines[q][found])

    def to_pandas(self) -> Any:
        """One row per result: ``query``, ``id``, ``distance``, ``estimated_cosine``.

        Returns
        -------
        pandas.DataFrame

        Raises
        ------
        ImportError
            pandas is not installed.
        """
        found = self.distances >= 0
        query = np.broadcast_to(np.arange(self.n_queries)[:, None], found.shape)[found]
        hits = Hits(self.ids[found], self.distances[found], self.estimated_cosines[found])
        return _frame(query, hits)

    def __repr__(self) -> str:
        """Show the shape and the first query's nearest ids."""
        first = _shown(self.query(0).ids) if self.n_queries else "[]"
        return (
            f"SearchResult(n_queries={self.n_queries}, k={self.distances.shape[1]}, first={first})"
        )


class RangeResult(NamedTuple):
    """Every stored code within a radius of each query, in FAISS's CSR layout.

    ``lims, distances, ids, estimated_cosines = result`` unpacks it; ``result.query(q)`` gives one
    query's results and ``result.to_pandas()`` one row per result.

    Attributes
    ----------
    lims : ndarray, shape (n_queries + 1,), dtype int64
        Results of query ``q`` are ``lims[q]:lims[q + 1]``.
    distances : ndarray, shape (lims[-1],), dtype int32
        Hamming distances, ascending within each query (ties in insertion order).
    ids : ndarray, shape (lims[-1],)
        User ids (int64, or objects for an index with string ids).
    estimated_cosines : ndarray, shape (lims[-1],), dtype float64
        ``cos(pi * distance / bits)``.

    Examples
    --------
    >>> from gpusimhash import SimHashIndex
    >>> index = SimHashIndex(bits=64)
    >>> _ = index.add(["a b c", "a b c", "x y z"], ids=["p", "q", "r"])
    >>> within = index.range_search(["a b c", "nothing alike"], max_distance=0)
    >>> within
    RangeResult(n_queries=2, results=2, first=['p', 'q'])
    >>> within.query(0).ids.tolist(), within.query(1).ids.tolist()
    (['p', 'q'], [])
    """

    lims: np.ndarray
    distances: np.ndarray
    ids: np.ndarray
    estimated_cosines: np.ndarray

    @property
    def n_queries(self) -> int:
        """Number of queries."""
        return int(self.lims.size - 1)

    def query(self, q: int) -> Hits:
        """Results of query ``q``.

        Parameters
        ----------
        q : int
            Query number, negative counting from the end.

        Returns
        -------
        Hits

        Raises
        ------
        IndexError
            No such query.
        """
        if not -self.n_queries <= q < self.n_queries:
            raise IndexError(f"query {q} out of range for {self.n_queries} queries")
        q %= self.n_queries
        a, b = int(self.lims[q]), int(self.lims[q + 1])
        return Hits(self.ids[a:b], self.distances[a:b], self.estimated_cosines[a:b])

    def to_pandas(self) -> Any:
        """One row per result: ``query``, ``id``, ``distance``, ``estimated_cosine``.

        Returns
        -------
        pandas.DataFrame

        Raises
        ------
        ImportError
            pandas is not installed.
        """
        query = np.repeat(np.arange(self.n_queries), np.diff(self.lims))
        return _frame(query, Hits(self.ids, self.distances, self.estimated_cosines))

    def __repr__(self) -> str:
        """Show the number of queries and results, and the first query's first ids."""
        first = _shown(self.query(0).ids) if self.n_queries else "[]"
        return (
            f"RangeResult(n_queries={self.n_queries}, results={self.distances.size}, first={first})"
        )
