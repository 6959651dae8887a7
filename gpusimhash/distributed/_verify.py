"""Exact similarities of document pairs, computed where the documents' features live.

The pairs go to the partition of their first document (by its global row); that partition's
worker compares them on its own features and on the features of only the other partitions'
documents the pairs name, fetched as `DocumentFeatures` of those rows (12 bytes per distinct
feature, 24 per document): texts never move.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from gpusimhash.distributed._partitions import Part, take_features
from gpusimhash.search.verify import DocumentFeatures

__all__ = ["pair_similarities", "route_pairs"]


def route_pairs(pairs: np.ndarray, offsets: np.ndarray) -> list[np.ndarray]:
    """Split pairs of global rows by the partition of their first row."""
    part = np.searchsorted(offsets, pairs[:, 0], side="right") - 1
    order = np.argsort(part, kind="stable")
    bounds = np.searchsorted(part[order], np.arange(offsets.size))
    return [pairs[order[lo:hi]] for lo, hi in itertools.pairwise(bounds)]


def _concatenate(*pieces: np.ndarray) -> np.ndarray:
    """Stack pieces of pairs."""
    return np.concatenate([np.zeros((0, 2), np.int64), *pieces])


def _foreign_rows(pairs: np.ndarray, offsets: np.ndarray, home: int) -> dict[int, np.ndarray]:
    """List the rows of other partitions that pairs routed to ``home`` need, by partition."""
    rows = np.unique(pairs.reshape(-1))
    part = np.searchsorted(offsets, rows, side="right") - 1
    return {int(q): rows[part == q] for q in np.unique(part).tolist() if q != home}


def _partitions_of(needed: dict[int, np.ndarray]) -> list[int]:
    return sorted(needed)


def _compare(
    pairs: np.ndarray,
    part: Part,
    offset: int,
    foreign: Sequence[tuple[np.ndarray, DocumentFeatures]],
    measure: str,
    threshold: float | None,
    empty_as_duplicates: bool,
) -> tuple[np.ndarray, np.ndarray]:
    """Compare pairs on their features; keep those reaching the threshold (all if None)."""
    local = np.unique(pairs.reshape(-1))
    local = local[(local >= offset) & (local < offset + part.n_docs)]
    rows = np.concatenate([local, *(r for r, _ in foreign)])
    features = DocumentFeatures.concatenate(
        [take_features(part, local, offset), *(f for _, f in foreign)]
    )
    order = np.argsort(rows, kind="stable")
    index = order[np.searchsorted(rows[order], pairs)]
    similarity = getattr(
        features.similarities(index.reshape(-1, 2), empty_as_duplicates=empty_as_duplicates),
        measure,
    )
    if threshold is None:
        return pairs, similarity
    keep = similarity >= threshold
    return pairs[keep], similarity[keep]


def pair_similarities(
    client: Any,
    parts: Sequence[Any],
    offsets: np.ndarray,
    routed: Sequence[Sequence[Any]],
    *,
    measure: str,
    threshold: float | None,
    empty_as_duplicates: bool = False,
    name: str,
) -> list[Any]:
    """Compare routed pairs where their features live.

    Parameters
    ----------
    client : dask.distributed.Client
        The cluster.
    parts : sequence of Future of Part
        The fingerprinted partitions.
    offsets : ndarray, shape (n_parts + 1,), dtype int64
        Global row of each partition's first document, and the total.
    routed : sequence of sequence of Future
        For each partition, the pieces (futures of int64 arrays of shape (m, 2)) of the pairs
        whose first row is in it.
    measure : {"cosine", "jaccard"}
        The similarity.
    threshold : float, optional
        Keep only the pairs that reach it.
    empty_as_duplicates : bool
        Two featureless documents have similarity 1.0.
    name : str
        Prefix of the task keys.

    Returns
    -------
    list of Future of (pairs, similarity)
        One per partition.
    """
    pairs = [
        client.submit(_concatenate, *pieces, key=f"{name}-pairs-{d}")
        for d, pieces in enumerate(routed)
    ]
    needed = [
        client.submit(_foreign_rows, p, offsets, d, key=f"{name}-needed-{d}")
        for d, p in enumerate(pairs)
    ]
    sources = client.gather(
        [client.submit(_partitions_of, n, key=f"{name}-sources-{d}") for d, n in enumerate(needed)]
    )
    results = []
    for d, (p, need, qs) in enumerate(zip(pairs, needed, sources, strict=True)):
        foreign = []
        for q in qs:
            rows = client.submit(_getitem, need, q, key=f"{name}-rows-{d}-{q}")
            foreign.append(
                client.submit(_take, parts[q], rows, int(offsets[q]), key=f"{name}-take-{d}-{q}")
            )
        results.append(
            client.submit(
                _compare_all,
                p,
                parts[d],
                int(offsets[d]),
                measure,
                threshold,
                empty_as_duplicates,
                *foreign,
                key=f"{name}-compare-{d}",
            )
        )
    return results


def _getitem(mapping: dict[int, np.ndarray], key: int) -> np.ndarray:
    return mapping[key]


def _take(part: Part, rows: np.ndarray, offset: int) -> tuple[np.ndarray, DocumentFeatures]:
    """Return the features of some rows of a partition, with the rows."""
    return rows, take_features(part, rows, offset)


def _compare_all(
    pairs: np.ndarray,
    part: Part,
    offset: int,
    measure: str,
    threshold: float | None,
    empty_as_duplicates: bool,
    *foreign: tuple[np.ndarray, DocumentFeatures],
) -> tuple[np.ndarray, np.ndarray]:
    return _compare(pairs, part, offset, foreign, measure, threshold, empty_as_duplicates)
