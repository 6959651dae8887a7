"""The exhaustive join across workers: the distinct codes in pieces, one task per pair of pieces.

Where no index beats comparing every pair (large radii, few codes), the cluster runs the single
machine's brute force in tiles: every distinct code goes to one of ``k`` pieces by a hash of
the code (`tile_pieces`, then `gather_piece`), and the task of pieces ``(i, j)``, ``i <= j``,
compares every code of piece ``i`` with every code of piece ``j`` by FAISS's exhaustive range
search (`join_tile`; within one piece, each pair once). Each pair of distinct codes lies in
exactly one tile, so every pair within the radius is found exactly once, with no
deduplication, as the ``(a, b)`` lowest rows, ``a < b``, that the table tasks give
(`gpusimhash.distributed._tables.join_table`).
"""

from __future__ import annotations

import math

import faiss
import numpy as np

from gpusimhash.distributed._routing import destination, split_by
from gpusimhash.distributed._tables import Collapsed
from gpusimhash.join import _mih as mih

__all__ = ["gather_piece", "join_tile", "tile_count", "tile_pieces"]

_TASKS_PER_WORKER = 4  # tile tasks per worker at least (Dask balances the uneven ones)
# most pairs of codes one tile task compares: about 2.7 s of one core at 256 bits (the cost
# model's brute force), and its piece's FAISS index stays small
_TILE_PAIRS = 1 << 31
_MAX_PIECES = 512
_QUERIES = 4096  # codes per FAISS range search: bounds the memory of its result lists
_SALT = 0x7469  # pieces are not the collapse tasks' split of the codes
_BRUTE = mih.Plan("brute", (), 0.0)


def tile_count(n: int, workers: int) -> int:
    """Return the pieces of ``n`` distinct codes: enough tiles for the workers, none too big.

    Parameters
    ----------
    n : int
        Distinct codes.
    workers : int
        Workers of the cluster.

    Returns
    -------
    int
        ``k``, for ``k * (k + 1) / 2`` tile tasks: at least four per worker, and at most
        ``2**31`` pairs of codes in each (at most 512 pieces).

    Examples
    --------
    >>> tile_count(1000, 2), tile_count(200_000, 2), tile_count(10**7, 2)
    (4, 5, 216)
    """
    by_tasks = math.ceil((math.sqrt(8 * _TASKS_PER_WORKER * workers + 1) - 1) / 2)
    by_size = math.ceil(n / math.sqrt(_TILE_PAIRS))
    return int(min(_MAX_PIECES, max(1, by_tasks, by_size)))


def tile_pieces(collapsed: Collapsed, pieces: int) -> list[tuple[np.ndarray, ...]]:
    """Split a collapse task's distinct codes into the pieces of the tiles, by a hash of each.

    Parameters
    ----------
    collapsed : Collapsed
        The distinct codes of one collapse task.
    pieces : int
        Pieces, ``k`` (`tile_count`).

    Returns
    -------
    list of (rows, words)
        For each piece: the lowest row (int64) and words (uint64) of its codes.
    """
    piece_of = destination(collapsed.words, pieces, salt=_SALT)
    return split_by(piece_of, pieces, collapsed.rows, collapsed.words)


def gather_piece(parts: list[tuple[np.ndarray, np.ndarray]], n_words: int) -> Collapsed:
    """Put one piece together from every collapse task's part of it (a task).

    Parameters
    ----------
    parts : list of (rows, words)
        The piece's codes from each collapse task (`tile_pieces`).
    n_words : int
        uint64 words per code.

    Returns
    -------
    Collapsed
        The piece's codes (no members).
    """
    rows = np.concatenate([np.zeros(0, np.int64), *(p[0] for p in parts)])
    words = np.concatenate([np.zeros((0, n_words), np.uint64), *(p[1] for p in parts)])
    return Collapsed(rows, words, np.zeros((0, 2), np.int64))


def join_tile(
    left: Collapsed,
    right: Collapsed | None,
    bits: int,
    radius: int,
    alone: mih.Plan | None = None,
) -> np.ndarray:
    """Every pair of codes within a radius, one from each piece (or within one piece: a task).

    Parameters
    ----------
    left : Collapsed
        Piece ``i``.
    right : Collapsed, optional
        Piece ``j > i``; None for the tile ``(i, i)``, whose pairs are each compared once.
    bits, radius : int
        Code length and Hamming radius.
    alone : Plan, optional
        How the tile ``(i, i)`` is joined: the single machine's plan where one piece holds
        every code (the cluster's ``"one"`` join); default brute force.

    Returns
    -------
    ndarray, shape (p, 2), dtype int64
        ``(a, b)``, ``a < b``: the lowest rows of two distinct codes within the radius.

    Examples
    --------
    >>> import numpy as np
    >>> piece = Collapsed(np.array([4, 1]), np.array([[0b0], [0b11]], np.uint64), None)
    >>> other = Collapsed(np.array([2]), np.array([[0b1]], np.uint64), None)
    >>> join_tile(piece, None, 64, 2).tolist(), join_tile(piece, other, 64, 1).tolist()
    ([[1, 4]], [[2, 4], [1, 2]])
    """
    if right is None:
        chosen = _BRUTE if alone is None else alone
        found = list(mih.join_parts(left.words, bits, radius, chosen=chosen))
        b_rows = left.rows
    else:
        found = list(_cross_pairs(left.words, right.words, bits, radius))
        b_rows = right.rows
    pairs = np.concatenate([np.zeros((0, 2), np.int64), *found])
    a, b = left.rows[pairs[:, 0]], b_rows[pairs[:, 1]]
    return np.stack([np.minimum(a, b), np.maximum(a, b)], axis=1).astype(np.int64)


def _cross_pairs(left: np.ndarray, right: np.ndarray, bits: int, radius: int) -> list[np.ndarray]:
    """Every (index in left, index in right) within the radius, by FAISS's range search."""
    if not left.shape[0] or not right.shape[0]:
        return []
    width = bits // 8
    index = faiss.IndexBinaryFlat(bits)
    index.add(np.ascontiguousarray(np.ascontiguousarray(right).view(np.uint8)[:, :width]))
    queries = np.ascontiguousarray(np.ascontiguousarray(left).view(np.uint8)[:, :width])
    found = []
    for lo in range(0, queries.shape[0], _QUERIES):
        # strict bound: distances below radius + 1
        lims, _, labels = index.range_search(queries[lo : lo + _QUERIES], radius + 1)
        query = np.repeat(np.arange(lims.size - 1, dtype=np.int64), np.diff(lims.astype(np.int64)))
        found.append(np.stack([lo + query, labels.astype(np.int64)], axis=1))
    return found
